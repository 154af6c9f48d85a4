// Command randomclick simulates a user clicking through a web site, as a
// load test or an automated UI test would. People do not click at a fixed
// rate: their pauses spread around a mean, roughly in a normal
// distribution. So the Trigger's task clicks, then draws its own next
// delay and returns it. There is no fixed period to fight and no timer to
// reschedule by hand, and since the task never runs concurrently with
// itself, its random source and counters need no lock.
//
//	go run ./examples/randomclick
//	go run ./examples/randomclick -clicks 20 -mean 200ms -stddev 50ms -seed 7
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"time"

	"github.com/circulation-go/circulation"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "randomclick: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err = run(ctx, os.Stdout, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "randomclick: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	clicks int           // how many clicks, then the user leaves
	mean   time.Duration // the mean pause between clicks
	stddev time.Duration // the standard deviation of the pauses
	seed   uint64        // the random seed; 0 picks one
}

// maxStory bounds the expected length of the run: the demo ends by itself
// within seconds.
const maxStory = 8 * time.Second

// parseFlags parses the command line. It returns flag.ErrHelp, after
// printing the usage to stderr, if asked for help; any other error is for
// main to print in one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{clicks: 10, mean: 300 * time.Millisecond, stddev: 100 * time.Millisecond}
	fs := flag.NewFlagSet("randomclick", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&cfg.clicks, "clicks", cfg.clicks, "the number of clicks, `n` (at least 1)")
	fs.DurationVar(&cfg.mean, "mean", cfg.mean, "the mean pause between clicks, `d` (at least 10ms)")
	fs.DurationVar(&cfg.stddev, "stddev", cfg.stddev, "the standard deviation of the pauses, `d` (0 to -mean)")
	fs.Uint64Var(&cfg.seed, "seed", 0, "the random seed, `s`; 0 picks one and prints it")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
		}
		return cfg, err
	}
	switch {
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case cfg.clicks < 1:
		return cfg, fmt.Errorf("-clicks must be at least 1, got %d", cfg.clicks)
	case cfg.mean < 10*time.Millisecond:
		return cfg, fmt.Errorf("-mean must be at least 10ms, got %v", cfg.mean)
	case cfg.stddev < 0 || cfg.stddev > cfg.mean:
		return cfg, fmt.Errorf("-stddev must be between 0 and -mean (%v), got %v", cfg.mean, cfg.stddev)
	case float64(cfg.clicks-1)*float64(cfg.mean) > float64(maxStory):
		return cfg, fmt.Errorf("-clicks × -mean must be at most %v so that the demo ends soon, got %d × %v", maxStory, cfg.clicks, cfg.mean)
	}
	return cfg, nil
}

// report is what happened, for the summary and the tests.
type report struct {
	clicks []time.Duration // when each click happened, since the start
	pauses []time.Duration // the pause the task drew after each click but the last
}

var pages = []string{"home", "search", "results", "product", "reviews", "cart"}

// run lets the simulated user click cfg.clicks times, printing each click
// to w, and returns what happened.
func run(ctx context.Context, w io.Writer, cfg config) (*report, error) {
	seed := cfg.seed
	if seed == 0 {
		seed = 1 + rand.Uint64N(999_999) // short enough to type again
	}
	start := time.Now()
	u := &user{
		mean:   cfg.mean,
		stddev: cfg.stddev,
		rand:   rand.New(rand.NewPCG(seed, seed)),
		clicks: cfg.clicks,
		w:      w,
		start:  start,
		left:   make(chan struct{}),
	}
	fmt.Fprintf(w, "a user clicks %d times, pausing %v ± %v (normal distribution, seed %d)\n", cfg.clicks, cfg.mean, cfg.stddev, seed)
	clicker := circulation.Bind(nil, u.click)
	clicker.Fire()
	select {
	case <-u.left:
	case <-ctx.Done():
	}
	// Stop waits for a click in flight, so from here on nothing else
	// writes to w or to the report.
	if err := clicker.Stop(context.Background()); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		fmt.Fprintln(w, "interrupted")
	}
	r := &u.report
	if len(r.clicks) > 1 {
		mean, sd := meanStddev(r.pauses)
		fmt.Fprintf(w, "%d clicks in %v; pauses: mean %v, standard deviation %v\n",
			len(r.clicks), r.clicks[len(r.clicks)-1].Round(time.Millisecond), mean.Round(time.Millisecond), sd.Round(time.Millisecond))
	}
	return r, nil
}

// user is the simulated user. Its fields are used only by click, which
// the Trigger never runs concurrently with itself: they need no lock.
type user struct {
	mean, stddev time.Duration
	rand         *rand.Rand
	clicks       int // how many clicks, then leave
	w            io.Writer
	start        time.Time
	left         chan struct{} // closed after the last click
	report       report
}

// click is the Trigger's task: one click, then the pause until the next.
func (u *user) click(context.Context) (time.Duration, bool) {
	now := time.Since(u.start)
	u.report.clicks = append(u.report.clicks, now)
	k := len(u.report.clicks)
	page := pages[(k-1)%len(pages)]
	if k == u.clicks {
		fmt.Fprintf(u.w, "%6.3fs  click %d on %q; the user leaves\n", now.Seconds(), k, page)
		close(u.left)
		return 0, false // rest until the next Fire: there is none
	}
	pause := u.pause()
	u.report.pauses = append(u.report.pauses, pause)
	fmt.Fprintf(u.w, "%6.3fs  click %d on %q; next in %v\n", now.Seconds(), k, page, pause)
	return pause, true
}

// pause draws a pause from the normal distribution with the user's mean
// and standard deviation, rounded to the millisecond. Nobody clicks
// quicker than a fifth of their mean pause: a shorter draw is raised to it.
func (u *user) pause() time.Duration {
	d := float64(u.mean) + u.rand.NormFloat64()*float64(u.stddev)
	return max(time.Duration(d), u.mean/5).Round(time.Millisecond)
}

// meanStddev returns the mean and the standard deviation of ds.
func meanStddev(ds []time.Duration) (mean, stddev time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	var sum, sq float64
	for _, d := range ds {
		sum += float64(d)
	}
	m := sum / float64(len(ds))
	for _, d := range ds {
		sq += (float64(d) - m) * (float64(d) - m)
	}
	return time.Duration(m), time.Duration(math.Sqrt(sq / float64(len(ds))))
}

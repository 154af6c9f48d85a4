// Command supervisor watches a Supervisor keep a flaky dependency in
// check, as Eureka's TimedSupervisorTask does for a registry refresh.
//
// The dependency answers, fails, or hangs past the attempt's timeout.
// The program shows the Supervisor's rules at work:
//
//   - every failure or timeout doubles the delay before the next attempt,
//     up to Max, and a success brings it back to Base;
//   - an attempt that hangs past its timeout is abandoned (its context is
//     cancelled), but no other attempt starts while it still runs: the
//     attempts that fall due meanwhile are skipped, and back off further;
//   - Stats counts it all, in one consistent snapshot.
//
// Every duration is a multiple of Base, which -base sets:
//
//	go run ./examples/supervisor
//	go run ./examples/supervisor -base 50ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/circulation-go/circulation"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervisor: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err = run(ctx, os.Stdout, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervisor: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	base time.Duration // the Backoff's Base; every other duration is a multiple of it
}

const minBase, maxBase = 10 * time.Millisecond, 150 * time.Millisecond

// parseFlags parses the command line. It returns flag.ErrHelp, after
// printing the usage to stderr, if asked for help; any other error is for
// main to print in one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{base: 100 * time.Millisecond}
	fs := flag.NewFlagSet("supervisor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.DurationVar(&cfg.base, "base", cfg.base,
		fmt.Sprintf("the delay after a success, `d` (%v to %v); the story lasts about 45×d", minBase, maxBase))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.base < minBase || cfg.base > maxBase {
		return cfg, fmt.Errorf("-base must be between %v and %v, got %v", minBase, maxBase, cfg.base)
	}
	return cfg, nil
}

// What the dependency does on each attempt, in order.
type behaviour int

const (
	answers         behaviour = iota // returns nil after a moment
	fails                            // returns an error after a moment
	hangs                            // blocks until its context is done
	hangsRegardless                  // blocks for 15×base, ignoring its context
)

var script = []behaviour{answers, fails, fails, hangs, fails, answers, answers, hangsRegardless, answers, answers}

var errRefused = errors.New("connection refused")

// report is what happened, for the tests.
type report struct {
	attempts []attempt
	stats    circulation.Stats // at the end
}

type attempt struct {
	start time.Duration     // since the story began
	end   time.Duration     // when the task returned
	delay time.Duration     // the delay the Supervisor waited before it
	since circulation.Stats // Stats when it started
}

// run lets a Supervisor run the script's attempts, printing what happens
// to w, and returns what happened.
func run(ctx context.Context, w io.Writer, cfg config) (*report, error) {
	b := cfg.base
	policy := circulation.Backoff{
		Base:       b,
		Max:        8 * b,
		Multiplier: 2,
		Timeout:    2 * b,
		// No Jitter, so that the delays are exact. A fleet of clients
		// wants some (Jitter: 0.2) so that they do not retry in step.
	}
	d := &demo{policy: policy, log: &timeline{w: w, start: time.Now()}, done: make(chan struct{})}
	d.sup = circulation.Supervise(d.attempt, policy)
	d.log.printf("Backoff: Base %v, Max %v, Multiplier 2, Timeout %v, no jitter", policy.Base, policy.Max, policy.Timeout)
	d.sup.Fire()
	select {
	case <-d.done:
	case <-ctx.Done():
		d.log.printf("interrupted")
	}
	// Stop cancels the attempt in flight and waits for it, even for one
	// that was abandoned at its timeout.
	if err := d.sup.Stop(context.Background()); err != nil {
		return nil, err
	}
	st := d.sup.Stats()
	d.log.printf("stopped; Stats: %+v", st)
	return &report{attempts: d.attempts, stats: st}, nil
}

// demo holds the Supervisor and what its attempts record. The fields
// below sup are written only by attempts, which never overlap, and read by
// run after Stop: they need no lock.
type demo struct {
	policy   circulation.Backoff
	log      *timeline
	sup      *circulation.Supervisor
	done     chan struct{} // closed by the last attempt of the script
	attempts []attempt
}

// attempt is the Supervisor's task: one call of the flaky dependency.
func (d *demo) attempt(ctx context.Context) error {
	n := len(d.attempts) + 1
	if n > len(script) {
		return nil // the story is over; Stop is on its way
	}
	st := d.sup.Stats()
	a := attempt{start: time.Since(d.log.start), since: st}
	if n > 1 {
		a.delay = st.Delay
		d.log.printf("attempt %d starts after %v%s: %s", n, a.delay, d.mark(a.delay), d.why(n))
	} else {
		d.log.printf("attempt 1 starts")
	}
	d.attempts = append(d.attempts, a)
	defer func() { d.attempts[n-1].end = time.Since(d.log.start) }()
	if n == len(script) {
		defer close(d.done)
	}

	b := d.policy.Base
	switch script[n-1] {
	case answers:
		time.Sleep(b / 10)
		d.log.printf("attempt %d: ok", n)
		return nil
	case fails:
		time.Sleep(b / 10)
		d.log.printf("attempt %d: error: %v", n, errRefused)
		return errRefused
	case hangs:
		d.log.printf("attempt %d: hangs until its context is done", n)
		<-ctx.Done()
		d.log.printf("attempt %d: gives up: %v", n, ctx.Err())
		return ctx.Err()
	default: // hangsRegardless
		d.log.printf("attempt %d: hangs for %v, ignoring its context", n, 15*b)
		stop := context.AfterFunc(ctx, func() {
			d.log.printf("attempt %d: timed out (%v): abandoned, but still running, so no other attempt starts", n, ctx.Err())
		})
		defer stop()
		time.Sleep(15 * b)
		d.log.printf("attempt %d: returns, late: its result is ignored", n)
		return nil
	}
}

// mark names the delay if it is Base or Max.
func (d *demo) mark(delay time.Duration) string {
	switch delay {
	case d.policy.Base:
		return " (Base)"
	case d.policy.Max:
		return " (Max)"
	}
	return ""
}

// why says what happened since attempt n-1 started, from the Stats.
func (d *demo) why(n int) string {
	was, now := d.attempts[n-2].since, d.sup.Stats()
	var what []string
	switch {
	case now.Successes > was.Successes:
		what = append(what, fmt.Sprintf("attempt %d succeeded", n-1))
	case now.Errors > was.Errors:
		what = append(what, fmt.Sprintf("attempt %d failed", n-1))
	case now.Timeouts > was.Timeouts:
		what = append(what, fmt.Sprintf("attempt %d timed out", n-1))
	}
	if k := now.Skipped - was.Skipped; k > 0 {
		what = append(what, fmt.Sprintf("%d due attempts were skipped while it still ran, each doubling the delay", k))
	}
	return strings.Join(what, ", then ")
}

// timeline prints lines stamped with the time since it started.
type timeline struct {
	w     io.Writer
	start time.Time
	mu    sync.Mutex
}

func (l *timeline) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%6.3fs  %s\n", time.Since(l.start).Seconds(), fmt.Sprintf(format, args...))
}

// Command holidays runs a job on a schedule with days left out, in two
// acts:
//
//  1. Holidays. A payroll job runs at 09:00 in Berlin on weekdays
//     (cron.Parse), but not on public holidays nor during the company's
//     shutdown from Christmas Eve to New Year's Eve: schedule.Except with
//     the days of schedule.ParseDays, each a whole day in Berlin. It
//     prints the job's runs from 21 December 2026 to 8 January 2027, and
//     each weekday it passes over, with why.
//  2. A maintenance window. A job runs every -period; a Calendar of the
//     program's own leaves out three periods of it, from the fourth. The
//     job runs before and after the window; the slots inside it are not
//     slots: none runs, none is Missed, none is caught up after.
//
// It ends within 10 seconds with the default period:
//
//	cd examples/holidays && go run .
//	go run . -period 200ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "holidays: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err = run(ctx, os.Stdout, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "holidays: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	period time.Duration // act 2's period
}

const minPeriod, maxPeriod = 50 * time.Millisecond, 700 * time.Millisecond

// parseFlags parses the command line. It returns flag.ErrHelp, after
// printing the usage to stderr, if asked for help; any other error is for
// main to print in one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{period: 500 * time.Millisecond}
	fs := flag.NewFlagSet("holidays", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.DurationVar(&cfg.period, "period", cfg.period,
		fmt.Sprintf("the maintained job's period, `d` (%v to %v); the story lasts about 10×d", minPeriod, maxPeriod))
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
	if cfg.period < minPeriod || cfg.period > maxPeriod {
		return cfg, fmt.Errorf("-period must be between %v and %v, got %v", minPeriod, maxPeriod, cfg.period)
	}
	return cfg, nil
}

// report is what happened, for the tests.
type report struct {
	payroll []time.Time       // act 1: the runs, in Berlin
	passed  map[string]string // act 1: the weekdays passed over, "2006-01-02" to why
	records []schedule.Record // act 2: what the maintained job's Observer got
	start   time.Time         // act 2: its start
}

// run tells the story, printing it to w.
func run(ctx context.Context, w io.Writer, cfg config) (*report, error) {
	r := &report{passed: map[string]string{}}
	if err := payroll(w, r); err != nil {
		return nil, err
	}
	return r, maintained(ctx, w, cfg.period, r)
}

// The company's days off in Berlin, each with why.
var daysOff = []struct{ days, why string }{
	{"2026-12-24..2026-12-31", "the company's shutdown"},
	{"2026-12-25", "Christmas Day, in the shutdown"},
	{"2026-12-26", "Second Day of Christmas, in the shutdown"},
	{"2027-01-01", "New Year's Day"},
}

// payroll is act 1.
func payroll(w io.Writer, r *report) error {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		return err
	}
	spec, err := cron.Parse("0 9 * * MON-FRI", berlin)
	if err != nil {
		return err
	}
	var items []string
	for _, d := range daysOff {
		items = append(items, d.days)
	}
	off, err := schedule.ParseDays(berlin, items...)
	if err != nil {
		return err
	}
	s := schedule.Except(spec, off)

	fmt.Fprintln(w, "act 1: payroll at 09:00 in Berlin on weekdays, except the company's days off")
	from := time.Date(2026, 12, 21, 0, 0, 0, 0, berlin)
	to := time.Date(2027, 1, 9, 0, 0, 0, 0, berlin)
	runs := map[string]bool{}
	for t := s.Next(from); !t.IsZero() && t.Before(to); t = s.Next(t) {
		r.payroll = append(r.payroll, t)
		runs[t.Format(time.DateOnly)] = true
		fmt.Fprintf(w, "  runs   %s\n", t.Format("Mon 2006-01-02 15:04 MST"))
	}
	for t := spec.Next(from); !t.IsZero() && t.Before(to); t = spec.Next(t) {
		day := t.Format(time.DateOnly)
		if runs[day] {
			continue
		}
		why := "a day off"
		for _, d := range daysOff {
			if one, err := schedule.ParseDays(berlin, d.days); err == nil {
				if _, ok := one.Excluded(t); ok {
					why = d.why
				}
			}
		}
		r.passed[day] = why
		fmt.Fprintf(w, "  passes %s: %s\n", t.Format("Mon 2006-01-02"), why)
	}
	return nil
}

// A window is a Calendar that leaves out [from, to): a maintenance window.
type window struct{ from, to time.Time }

func (m window) Excluded(t time.Time) (time.Time, bool) {
	if t.Before(m.from) || !t.Before(m.to) {
		return time.Time{}, false
	}
	return m.to, true
}

// maintained is act 2.
func maintained(ctx context.Context, w io.Writer, p time.Duration, r *report) error {
	r.start = time.Now()
	stamp := func(t time.Time) string { return fmt.Sprintf("%4.1f", float64(t.Sub(r.start))/float64(p)) }
	maintenance := window{from: r.start.Add(4 * p), to: r.start.Add(7 * p)}
	fmt.Fprintf(w, "act 2: a job every period; maintenance from period %s to %s leaves its slots out\n",
		stamp(maintenance.from), stamp(maintenance.to))
	var mu sync.Mutex
	j := schedule.NewJob("maintained", schedule.Except(schedule.EveryFrom(r.start, p), maintenance),
		func(context.Context, schedule.Run) error { return nil },
		schedule.WithObserver(func(rec schedule.Record) {
			mu.Lock()
			r.records = append(r.records, rec)
			mu.Unlock()
			fmt.Fprintf(w, "  slot %s: %v %v\n", stamp(rec.Due), rec.Status, rec.Reason)
		}))
	if err := j.Start(ctx); err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = j.Stop(context.Background())
		}
	}()
	select {
	case <-time.After(9*p + p/2):
	case <-ctx.Done():
		return ctx.Err()
	}
	fmt.Fprintf(w, "  next slot: %s\n", stamp(j.Next()))
	stopped = true
	return j.Stop(context.Background())
}

// Command backfill runs the slots of a past range of a job's schedule
// (schedule.Job.Backfill), in three acts:
//
//  1. Two replicas. An hourly report, at half past each hour in New
//     York, should have existed since the latest night the clocks fell
//     back (1 November 2026, as this is written). Two replicas of it,
//     sharing one store, backfill that night from 00:00 to 04:00 at the
//     same time: each slot runs once, on one of them, oldest first, and
//     01:30 runs twice, as it should: once at 01:30 EDT and once an hour
//     later at 01:30 EST, two instants.
//  2. Daylight saving. A daily job at 01:30 backfills the two days before
//     that night to the two after: on that night its 01:30 comes twice
//     on the clock, and it runs once, at the first.
//  3. Again. The same ranges backfilled again run nothing: every slot has
//     a record.
//
// It ends at once:
//
//	cd examples/backfill && go run .
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"sync"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

func main() {
	if err := parseFlags(os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "backfill: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err := run(ctx, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "backfill: %v\n", err)
		os.Exit(1)
	}
}

// parseFlags parses the command line, which takes no flag but -h.
func parseFlags(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("backfill", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "usage: backfill (no flags): backfills a night of an hourly report on two replicas, and a daily job across daylight saving")
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// A ran is a run of a job, for the tests.
type ran struct {
	job, node string
	due       time.Time
}

// report is what happened, for the tests.
type report struct {
	runs     []ran
	progress map[string]schedule.BackfillProgress // by act and node: "1a", "1b", "2", "3a", "3b", "3"
}

// run tells the story, printing it to w.
func run(ctx context.Context, w io.Writer) (*report, error) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		return nil, err
	}
	r := &report{progress: map[string]schedule.BackfillProgress{}}
	var mu sync.Mutex
	work := func(node string) schedule.Func {
		return func(ctx context.Context, run schedule.Run) error {
			mu.Lock()
			r.runs = append(r.runs, ran{job: run.Job, node: node, due: run.Due})
			mu.Unlock()
			fmt.Fprintf(w, "  %-6s slot %s: ran on %s (%v)\n", run.Job, run.Due.In(ny).Format("Jan 2 15:04 MST"), node, run.Reason)
			return nil
		}
	}
	store := schedule.NewMemoryStore(1000) // as a database two replicas share

	hourly, err := cron.Parse("30 * * * *", ny)
	if err != nil {
		return nil, err
	}
	var replicas []*schedule.Job
	for _, node := range []string{"a", "b"} {
		j := schedule.NewJob("report", hourly, work(node), schedule.WithStore(store), schedule.WithNode(node))
		if err := j.Start(ctx); err != nil {
			return nil, err
		}
		defer j.Stop(context.Background())
		replicas = append(replicas, j)
	}
	night := fallBack(ny, time.Now())
	dawn := night.Add(5 * time.Hour) // 04:00, the night being an hour longer
	fmt.Fprintf(w, "act 1: two replicas backfill the night the clocks fell back, %s 00:00 to 04:00 in New York\n", night.Format("Jan 2 2006"))
	if err := both(ctx, replicas, night, dawn, r, "1"); err != nil {
		return nil, err
	}
	for _, node := range []string{"a", "b"} {
		p := r.progress["1"+node]
		fmt.Fprintf(w, "  replica %s: of %d slots, %d ran here, %d had a record already\n", node, p.Slots, p.Done-p.HadRecord, p.HadRecord)
	}

	daily, err := cron.Parse("30 1 * * *", ny)
	if err != nil {
		return nil, err
	}
	d := schedule.NewJob("daily", daily, work("a"), schedule.WithStore(store), schedule.WithNode("a"))
	if err := d.Start(ctx); err != nil {
		return nil, err
	}
	defer d.Stop(context.Background())
	from, to := night.AddDate(0, 0, -2), night.AddDate(0, 0, 2)
	fmt.Fprintf(w, "act 2: a daily job at 01:30 backfills %s to %s\n", from.Format("Jan 2"), to.Format("Jan 2"))
	p, err := d.Backfill(ctx, from, to)
	if err != nil {
		return nil, err
	}
	r.progress["2"] = p
	fmt.Fprintf(w, "  %d slots, %d ran\n", p.Slots, p.Done-p.HadRecord)

	fmt.Fprintln(w, "act 3: the same ranges again")
	if err := both(ctx, replicas, night, dawn, r, "3"); err != nil {
		return nil, err
	}
	if p, err = d.Backfill(ctx, from, to); err != nil {
		return nil, err
	}
	r.progress["3"] = p
	fmt.Fprintf(w, "  the report: %d and %d slots had a record; the daily job: %d of %d\n",
		r.progress["3a"].HadRecord, r.progress["3b"].HadRecord, p.HadRecord, p.Slots)
	return r, nil
}

// fallBack returns the start of the latest day in loc, before now's, that
// lasted 25 hours: the night its clocks fell back.
func fallBack(loc *time.Location, now time.Time) time.Time {
	y, m, d := now.In(loc).Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, loc)
	for range 400 {
		prev := time.Date(day.Year(), day.Month(), day.Day()-1, 0, 0, 0, 0, loc)
		if day.Sub(prev) == 25*time.Hour {
			return prev
		}
		day = prev
	}
	panic("backfill: " + loc.String() + " has no fall-back in the year before now")
}

// both backfills [from, to) on each replica at once, and keeps their
// progress in r, by act and node.
func both(ctx context.Context, replicas []*schedule.Job, from, to time.Time, r *report, act string) error {
	var wg sync.WaitGroup
	errs := make([]error, len(replicas))
	ps := make([]schedule.BackfillProgress, len(replicas))
	for i, j := range replicas {
		wg.Go(func() { ps[i], errs[i] = j.Backfill(ctx, from, to) })
	}
	wg.Wait()
	for i, node := range []string{"a", "b"} {
		r.progress[act+node] = ps[i]
	}
	return errors.Join(errs...)
}

// dues returns the due times of the runs of job, in order.
func (r *report) dues(job string) []time.Time {
	var ds []time.Time
	for _, x := range r.runs {
		if x.job == job {
			ds = append(ds, x.due)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].Before(ds[j]) })
	return ds
}

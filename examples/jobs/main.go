// Command jobs runs scheduled jobs with package schedule and shows what
// its policies do, in three acts, on a period that -period sets:
//
//  1. Overlap. Four jobs on the same schedule, whose runs take 1.4
//     periods, each with one overlap policy: OverlapSkip drops the slot
//     that falls due during a run, OverlapBufferOne runs it right after,
//     OverlapReplace cancels the run in flight for it, OverlapAllow runs
//     it alongside.
//  2. Restart. A job runs, its process stops for three periods, and a new
//     Job with the same name and store starts: MisfireRunAll runs each
//     missed slot at once, oldest first, with Reason CatchUp.
//  3. Replicas. Two Jobs with the same name share one store, as two
//     processes would share a database: every slot runs once, on one of
//     them.
//
// It ends within 10 seconds with the default period:
//
//	go run ./examples/jobs
//	go run ./examples/jobs -period 200ms
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

	"github.com/circulation-go/circulation/schedule"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobs: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err = run(ctx, os.Stdout, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "jobs: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	period time.Duration // the jobs' period
}

const minPeriod, maxPeriod = 50 * time.Millisecond, 700 * time.Millisecond

// parseFlags parses the command line. It returns flag.ErrHelp, after
// printing the usage to stderr, if asked for help; any other error is for
// main to print in one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{period: 500 * time.Millisecond}
	fs := flag.NewFlagSet("jobs", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.DurationVar(&cfg.period, "period", cfg.period,
		fmt.Sprintf("the jobs' period, `d` (%v to %v); the story lasts about 16×d", minPeriod, maxPeriod))
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

// report is what happened, for the tests: the records each job's Observer
// got, by job, and the most runs of a job in flight at once.
type report struct {
	records  map[string][]schedule.Record
	parallel map[string]int
	ranBy    map[time.Time][]string // act 3: the nodes that ran each slot
}

// run tells the story, printing it to w.
func run(ctx context.Context, w io.Writer, cfg config) (*report, error) {
	p := cfg.period
	log := &timeline{w: w, start: time.Now()}
	r := &report{records: map[string][]schedule.Record{}, parallel: map[string]int{}, ranBy: map[time.Time][]string{}}
	var mu sync.Mutex
	observe := func(name string) schedule.Option {
		return schedule.WithObserver(func(rec schedule.Record) {
			mu.Lock()
			r.records[name] = append(r.records[name], rec)
			mu.Unlock()
			line := fmt.Sprintf("%-9s slot %s: %-9v %v", name, log.stamp(rec.Due), rec.Status, rec.Reason)
			if !rec.Start.IsZero() {
				line += fmt.Sprintf(", ran %s to %s", log.stamp(rec.Start), log.stamp(rec.End))
			}
			if rec.Node != "" && name == "replica" {
				line += " on " + rec.Node
			}
			log.printf("%s", line)
		})
	}
	// work returns a Func that works for d, or until its context is
	// cancelled, and counts the runs of name in flight.
	inFlight := map[string]int{}
	work := func(name string, d time.Duration) schedule.Func {
		return func(ctx context.Context, run schedule.Run) error {
			mu.Lock()
			inFlight[name]++
			r.parallel[name] = max(r.parallel[name], inFlight[name])
			mu.Unlock()
			defer func() {
				mu.Lock()
				inFlight[name]--
				mu.Unlock()
			}()
			select {
			case <-time.After(d):
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
	}
	every := schedule.EveryFrom(log.start, p)
	// start starts j; stopAll, deferred, stops every job started, so that
	// an interrupted story leaves nothing running.
	var started []*schedule.Job
	start := func(j *schedule.Job) error {
		started = append(started, j)
		return j.Start(ctx)
	}
	defer func() {
		for _, j := range started {
			_ = j.Stop(context.Background()) // nil: Background is never done
		}
		if ctx.Err() != nil {
			log.printf("interrupted")
		}
	}()

	// Act 1: four overlap policies side by side; runs take 1.5 periods.
	log.printf("act 1: four jobs due every %v whose runs take %v, one per overlap policy", p, p*7/5)
	var jobs []*schedule.Job
	for _, o := range []struct {
		name string
		o    schedule.Overlap
	}{{"skip", schedule.OverlapSkip}, {"buffer", schedule.OverlapBufferOne}, {"replace", schedule.OverlapReplace}, {"allow", schedule.OverlapAllow}} {
		j := schedule.NewJob(o.name, every, work(o.name, p*7/5), schedule.WithOverlap(o.o), observe(o.name))
		if err := start(j); err != nil {
			return r, ignoreDone(ctx, err)
		}
		jobs = append(jobs, j)
	}
	sleepUntil(ctx, log.start.Add(p*9/2))
	for _, j := range jobs {
		_ = j.Stop(context.Background()) // nil: Background is never done
	}
	log.printf("act 1 over: most runs in flight at once: skip %d, buffer %d, replace %d, allow %d",
		r.parallel["skip"], r.parallel["buffer"], r.parallel["replace"], r.parallel["allow"])

	// Act 2: a restart catches up the slots missed while down.
	log.printf("act 2: a job with a store runs, stops for 3 periods, and restarts with MisfireRunAll")
	store := schedule.NewMemoryStore(100)
	// A run that starts more than a quarter period late is missed.
	grace := schedule.WithGrace(p / 4)
	first := schedule.NewJob("restart", every, work("restart", p/10), schedule.WithStore(store), grace, observe("restart"))
	if err := start(first); err != nil {
		return r, ignoreDone(ctx, err)
	}
	sleepUntil(ctx, log.start.Add(p*23/4)) // one slot, at 5p
	_ = first.Stop(context.Background())
	log.printf("restart   the process is down")
	sleepUntil(ctx, log.start.Add(p*43/5)) // the slots at 6p, 7p and 8p pass
	second := schedule.NewJob("restart", every, work("restart", p/10), schedule.WithStore(store),
		schedule.WithMisfire(schedule.MisfireRunAll), grace, observe("restart"))
	log.printf("restart   the process is back: a new Job, the same name and store")
	if err := start(second); err != nil {
		return r, ignoreDone(ctx, err)
	}
	sleepUntil(ctx, log.start.Add(p*39/4)) // and the slot at 9p
	_ = second.Stop(context.Background())

	// Act 3: two replicas share a store; each slot runs once.
	log.printf("act 3: two replicas of one job share a store")
	shared := schedule.NewMemoryStore(100)
	var replicas []*schedule.Job
	for _, node := range []string{"node-a", "node-b"} {
		f := work("replica", p/3)
		j := schedule.NewJob("replica", every, func(ctx context.Context, run schedule.Run) error {
			mu.Lock()
			r.ranBy[run.Due] = append(r.ranBy[run.Due], node)
			mu.Unlock()
			return f(ctx, run)
		}, schedule.WithStore(shared), schedule.WithNode(node), observe("replica"))
		if err := start(j); err != nil {
			return r, ignoreDone(ctx, err)
		}
		replicas = append(replicas, j)
	}
	sleepUntil(ctx, log.start.Add(p*63/4)) // the slots at 10p to 15p
	for _, j := range replicas {
		_ = j.Stop(context.Background())
	}
	var slots []time.Time
	doubled := 0
	for due, nodes := range r.ranBy {
		slots = append(slots, due)
		if len(nodes) > 1 {
			doubled++
		}
	}
	sort.Slice(slots, func(i, k int) bool { return slots[i].Before(slots[k]) })
	log.printf("act 3 over: %d slots ran, %d of them more than once", len(slots), doubled)
	return r, nil
}

// ignoreDone returns nil if err comes from ctx being done: the story was
// interrupted.
func ignoreDone(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// sleepUntil sleeps until t or until ctx is done.
func sleepUntil(ctx context.Context, t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
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

// stamp formats a time as its offset from the start.
func (l *timeline) stamp(t time.Time) string {
	return fmt.Sprintf("%.3fs", t.Sub(l.start).Seconds())
}

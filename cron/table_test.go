package cron_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A ledger records the runs of a Table's handlers.
type ledger struct {
	mu       sync.Mutex
	runs     []ledgerRun
	inFlight map[string]int
	overlaps int
}

type ledgerRun struct {
	task, handler, business string
	due, start              time.Time
	reason                  schedule.Reason
	cancelled               bool
}

// handler returns a Handler named name that takes d to run.
func (l *ledger) handler(name string, d time.Duration) cron.Handler {
	return func(ctx context.Context, business string, r schedule.Run) error {
		l.mu.Lock()
		if l.inFlight == nil {
			l.inFlight = map[string]int{}
		}
		l.inFlight[r.Job]++
		if l.inFlight[r.Job] > 1 {
			l.overlaps++
		}
		i := len(l.runs)
		l.runs = append(l.runs, ledgerRun{task: r.Job, handler: name, business: business, due: r.Due, start: time.Now(), reason: r.Reason})
		l.mu.Unlock()
		var err error
		select {
		case <-time.After(d):
		case <-ctx.Done():
			err = ctx.Err()
		}
		l.mu.Lock()
		l.inFlight[r.Job]--
		l.runs[i].cancelled = err != nil
		l.mu.Unlock()
		return err
	}
}

func (l *ledger) of(task string) []ledgerRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ledgerRun
	for _, r := range l.runs {
		if r.task == task {
			out = append(out, r)
		}
	}
	return out
}

func dues(rs []ledgerRun) []time.Time {
	var out []time.Time
	for _, r := range rs {
		out = append(out, r.due)
	}
	return out
}

// task returns an enabled permanent task of handler h.
func task(name, h, spec string) cron.Task {
	return cron.Task{Name: name, Handler: h, BusinessID: "b-" + name, Spec: spec, Permanent: true}
}

// Each definition that is not valid gets a *TaskError naming its field;
// the valid ones are applied.
func TestTableValidation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		now := time.Now()
		bad := func(mod func(*cron.Task)) cron.Task {
			d := task("t", "h", "@hourly")
			mod(&d)
			return d
		}
		cases := map[string]cron.Task{
			"name":     bad(func(d *cron.Task) { d.Name = "" }),
			"handler":  bad(func(d *cron.Task) { d.Handler = "nobody" }),
			"spec":     bad(func(d *cron.Task) { d.Spec = "61 * * * *" }),
			"zone":     bad(func(d *cron.Task) { d.Zone = "Nowhere/Town" }),
			"end":      bad(func(d *cron.Task) { d.Permanent = false }),
			"misfire":  bad(func(d *cron.Task) { d.Misfire = "sometimes" }),
			"end2":     bad(func(d *cron.Task) { d.End = now.Add(time.Hour) }),
			"end3":     bad(func(d *cron.Task) { d.Permanent, d.Start, d.End = false, now.Add(time.Hour), now }),
			"handler2": bad(func(d *cron.Task) { d.Handler = "" }),
		}
		for key, d := range cases {
			d.Name += key
			if key == "name" {
				d.Name = ""
			}
			_, err := tab.Apply(context.Background(), []cron.Task{d, task("good", "h", "@hourly")})
			var te *cron.TaskError
			require.True(t, errors.As(err, &te), "%s: %v", key, err)
			assert.Equal(t, key[:len(te.Field)], te.Field, "%s: %v", key, err)
			assert.Contains(t, err.Error(), `cron: task "`+d.Name+`": `+te.Field+": ")
		}
		_, err := tab.Apply(context.Background(), []cron.Task{task("x", "h", "60 * * * *")})
		assert.EqualError(t, err, `cron: task "x": spec: cron: minute "60": value 60 out of range 0-59`)
		var pe *cron.ParseError
		assert.True(t, errors.As(err, &pe))
		_, err = tab.Apply(context.Background(), []cron.Task{task("x", "h", "@hourly"), task("x", "h", "@daily")})
		assert.EqualError(t, err, `cron: task "x": name: defined twice`)
	})
}

// Tasks run their handler with their business id at their times; Apply
// changes only what changed, and a changed schedule takes effect at once.
func TestTableApply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"a": l.handler("a", 0), "b": l.handler("b", 0)}, cron.WithLocation(time.UTC))
		ctx := context.Background()
		t0 := time.Now().UTC() // 2000-01-01 00:00:00 UTC in the bubble

		defs := []cron.Task{task("one", "a", "*/10 * * * * *"), task("two", "a", "0 * * * * *"), task("off", "a", "* * * * * *")}
		defs[2].Paused = true
		ch, err := tab.Apply(ctx, defs)
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Added: []string{"off", "one", "two"}}, ch)
		next, ok := tab.Next("one")
		assert.True(t, ok)
		assert.Equal(t, t0.Add(10*time.Second), next)
		next, ok = tab.Next("off")
		assert.True(t, ok, "a paused task is loaded")
		assert.Zero(t, next, "a paused task has no next run")

		time.Sleep(65 * time.Second)
		synctest.Wait()
		assert.Len(t, l.of("one"), 6)
		assert.Len(t, l.of("two"), 1)
		assert.Empty(t, l.of("off"))
		assert.Equal(t, "b-one", l.of("one")[0].business)

		// The same set again: nothing changes.
		ch, err = tab.Apply(ctx, defs)
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{}, ch)

		// A new spec takes effect at once; a new handler and business id
		// from the next run.
		defs[0].Spec = "*/2 * * * * *"
		defs[1].Handler, defs[1].BusinessID = "b", "B2"
		ch, err = tab.Apply(ctx, defs)
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Changed: []string{"one", "two"}}, ch)
		next, _ = tab.Next("one")
		assert.Equal(t, t0.Add(66*time.Second), next)

		time.Sleep(60 * time.Second)
		synctest.Wait()
		runs := l.of("one")
		assert.Len(t, runs, 6+30)
		for _, r := range runs[6:] {
			assert.Zero(t, r.due.Second()%2, "%v", r.due)
		}
		two := l.of("two")
		require.Len(t, two, 2)
		assert.Equal(t, "b", two[1].handler)
		assert.Equal(t, "B2", two[1].business)

		require.NoError(t, tab.Stop(ctx))
		_, err = tab.Apply(ctx, defs)
		assert.ErrorIs(t, err, cron.ErrTableStopped)
		assert.Zero(t, l.overlaps)
	})
}

// A removed task stops at once: its run in flight goes on, not
// cancelled, and no slot falls due after. Added again meanwhile, it starts
// when that run has returned, and catches up the slot it missed.
func TestTableRemoveLetsTheRunInFlightEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"slow": l.handler("slow", 4500*time.Millisecond)}, cron.WithLocation(time.UTC))
		ctx := context.Background()
		t0 := time.Now().UTC()
		d := task("s", "slow", "*/2 * * * * *")
		_, err := tab.Apply(ctx, []cron.Task{d})
		require.NoError(t, err)
		time.Sleep(2500 * time.Millisecond) // the run of 00:00:02 is in flight
		ch, err := tab.Apply(ctx, nil)
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Removed: []string{"s"}}, ch)
		assert.Equal(t, t0.Add(2500*time.Millisecond), time.Now().UTC(), "Apply does not wait")
		_, ok := tab.Next("s")
		assert.False(t, ok)

		time.Sleep(time.Second)
		ch, err = tab.Apply(ctx, []cron.Task{d}) // back at 3.5s, while the run is in flight
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Added: []string{"s"}}, ch)
		next, ok := tab.Next("s")
		assert.True(t, ok)
		assert.Zero(t, next, "not started while the old job's run is in flight")

		time.Sleep(10 * time.Second)
		synctest.Wait()
		runs := l.of("s")
		require.Len(t, runs, 3)
		assert.False(t, runs[0].cancelled)
		assert.Equal(t, t0.Add(2*time.Second), runs[0].due)
		// The slots of 4s and 6s fell due while the old run was in flight,
		// until 6.5s: the new job then runs the latest, by the default
		// misfire policy, at once, and skips those of 8s and 10s, which
		// fall due during that run.
		assert.Equal(t, t0.Add(6*time.Second), runs[1].due)
		assert.Equal(t, t0.Add(6500*time.Millisecond), runs[1].start.UTC())
		assert.Equal(t, t0.Add(12*time.Second), runs[2].due)
		assert.Zero(t, l.overlaps)
		require.NoError(t, tab.Stop(ctx))
	})
}

// A Handler may remove its own task: Apply returns, and the job stops
// once the Handler has.
func TestTableHandlerRemovesItsOwnTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tab *cron.Table
		var runs int
		applied := make(chan error, 1)
		h := func(ctx context.Context, _ string, r schedule.Run) error {
			runs++
			_, err := tab.Apply(ctx, nil)
			applied <- err
			return nil
		}
		tab = cron.NewTable(map[string]cron.Handler{"h": h}, cron.WithLocation(time.UTC))
		_, err := tab.Apply(context.Background(), []cron.Task{task("self", "h", "* * * * * *")})
		require.NoError(t, err)
		require.NoError(t, <-applied)
		time.Sleep(time.Minute)
		assert.Equal(t, 1, runs)
		require.NoError(t, tab.Stop(context.Background()))
	})
}

// A Handler cancelled by Stop may still call Apply, which returns
// ErrTableStopped: Stop does not hold the Table while it waits.
func TestTableHandlerAppliesDuringStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tab *cron.Table
		applied := make(chan error, 1)
		h := func(ctx context.Context, _ string, r schedule.Run) error {
			<-ctx.Done()
			_, err := tab.Apply(context.Background(), nil)
			applied <- err
			return ctx.Err()
		}
		tab = cron.NewTable(map[string]cron.Handler{"h": h}, cron.WithLocation(time.UTC))
		_, err := tab.Apply(context.Background(), []cron.Task{task("t", "h", "* * * * * *")})
		require.NoError(t, err)
		time.Sleep(1500 * time.Millisecond)
		require.NoError(t, tab.Stop(context.Background()))
		assert.ErrorIs(t, <-applied, cron.ErrTableStopped)
	})
}

// An Observer may call Apply, even from the Pause and Start that Apply
// makes: it removes every task at the first skipped slot.
func TestTableObserverApplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		var tab *cron.Table
		var once sync.Once
		observe := func(r schedule.Record) {
			if r.Status == schedule.Skipped {
				once.Do(func() {
					_, err := tab.Apply(context.Background(), nil)
					assert.NoError(t, err)
				})
			}
		}
		tab = cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 1500*time.Millisecond)},
			cron.WithLocation(time.UTC), cron.WithJobOptions(schedule.WithObserver(observe)))
		_, err := tab.Apply(context.Background(), []cron.Task{task("t", "h", "* * * * * *")})
		require.NoError(t, err)
		time.Sleep(time.Minute)
		_, ok := tab.Next("t")
		assert.False(t, ok)
		assert.Len(t, l.of("t"), 1, "the run of 1s; that of 2s is skipped, and the task removed")
		require.NoError(t, tab.Stop(context.Background()))
	})
}

// Stop cancels the runs in flight, those of removed tasks too, and waits
// for them; a job waiting to replace one never starts.
func TestTableStopCancelsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"slow": l.handler("slow", time.Hour)}, cron.WithLocation(time.UTC))
		ctx := context.Background()
		a, b := task("a", "slow", "* * * * * *"), task("b", "slow", "* * * * * *")
		_, err := tab.Apply(ctx, []cron.Task{a, b})
		require.NoError(t, err)
		time.Sleep(1500 * time.Millisecond)
		b.Overlap = "allow" // b's job is to be replaced once its run ends
		_, err = tab.Apply(ctx, []cron.Task{b})
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, tab.Stop(ctx))
		assert.Equal(t, start, time.Now())
		time.Sleep(time.Hour)
		runs := append(l.of("a"), l.of("b")...)
		require.Len(t, runs, 2)
		for _, r := range runs {
			assert.True(t, r.cancelled)
		}
		_, err = tab.Apply(ctx, []cron.Task{a})
		assert.ErrorIs(t, err, cron.ErrTableStopped)
	})
}

// A run-once task runs once, at the first time of its spec after its
// start, and not again when reloaded, even by a new job; a windowed task
// runs only inside its window.
func TestTableOnceAndWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC))
		ctx := context.Background()
		t0 := time.Now().UTC()
		once := task("once", "h", "*/5 * * * * *")
		once.Once, once.Permanent, once.Start, once.End = true, false, t0.Add(12*time.Second), t0.Add(time.Hour)
		window := task("window", "h", "* * * * * *")
		window.Permanent, window.Start, window.End = false, t0.Add(10*time.Second), t0.Add(20*time.Second)
		defs := []cron.Task{once, window}
		_, err := tab.Apply(ctx, defs)
		require.NoError(t, err)
		time.Sleep(30 * time.Second)
		// A new overlap policy gives the task a new job; it must not run
		// the once task again.
		defs[0].Overlap = "allow"
		_, err = tab.Apply(ctx, defs)
		require.NoError(t, err)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		assert.Equal(t, []time.Time{t0.Add(15 * time.Second)}, dues(l.of("once")))
		var want []time.Time
		for s := 10; s <= 20; s++ {
			want = append(want, t0.Add(time.Duration(s)*time.Second))
		}
		assert.Equal(t, want, dues(l.of("window")))
		next, ok := tab.Next("window")
		assert.True(t, ok)
		assert.Zero(t, next, "the window has ended")
		require.NoError(t, tab.Stop(ctx))
	})
}

// Reloads that replace a task's job over and over, or change its times,
// while it runs, never run a slot twice nor lose one silently: each second
// of the spec runs exactly once, or, if the jobs replacing each other
// missed it and the misfire policy did not run it, has a Missed record.
func TestTableReloadNeverLosesOrDoublesARun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		var mu sync.Mutex
		missed := map[time.Time]int{}
		observe := func(r schedule.Record) {
			if r.Status == schedule.Missed {
				mu.Lock()
				missed[r.Due]++
				mu.Unlock()
			}
		}
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 1500*time.Millisecond)},
			cron.WithLocation(time.UTC), cron.WithJobOptions(schedule.WithObserver(observe)))
		ctx := context.Background()
		t0 := time.Now().UTC()
		d := task("t", "h", "* * * * * *")
		d.Overlap = "allow" // runs of 1.5s overlap: the drain of a job spans a slot
		policies := []string{"run-all", "run-once"}
		for i := range 150 {
			if i%3 == 2 {
				d.Zone = map[string]string{"": "UTC", "UTC": ""}[d.Zone] // a new schedule, same times
			} else {
				d.Misfire = policies[i%2] // a new job
			}
			_, err := tab.Apply(ctx, []cron.Task{d})
			require.NoError(t, err)
			time.Sleep(time.Duration(300+i*137%1100) * time.Millisecond)
		}
		end := time.Now()
		require.NoError(t, tab.Stop(ctx))

		ran := map[time.Time]int{}
		late := 0
		for _, r := range l.of("t") {
			ran[r.due]++
			if r.start.After(r.due) { // its slot fell due while a job was replaced
				late++
			}
		}
		mu.Lock()
		defer mu.Unlock()
		t.Logf("%d slots ran, %d of them late, after a reload; %d missed", len(ran), late, len(missed))
		assert.Positive(t, late, "no slot fell due while a job was replaced: the test tests less than it claims")
		for s := t0.Add(time.Second); s.Before(end.Add(-time.Second)); s = s.Add(time.Second) {
			assert.Equal(t, 1, ran[s]+missed[s], "slot %v: ran %d times, missed %d", s, ran[s], missed[s])
		}
	})
}

// Concurrent Applies of random sets, while the tasks run and their
// handlers read the Table, never make a task's runs overlap when its
// definitions forbid it, even across the jobs that replace each other,
// nor run a slot twice.
func TestTableConcurrentApplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		var tab *cron.Table
		slow := l.handler("h", 1200*time.Millisecond)
		h := func(ctx context.Context, business string, r schedule.Run) error {
			tab.Next(r.Job)
			return slow(ctx, business, r)
		}
		var observed atomic.Int64
		observe := func(r schedule.Record) { // called by Pause and Start too, inside Apply
			tab.Next(r.Job)
			observed.Add(1)
		}
		tab = cron.NewTable(map[string]cron.Handler{"h": h}, cron.WithLocation(time.UTC),
			cron.WithJobOptions(schedule.WithObserver(observe)))
		ctx := context.Background()
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 7))
				for range 60 {
					var defs []cron.Task
					for _, name := range []string{"a", "b", "c", "d"} {
						d := task(name, "h", []string{"* * * * * *", "*/2 * * * * *", "*/3 * * * * *"}[r.IntN(3)])
						d.Misfire = []string{"run-once", "skip", "run-all"}[r.IntN(3)]
						d.Paused = r.IntN(4) == 0
						d.BusinessID = fmt.Sprint(r.IntN(2))
						defs = append(defs, d)
					}
					_, err := tab.Apply(ctx, defs)
					assert.NoError(t, err)
					time.Sleep(time.Duration(r.IntN(1500)) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		require.NoError(t, tab.Stop(ctx))
		assert.Positive(t, observed.Load())
		assert.Zero(t, l.overlaps, "runs of a task that forbids overlaps overlapped")
		for _, name := range []string{"a", "b", "c", "d"} {
			runs := l.of(name)
			seen := map[time.Time]bool{}
			for _, r := range runs {
				assert.False(t, seen[r.due], "%s: slot %v ran twice", name, r.due)
				seen[r.due] = true
			}
			assert.NotEmpty(t, runs, name)
		}
	})
}

// A hostile definition gets an error of bounded length, whatever the size
// of its fields: the error quotes the first 64 bytes of each.
func TestTableValidationErrorsAreShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }},
			cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		huge := strings.Repeat("é", 1<<20)
		for field, d := range map[string]cron.Task{
			"name":    task(huge, "h", "@hourly"),
			"handler": task("t", huge, "@hourly"),
			"zone":    func() cron.Task { d := task("t", "h", "@hourly"); d.Zone = huge; return d }(),
			"spec":    task("t", "h", huge),
			"misfire": func() cron.Task { d := task("t", "h", "@hourly"); d.Misfire = huge; return d }(),
		} {
			_, err := tab.Apply(context.Background(), []cron.Task{d})
			var te *cron.TaskError
			require.True(t, errors.As(err, &te), "%s: %v", field, err)
			assert.Equal(t, field, te.Field)
			assert.Less(t, len(err.Error()), 400, "%s: %.400s", field, err)
			assert.True(t, utf8.ValidString(err.Error()), field)
		}
		_, err := tab.Apply(context.Background(), []cron.Task{task(huge, "h", "@hourly"), task(huge, "h", "@hourly")})
		assert.Less(t, len(err.Error()), 400, "%.400s", err)
	})
}

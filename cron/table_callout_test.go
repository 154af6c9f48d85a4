package cron_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// lateScheduler is the runtime's Scheduler whose callbacks come 2s late:
// for 2s after each slot, the slot is due but its job's timer has not run,
// and whoever changes the job first hands that slot over.
type lateScheduler struct{}

func (lateScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return time.AfterFunc(d+2*time.Second, f)
}

// within runs f and fails t if f has not returned after d (of real time):
// f is deadlocked.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %v", what, d)
	}
}

// An Observer that calls the Table while an Apply reports a slot to it
// does not deadlock: Apply changes a task's schedule while a slot is due
// and its timer has not run yet, SetSchedule hands that slot over, and it
// is Skipped (a run is in flight): its record reaches the Observer from
// inside the Apply, which must not hold the Table's lock then. (Real
// time: a goroutine blocked on a mutex stops a synctest bubble's clock.
// The window is 2s wide, and the Apply comes 50ms into it.)
func TestTableObserverCallsTheTableDuringApply(t *testing.T) {
	var l ledger
	var tab *cron.Table
	var mu sync.Mutex
	var seen []string
	observe := func(r schedule.Record) {
		_, ok := tab.Next(r.Job)
		mu.Lock()
		seen = append(seen, r.Status.String())
		mu.Unlock()
		assert.True(t, ok)
	}
	tab = cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 4*time.Second)}, cron.WithLocation(time.UTC),
		cron.WithJobOptions(schedule.WithObserver(observe), schedule.WithScheduler(lateScheduler{})))
	// A slot every 5s: the run of a slot starts 2s late and lasts 4s, so
	// that it is in flight when the next slot falls due.
	_, err := tab.Apply(context.Background(), []cron.Task{task("t", "h", "*/5 * * * * *")})
	require.NoError(t, err)
	next, _ := tab.Next("t")
	time.Sleep(time.Until(next.Add(5*time.Second + 50*time.Millisecond)))
	within(t, 5*time.Second, "Apply", func() {
		_, err = tab.Apply(context.Background(), []cron.Task{task("t", "h", "*/7 * * * * *")})
	})
	require.NoError(t, err)
	within(t, 10*time.Second, "Stop", func() { require.NoError(t, tab.Stop(context.Background())) })
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, seen, "Skipped", "the slot handed over by the Apply")
}

// lateByAMillisecond is the runtime's Scheduler whose callbacks come a
// millisecond late: at the instant of a slot, the slot is due and its
// job's timer has not run, and whoever changes the job first hands the
// slot over.
type lateByAMillisecond struct{}

func (lateByAMillisecond) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return time.AfterFunc(d+time.Millisecond, f)
}

// Two Applies whose reschedulings of the same tasks interleave leave every
// task on the later one's spec. Apply A reschedules t0, which hands over a
// slot due then, Skipped (a run is in flight): its Observer holds A there,
// between t0 and t1, while Apply B decides and reschedules both. When A
// goes on, it gives t1 the definition in force, B's, not its own.
func TestTableLatestApplyWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		gate, held := make(chan struct{}), make(chan struct{})
		var first atomic.Bool
		observe := func(r schedule.Record) {
			if first.CompareAndSwap(false, true) {
				close(held)
				<-gate
			}
		}
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Hour)}, cron.WithLocation(time.UTC),
			cron.WithJobOptions(schedule.WithScheduler(lateByAMillisecond{}), schedule.WithObserver(observe)))
		apply := func(spec string) {
			_, err := tab.Apply(context.Background(), []cron.Task{task("t0", "h", spec), task("t1", "h", spec)})
			assert.NoError(t, err)
		}
		apply("* * * * * *")
		time.Sleep(2 * time.Second) // the runs of 1s are in flight; the slots of 2s are due
		a := make(chan struct{})
		go func() {
			defer close(a)
			apply("0 0 1 1 *") // A
		}()
		<-held
		apply("0 0 2 1 *") // B, while A is held between t0 and t1
		close(gate)
		<-a
		want := time.Date(2000, 1, 2, 0, 0, 0, 0, time.UTC)
		for _, n := range []string{"t0", "t1"} {
			got, _ := tab.Next(n)
			assert.Equal(t, want, got.UTC(), "%s is not on the later Apply's spec", n)
		}
		require.NoError(t, tab.Stop(context.Background()))
	})
}

// shortNames is a MemoryStore that holds job names of at most 8 bytes.
type shortNames struct{ *schedule.MemoryStore }

func (shortNames) CheckJob(name string) error {
	if len(name) > 8 {
		return errors.New("longer than 8 bytes")
	}
	return nil
}

// A task whose name its Table's Store cannot hold is refused by Apply,
// with a *TaskError naming the field; the others run.
func TestTableRefusesANameTheStoreCannotHold(t *testing.T) {
	var l ledger
	tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Second)}, cron.WithLocation(time.UTC),
		cron.WithStore(shortNames{schedule.NewMemoryStore(10)}))
	ch, err := tab.Apply(context.Background(), []cron.Task{task("short", "h", "0 0 * * * *"), task("much-too-long", "h", "0 0 * * * *")})
	var te *cron.TaskError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "much-too-long", te.Task)
	assert.Equal(t, "name", te.Field)
	assert.EqualError(t, err, `cron: task "much-too-long": name: longer than 8 bytes`)
	assert.Equal(t, []string{"short"}, ch.Added)
	require.NoError(t, tab.Stop(context.Background()))
}

// With every task on one wheel.Wheel that was stopped first, an Apply that
// changes a schedule panics, as WithScheduler promises; the Table is not
// left locked: later Apply, Next and Stop return.
func TestTableApplyPanicLeavesTheTableUsable(t *testing.T) {
	var l ledger
	w := wheel.New()
	tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Second)}, cron.WithLocation(time.UTC),
		cron.WithJobOptions(schedule.WithScheduler(w)))
	_, err := tab.Apply(context.Background(), []cron.Task{task("a", "h", "0 0 * * * *"), task("b", "h", "0 0 * * * *")})
	require.NoError(t, err)
	w.Stop()
	within(t, 5*time.Second, "Apply", func() {
		assert.Panics(t, func() {
			_, _ = tab.Apply(context.Background(), []cron.Task{task("a", "h", "30 0 * * * *"), task("c", "h", "0 0 * * * *")})
		})
	})
	within(t, 5*time.Second, "Next", func() {
		_, ok := tab.Next("a")
		assert.True(t, ok)
	})
	within(t, 5*time.Second, "Apply", func() {
		assert.Panics(t, func() { _, _ = tab.Apply(context.Background(), []cron.Task{task("a", "h", "15 0 * * * *")}) })
	})
	within(t, 5*time.Second, "Apply removing every task", func() {
		_, err := tab.Apply(context.Background(), nil)
		assert.NoError(t, err)
	})
	within(t, 5*time.Second, "Stop", func() { assert.NoError(t, tab.Stop(context.Background())) })
}

package cron_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// lateScheduler is the runtime's Scheduler whose callbacks come 300ms
// late: for 300ms after each slot, the slot is due but its job's timer has
// not run, and whoever changes the job first hands that slot over.
type lateScheduler struct{}

func (lateScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return time.AfterFunc(d+300*time.Millisecond, f)
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
// time: a goroutine blocked on a mutex stops a synctest bubble's clock.)
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
	tab = cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 1500*time.Millisecond)}, cron.WithLocation(time.UTC),
		cron.WithJobOptions(schedule.WithObserver(observe), schedule.WithScheduler(lateScheduler{})))
	_, err := tab.Apply(context.Background(), []cron.Task{task("t", "h", "* * * * * *")})
	require.NoError(t, err)
	// 50ms after the slot of the third second: the run of the second
	// second, which started 300ms late, is in flight.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(2*time.Second + 50*time.Millisecond)))
	within(t, 5*time.Second, "Apply", func() {
		_, err = tab.Apply(context.Background(), []cron.Task{task("t", "h", "*/2 * * * * *")})
	})
	require.NoError(t, err)
	within(t, 5*time.Second, "Stop", func() { require.NoError(t, tab.Stop(context.Background())) })
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, seen, "Skipped", "the slot handed over by the Apply")
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

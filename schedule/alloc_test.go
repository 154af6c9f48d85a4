package schedule_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// The allocation claim of a run (BenchmarkRunCycle, impl=job), as a test:
// a RunNow on a started job, its claim and finish in the job's
// MemoryStore, its run on a goroutine of the pool and its Record make
// three allocations: the run's context (two), and the goroutine the pool
// starts, since on the one processor of testing.AllocsPerRun its last one
// has always left (on more, it is often still there: the benchmark
// counts 2.x). A Trace with no hook adds none.
func TestRunAllocations(t *testing.T) {
	if race {
		t.Skip("the race detector allocates")
	}
	for _, c := range []struct {
		name string
		opts []schedule.Option
	}{
		{"NoTrace", nil},
		{"EmptyTrace", []schedule.Option{schedule.WithTrace(&schedule.Trace{})}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ran := make(chan struct{})
			j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error {
				ran <- struct{}{}
				return nil
			}, append(c.opts, schedule.WithOverlap(schedule.OverlapBufferOne))...)
			require.NoError(t, j.Start(context.Background()))
			run := func() {
				j.RunNow()
				<-ran
			}
			run() // the job's active state, made at its first run
			assert.LessOrEqual(t, testing.AllocsPerRun(1000, run), 3.0)
			require.NoError(t, j.Stop(context.Background()))
		})
	}
}

// A run on a store with leases that ends before its first renewal makes
// its renewal and the one timer armed for that renewal, not the Trigger
// that would renew it nor the timer of its deadline (17 allocations a run
// with them, 9 without): the renewal (one), its timer (two), the run's
// context (two), a pool goroutine, the outcome, and the test store's claim
// (two). Another store down (an outage that a stopped job left under way)
// adds none: each answer of the store then looks its outage up, with no
// key boxed (11 when it was).
func TestRunAllocationsWithALease(t *testing.T) {
	if race {
		t.Skip("the race detector allocates")
	}
	for _, down := range []bool{false, true} {
		t.Run(fmt.Sprint("another store down=", down), func(t *testing.T) {
			if down {
				flaky := &flakyStore{MemoryStore: schedule.NewMemoryStore(10)}
				flaky.setDown(true)
				failed := make(chan struct{}, 1)
				f := schedule.NewJob("f", schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil },
					schedule.WithStore(flaky), schedule.WithClaimRetry(0), quiet,
					schedule.WithObserver(func(schedule.Record) {
						select {
						case failed <- struct{}{}:
						default:
						}
					}))
				require.NoError(t, f.Start(context.Background()))
				f.RunNow()
				<-failed
				require.NoError(t, f.Stop(context.Background())) // its store's outage stays under way
			}
			store := newLeaseStore(time.Hour)
			done := make(chan struct{})
			j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil },
				schedule.WithStore(store), schedule.WithNode("n"), schedule.WithOverlap(schedule.OverlapBufferOne),
				schedule.WithObserver(func(schedule.Record) { done <- struct{}{} }))
			require.NoError(t, j.Start(context.Background()))
			run := func() {
				j.RunNow()
				<-done
			}
			run()
			allocs := testing.AllocsPerRun(1000, run)
			t.Logf("%.1f allocations a run", allocs)
			assert.LessOrEqual(t, allocs, 9.0)
			require.NoError(t, j.Stop(context.Background()))
			store.mu.Lock()
			defer store.mu.Unlock()
			assert.Empty(t, store.renewed, "no run lasted a third of the lease")
		})
	}
}

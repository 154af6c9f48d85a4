package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// renewalsAfterStop starts j, stops it at 65s, after its first slot, and
// returns the renewals store saw in the 30s after Stop.
func renewalsAfterStop(t *testing.T, store *leaseStore, j *schedule.Job) []time.Duration {
	start(t, j)
	time.Sleep(65 * time.Second)
	stop(t, j)
	return renewalsAfter(store)
}

// renewalsAfter returns the renewals store sees in the 30s from now, then
// refuses the renewals, which ends any, so that the bubble ends.
func renewalsAfter(store *leaseStore) []time.Duration {
	store.mu.Lock()
	n := len(store.renewed)
	store.mu.Unlock()
	time.Sleep(30 * time.Second)
	store.mu.Lock()
	after := slices.Clone(store.renewed[n:])
	store.renewDown = true
	store.mu.Unlock()
	time.Sleep(10 * time.Second)
	return after
}

// A Trace's StoreFailed that calls runtime.Goexit when the Finish of a
// run failed leaves no lease renewed after Stop.
func TestStoreFailedGoexitStopsRenewing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &downLeaseStore{leaseStore: newLeaseStore(9 * time.Second)}
		store.finishDown.Store(true)
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error {
			return nil
		}, schedule.WithStore(store), schedule.WithNode("n"),
			schedule.WithTrace(&schedule.Trace{StoreFailed: func(string, error) { runtime.Goexit() }}))
		assert.Empty(t, renewalsAfterStop(t, store.leaseStore, j), "renewals after Stop")
	})
}

// The same, on the last attempt of a retried run.
func TestStoreFailedGoexitOnALastAttemptStopsRenewing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &downLeaseStore{leaseStore: newLeaseStore(9 * time.Second)}
		store.finishDown.Store(true)
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error {
			return errors.New("boom")
		}, schedule.WithStore(store), schedule.WithNode("n"), schedule.WithRetry(2, time.Second),
			schedule.WithTrace(&schedule.Trace{StoreFailed: func(string, error) { runtime.Goexit() }}))
		assert.Empty(t, renewalsAfterStop(t, store.leaseStore, j), "renewals after Stop")
	})
}

// A Trace's RunEnd that calls runtime.Goexit on a failed attempt to be
// retried leaves no lease renewed after Stop.
func TestRunEndGoexitOnARetryStopsRenewing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newLeaseStore(9 * time.Second)
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error {
			return errors.New("boom")
		}, schedule.WithStore(store), schedule.WithNode("n"), schedule.WithRetry(3, 5*time.Second),
			schedule.WithTrace(&schedule.Trace{
				RunStart: func(ctx context.Context, _ schedule.Record) context.Context { return ctx },
				RunEnd: func(_ context.Context, r schedule.Record) {
					if r.Status == schedule.Failed && r.Attempt == 1 {
						runtime.Goexit()
					}
				}}))
		assert.Empty(t, renewalsAfterStop(t, store, j), "renewals after Stop")
	})
}

// A Trace's RunStart that calls runtime.Goexit leaves no lease renewed:
// on a run's first attempt, whose renewal has just started, and on its
// second, whose lease the first attempt's renewal keeps.
func TestRunStartGoexitStopsRenewing(t *testing.T) {
	for _, attempt := range []int{1, 2} {
		t.Run(fmt.Sprint("attempt=", attempt), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newLeaseStore(9 * time.Second)
				j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error {
					return errors.New("boom")
				}, schedule.WithStore(store), schedule.WithNode("n"), schedule.WithRetry(3, time.Second),
					schedule.WithTrace(&schedule.Trace{
						RunStart: func(ctx context.Context, r schedule.Record) context.Context {
							if r.Attempt == attempt {
								runtime.Goexit()
							}
							return ctx
						}}))
				assert.Empty(t, renewalsAfterStop(t, store, j), "renewals after Stop")
			})
		})
	}
}

// A Func that calls runtime.Goexit, and a Trace's RunEnd that calls it
// again when told, leave no lease renewed.
func TestRunEndGoexitAfterAFuncGoexitStopsRenewing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newLeaseStore(9 * time.Second)
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error {
			runtime.Goexit()
			return nil
		}, schedule.WithStore(store), schedule.WithNode("n"),
			schedule.WithTrace(&schedule.Trace{
				RunStart: func(ctx context.Context, _ schedule.Record) context.Context { return ctx },
				RunEnd:   func(context.Context, schedule.Record) { runtime.Goexit() }}))
		assert.Empty(t, renewalsAfterStop(t, store, j), "renewals after Stop")
	})
}

// An Observer that calls runtime.Goexit on a failed attempt to be retried,
// on a SharedStore without leases (whose claims never expire), has the run
// recorded Failed, as a Func's Goexit does: the job's next slots run.
func TestObserverGoexitOnARetryWithoutLeases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(_ context.Context, r schedule.Run) error {
			return errors.New("boom")
		}, schedule.WithStore(store), schedule.WithNode("n"), schedule.WithRetry(2, time.Second),
			schedule.WithObserver(func(r schedule.Record) {
				if r.Status == schedule.Failed && r.Attempt == 1 && r.Due.Equal(t0.Add(time.Minute)) {
					runtime.Goexit()
				}
			}))
		start(t, j)
		time.Sleep(3*time.Minute + 30*time.Second)
		stop(t, j)
		h, err := store.History(context.Background(), "j", 10)
		assert.NoError(t, err)
		var got []string
		for _, r := range slices.Backward(h) {
			got = append(got, fmt.Sprintf("%v %v %d %s", r.Due.Sub(t0), r.Status, r.Attempt, r.Err))
		}
		assert.Equal(t, []string{
			"1m0s Failed 1 schedule: the Func called runtime.Goexit",
			"2m0s Failed 2 boom",
			"3m0s Failed 2 boom",
		}, got)
	})
}

package circulation_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
)

// answers is a body whose k-th run sleeps took[k-1] (if given) and returns
// next[k-1], true; runs past the end of next return false.
func answers(took []time.Duration, next ...time.Duration) func(context.Context, int) (time.Duration, bool) {
	return func(_ context.Context, k int) (time.Duration, bool) {
		if k <= len(took) {
			time.Sleep(took[k-1])
		}
		if k <= len(next) {
			return next[k-1], true
		}
		return 0, false
	}
}

// cell holds a value written by a run and read by the test.
type cell[T any] struct {
	mu sync.Mutex
	v  T
}

func (c *cell[T]) set(v T) { c.mu.Lock(); c.v = v; c.mu.Unlock() }
func (c *cell[T]) get() T  { c.mu.Lock(); defer c.mu.Unlock(); return c.v }

// at sleeps until d after the start of the test.
func (e *env) at(d time.Duration) {
	e.t.Helper()
	if w := d - e.since(); w > 0 {
		time.Sleep(w)
	}
}

// shapeSuite is the behaviour of FireWithin, WithMinInterval, Close,
// Shutdown and WithContext, run over every Scheduler in schedulers.
var shapeSuite = []struct {
	name string
	run  func(t *testing.T, e *env)
}{
	// FireWithin: the earliest time wins.
	{"FireWithinEarliestWins", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.FireWithin(3 * time.Minute)
		tr.FireWithin(7 * time.Minute)
		tr.FireWithin(time.Minute)
		tr.FireWithin(9 * time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, time.Minute)
	}},
	{"FireWithinKeepsSoonerFireAfter", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.FireWithin(time.Hour) // the Trigger records due times from here on
		tr.FireAfter(time.Minute)
		tr.FireWithin(5 * time.Minute)
		time.Sleep(2 * time.Hour)
		e.runsAt(r, time.Minute)
	}},
	{"FireWithinReplacesLaterFireAfter", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.FireAfter(10 * time.Minute)
		tr.FireWithin(2 * time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, 2*time.Minute)
	}},
	{"FireWithinLaterWindowsDoNotPostpone", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		for range 8 { // a change every 25s, each asking for a run within a minute
			tr.FireWithin(time.Minute)
			time.Sleep(25 * time.Second)
		}
		time.Sleep(time.Hour)
		e.runsAt(r, 60*time.Second, 135*time.Second, 210*time.Second)
	}},
	{"FireAfterSupersedesFireWithin", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.FireWithin(time.Minute)
		tr.FireAfter(5 * time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, 5*time.Minute)
	}},
	{"SuspendSupersedesFireWithin", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.FireWithin(time.Minute)
		tr.Suspend()
		tr.FireWithin(time.Hour) // nothing pending: arms
		tr.Suspend()
		time.Sleep(2 * time.Hour)
		e.runsAt(r)
	}},
	{"FireWithinKeepsSoonerAnswer", func(t *testing.T, e *env) {
		tr, r := e.bind(answers([]time.Duration{time.Minute}, 30*time.Second))
		tr.Fire()
		e.at(10 * time.Second)
		tr.FireWithin(5 * time.Minute) // the run will ask for 1m30s: sooner
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 90*time.Second)
	}},
	{"FireWithinReplacesLaterAnswer", func(t *testing.T, e *env) {
		tr, r := e.bind(answers([]time.Duration{time.Minute}, 10*time.Minute))
		tr.Fire()
		e.at(10 * time.Second)
		tr.FireWithin(2 * time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 2*time.Minute+10*time.Second)
	}},
	{"FireWithinOutlastsRunThatStops", func(t *testing.T, e *env) {
		tr, r := e.bind(sleepFirst(time.Minute))
		tr.Fire()
		e.at(10 * time.Second)
		tr.FireWithin(2 * time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 2*time.Minute+10*time.Second)
	}},
	{"FireWithinDueDuringRunFollowsIt", func(t *testing.T, e *env) {
		tr, r := e.bind(answers([]time.Duration{time.Minute}, time.Hour))
		tr.Fire()
		e.at(10 * time.Second)
		tr.FireWithin(5 * time.Second)
		time.Sleep(2 * time.Hour)
		e.runsAt(r, 0, time.Minute)
	}},
	{"FireWithinKeepsReservation", func(t *testing.T, e *env) {
		tr, r := e.bind(sleepFirst(time.Minute))
		tr.Fire()
		e.at(10 * time.Second)
		tr.Fire()
		tr.FireWithin(time.Hour)
		time.Sleep(2 * time.Hour)
		e.runsAt(r, 0, time.Minute)
	}},
	{"FireAfterDuringRunBeatsFireWithinAndAnswer", func(t *testing.T, e *env) {
		tr, r := e.bind(answers([]time.Duration{time.Minute}, 10*time.Second))
		tr.Fire()
		e.at(10 * time.Second)
		tr.FireWithin(time.Minute)
		tr.FireAfter(5 * time.Minute) // supersedes both
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 5*time.Minute+10*time.Second)
	}},

	// WithMinInterval: starts at least d apart.
	{"MinIntervalCoalescesBurst", func(t *testing.T, e *env) {
		tr, r := e.bind(nil, circulation.WithMinInterval(time.Minute))
		tr.Fire()
		for range 5 {
			time.Sleep(10 * time.Second)
			tr.Fire()
		}
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Minute)
	}},
	{"MinIntervalPacesSelfReschedule", func(t *testing.T, e *env) {
		tr, r := e.bind(answers(nil, 0, 0, 0), circulation.WithMinInterval(time.Minute))
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Minute, 2*time.Minute, 3*time.Minute)
	}},
	{"MinIntervalCountsFromStart", func(t *testing.T, e *env) {
		tr, r := e.bind(answers([]time.Duration{40 * time.Second}, 0), circulation.WithMinInterval(time.Minute))
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Minute)
	}},
	{"MinIntervalLaterFireAfterWins", func(t *testing.T, e *env) {
		tr, r := e.bind(nil, circulation.WithMinInterval(time.Minute))
		tr.Fire()
		e.at(10 * time.Second)
		tr.Fire()
		tr.FireAfter(2 * time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 2*time.Minute+10*time.Second)
	}},
	{"MinIntervalSuspendCancelsWait", func(t *testing.T, e *env) {
		tr, r := e.bind(nil, circulation.WithMinInterval(time.Minute))
		tr.Fire()
		e.at(10 * time.Second)
		tr.Fire()
		e.at(20 * time.Second)
		tr.Suspend()
		time.Sleep(time.Hour)
		e.runsAt(r, 0)
	}},
	{"MinIntervalFireDuringRunWaits", func(t *testing.T, e *env) {
		tr, r := e.bind(sleepFirst(10*time.Second), circulation.WithMinInterval(time.Minute))
		tr.Fire()
		e.at(5 * time.Second)
		tr.Fire() // reserved: would run at 10s, waits for 1m
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Minute)
	}},

	// Close: Stop, then refuse.
	{"CloseRefusesLaterFires", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.Fire()
		time.Sleep(time.Minute)
		require.NoError(t, tr.Close(context.Background()))
		tr.Fire()
		tr.FireAfter(time.Second)
		tr.FireWithin(time.Second)
		require.NoError(t, tr.Close(context.Background()), "a second Close")
		time.Sleep(time.Hour)
		e.runsAt(r, 0)
	}},
	{"CloseCancelsPendingAndRun", func(t *testing.T, e *env) {
		var cause error
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return 0, true
		})
		tr.Fire()
		e.at(time.Minute)
		tr.FireAfter(time.Minute)
		require.NoError(t, tr.Close(context.Background()))
		assert.Equal(t, time.Minute, e.since(), "Close waited")
		assert.ErrorIs(t, cause, context.Canceled)
		time.Sleep(time.Hour)
		e.runsAt(r, 0)
	}},
	{"CloseFromInsideFunc", func(t *testing.T, e *env) {
		var tr *circulation.Trigger
		var err cell[error]
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			err.set(tr.Close(ctx))
			return 0, true // ignored
		})
		tr.Fire()
		time.Sleep(time.Hour)
		require.NoError(t, err.get())
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0)
	}},

	{"CloseFromInsideFuncWithContext", func(t *testing.T, e *env) {
		var tr *circulation.Trigger
		var err cell[error]
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			err.set(tr.Close(ctx))
			return 0, true
		}, circulation.WithContext(context.Background()))
		tr.Fire()
		time.Sleep(time.Hour)
		require.NoError(t, err.get())
		e.runsAt(r, 0)
	}},

	// Shutdown: run what was arranged, at once, then close.
	{"ShutdownRunsPendingNow", func(t *testing.T, e *env) {
		tr, r := e.bind(answers(nil, time.Second))
		tr.FireAfter(time.Hour)
		e.at(time.Minute)
		require.NoError(t, tr.Shutdown(context.Background()))
		tr.Fire()
		time.Sleep(2 * time.Hour)
		e.runsAt(r, time.Minute)
	}},
	{"ShutdownWithNothingPendingRunsNothing", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.Fire()
		time.Sleep(time.Minute)
		require.NoError(t, tr.Shutdown(context.Background()))
		tr.FireAfter(time.Second)
		time.Sleep(time.Hour)
		e.runsAt(r, 0)
	}},
	{"ShutdownLetsRunAndReservationFinish", func(t *testing.T, e *env) {
		canceled := false
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			if k == 1 {
				time.Sleep(time.Minute)
				canceled = ctx.Err() != nil
			}
			return time.Second, true // ignored once shut down
		})
		tr.Fire()
		e.at(10 * time.Second)
		tr.Fire() // reserved
		require.NoError(t, tr.Shutdown(context.Background()))
		assert.Equal(t, time.Minute, e.since(), "Shutdown waited for both runs")
		assert.False(t, canceled, "Shutdown cancelled the run in flight")
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Minute)
	}},
	{"ShutdownHurriesArmingMadeDuringRun", func(t *testing.T, e *env) {
		tr, r := e.bind(sleepFirst(time.Minute))
		tr.Fire()
		e.at(10 * time.Second)
		tr.FireAfter(time.Hour)
		require.NoError(t, tr.Shutdown(context.Background()))
		time.Sleep(2 * time.Hour)
		e.runsAt(r, 0, time.Minute)
	}},
	{"ShutdownIgnoresMinInterval", func(t *testing.T, e *env) {
		tr, r := e.bind(nil, circulation.WithMinInterval(time.Hour))
		tr.Fire()
		e.at(time.Minute)
		tr.Fire() // waits for the interval
		require.NoError(t, tr.Shutdown(context.Background()))
		time.Sleep(2 * time.Hour)
		e.runsAt(r, 0, time.Minute)
	}},
	{"ShutdownFromInsideFunc", func(t *testing.T, e *env) {
		var tr *circulation.Trigger
		var err cell[error]
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			if k == 1 {
				tr.FireAfter(time.Hour)
				err.set(tr.Shutdown(ctx))
			}
			return 0, true
		})
		tr.Fire()
		time.Sleep(2 * time.Hour)
		require.NoError(t, err.get())
		e.runsAt(r, 0, 0)
	}},
	{"CloseAfterShutdownCancelsFlush", func(t *testing.T, e *env) {
		var canceled bool
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			<-ctx.Done()
			canceled = true
			return 0, false
		})
		tr.Fire()
		e.at(time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.ErrorIs(t, tr.Shutdown(ctx), context.DeadlineExceeded)
		require.NoError(t, tr.Close(context.Background()))
		assert.True(t, canceled)
		e.runsAt(r, 0)
	}},

	// WithContext: values flow, and the end of the context closes.
	{"ContextValuesAndDeadlineFlow", func(t *testing.T, e *env) {
		type key struct{}
		parent, cancel := context.WithDeadline(context.WithValue(context.Background(), key{}, "trace-7"), e.start.Add(time.Hour))
		defer cancel()
		var got cell[any]
		var deadline cell[time.Time]
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			got.set(ctx.Value(key{}))
			d, _ := ctx.Deadline()
			deadline.set(d)
			return 0, false
		}, circulation.WithContext(parent))
		tr.Fire()
		time.Sleep(time.Minute)
		assert.Equal(t, "trace-7", got.get())
		assert.Equal(t, e.start.Add(time.Hour), deadline.get())
		e.runsAt(r, 0)
	}},
	{"ContextEndClosesAndCancelsRun", func(t *testing.T, e *env) {
		parent, cancel := context.WithCancelCause(context.Background())
		stop := errors.New("shutting down")
		var cause cell[error]
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			<-ctx.Done()
			cause.set(context.Cause(ctx))
			return 0, true
		}, circulation.WithContext(parent))
		tr.Fire()
		e.at(time.Minute)
		cancel(stop)
		time.Sleep(time.Second)
		assert.ErrorIs(t, cause.get(), stop, "the run's cause is its parent's")
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0)
	}},
	{"ContextDoneAtBindIsClosed", func(t *testing.T, e *env) {
		parent, cancel := context.WithCancel(context.Background())
		cancel()
		tr, r := e.bind(nil, circulation.WithContext(parent))
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r)
	}},
}

// The shape rules run in TestTrigger, with the rest of the suite.
func init() { suite = append(suite, shapeSuite...) }

// A run cancelled by Suspend, with a parent that is still alive, reports
// context.Canceled as its cause, not the parent's nil.
func TestSuspendCauseWithParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cause error
		tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return 0, false
		}, circulation.WithContext(context.Background()))
		tr.Fire()
		synctest.Wait()
		tr.Suspend()
		require.NoError(t, tr.Stop(context.Background()))
		assert.Equal(t, context.Canceled, cause)
	})
}

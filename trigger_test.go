package circulation_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/circulation-go/circulation"
)

// recorder is a Func that records when each run starts, relative to the
// start of the test, and notices any two runs that overlap.
type recorder struct {
	start time.Time
	body  func(ctx context.Context, k int) (time.Duration, bool) // k counts runs from 1

	mu          sync.Mutex
	runs        []time.Duration
	inflight    int
	maxInflight int
}

func (r *recorder) task(ctx context.Context) (time.Duration, bool) {
	r.mu.Lock()
	r.inflight++
	r.maxInflight = max(r.maxInflight, r.inflight)
	r.runs = append(r.runs, time.Since(r.start))
	k := len(r.runs)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inflight--
		r.mu.Unlock()
	}()
	if r.body == nil {
		return 0, false
	}
	return r.body(ctx, k)
}

func (r *recorder) starts() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.runs...)
}

func (r *recorder) running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inflight
}

// env is one test of the behaviour suite on one Scheduler, inside a
// synctest bubble.
type env struct {
	t     *testing.T
	s     circulation.Scheduler
	slack time.Duration
	start time.Time
}

// bind binds a recorder running body. The Trigger is stopped when the test
// ends, and the test fails if two runs ever overlapped.
func (e *env) bind(body func(ctx context.Context, k int) (time.Duration, bool), opts ...circulation.Option) (*circulation.Trigger, *recorder) {
	r := &recorder{start: e.start, body: body}
	tr := circulation.Bind(e.s, r.task, opts...)
	e.t.Cleanup(func() {
		assert.NoError(e.t, tr.Stop(context.Background()))
		assert.LessOrEqual(e.t, r.maxInflight, 1, "runs overlapped")
	})
	return tr, r
}

// since is the time elapsed in the bubble since the test started.
func (e *env) since() time.Duration { return time.Since(e.start) }

// runsAt asserts that the runs started exactly at want: never early, and late
// by no more than the Scheduler's slack per step.
func (e *env) runsAt(r *recorder, want ...time.Duration) {
	e.t.Helper()
	got := r.starts()
	require.Len(e.t, got, len(want), "runs at %v, want %v", got, want)
	for i := range want {
		late := got[i] - want[i]
		if late < 0 || late > time.Duration(i+1)*e.slack {
			e.t.Fatalf("run %d at %v, want %v (slack %v): all runs %v", i+1, got[i], want[i], e.slack, got)
		}
	}
}

// suite is the Trigger's behaviour, run over every Scheduler in schedulers.
var suite = []struct {
	name string
	run  func(t *testing.T, e *env)
}{
	// 2. The latest call wins.
	{"SoonerFireAfterWins", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.FireAfter(5 * time.Minute)
		tr.FireAfter(time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, time.Minute)
	}},
	{"LaterFireAfterWins", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.FireAfter(time.Minute)
		tr.FireAfter(5 * time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, 5*time.Minute)
	}},
	{"FireThenSuspendRunsNothing", func(t *testing.T, e *env) {
		// A Scheduler may start a run due at once before Suspend (the
		// wheel starts its goroutine in AfterFunc): Suspend then cancels
		// it. Either way nothing runs to its end.
		var ended atomic.Bool
		tr, r := e.bind(func(ctx context.Context, _ int) (time.Duration, bool) {
			select {
			case <-ctx.Done():
			case <-time.After(time.Minute):
				ended.Store(true)
			}
			return 0, false
		})
		tr.Fire()
		tr.Suspend()
		time.Sleep(time.Hour)
		if got := r.starts(); len(got) > 0 {
			e.runsAt(r, 0)
		}
		assert.False(t, ended.Load(), "a run went on after Suspend")
	}},
	{"SuspendThenFireAfter", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.FireAfter(time.Minute)
		tr.Suspend()
		tr.FireAfter(2 * time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, 2*time.Minute)
	}},
	{"FireAfterLaterSupersedesPending", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.FireAfter(10 * time.Minute)
		time.Sleep(3 * time.Minute)
		tr.FireAfter(time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, 4*time.Minute)
	}},

	// 3. A fire during a run.
	{"FireDuringRunWaitsForItsEnd", func(t *testing.T, e *env) {
		tr, r := e.bind(sleepFirst(10 * time.Second))
		tr.Fire()
		time.Sleep(2 * time.Second)
		tr.FireAfter(3 * time.Second) // due at 5s, during the run
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 10*time.Second)
	}},
	{"FireDuringRunDueAfterItsEnd", func(t *testing.T, e *env) {
		tr, r := e.bind(sleepFirst(10 * time.Second))
		tr.Fire()
		time.Sleep(2 * time.Second)
		tr.FireAfter(20 * time.Second)
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 22*time.Second)
	}},
	{"FiresDuringRunCoalesce", func(t *testing.T, e *env) {
		tr, r := e.bind(sleepFirst(10 * time.Second))
		tr.Fire()
		time.Sleep(time.Second)
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				if i%2 == 0 {
					tr.Fire()
				} else {
					tr.FireAfter(time.Duration(i) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		time.Sleep(2 * time.Second)
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 10*time.Second)
	}},
	{"LatestFireDuringRunTimesTheNext", func(t *testing.T, e *env) {
		tr, r := e.bind(sleepFirst(10 * time.Second))
		tr.Fire()
		time.Sleep(time.Second)
		tr.FireAfter(30 * time.Second)
		time.Sleep(time.Second)
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 10*time.Second)
	}},
	{"LatestFireAfterDuringRunTimesTheNext", func(t *testing.T, e *env) {
		tr, r := e.bind(sleepFirst(10 * time.Second))
		tr.Fire()
		time.Sleep(time.Second)
		tr.Fire()
		time.Sleep(time.Second)
		tr.FireAfter(30 * time.Second)
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 32*time.Second)
	}},

	// 4. Self-rescheduling.
	{"SelfReschedule", func(t *testing.T, e *env) {
		tr, r := e.bind(func(_ context.Context, k int) (time.Duration, bool) {
			return time.Minute, k < 3
		})
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Minute, 2*time.Minute)
	}},
	{"SupersededResultIgnored", func(t *testing.T, e *env) {
		tr, r := e.bind(func(_ context.Context, k int) (time.Duration, bool) {
			if k == 1 {
				time.Sleep(10 * time.Second)
				return time.Second, true // superseded by the FireAfter at 5s
			}
			return 0, false
		})
		tr.Fire()
		time.Sleep(5 * time.Second)
		tr.FireAfter(time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Minute+5*time.Second)
	}},

	// 5. Suspend during a run.
	{"SuspendCancelsRunWithoutWaiting", func(t *testing.T, e *env) {
		var cancelledAt time.Duration
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			select {
			case <-ctx.Done():
				cancelledAt = e.since()
			case <-time.After(time.Hour):
			}
			time.Sleep(10 * time.Second) // keeps running after the cancel
			return time.Second, true
		})
		tr.Fire()
		time.Sleep(5 * time.Second)
		tr.Suspend()
		assert.Equal(t, 1, r.running(), "Suspend waited for the run")
		time.Sleep(time.Hour)
		require.NoError(t, tr.Stop(context.Background())) // orders the run's writes before our reads
		assert.Equal(t, 5*time.Second, cancelledAt)
		e.runsAt(r, 0)
	}},
	{"SuspendBeforeRunKeepsNextRunsContext", func(t *testing.T, e *env) {
		var errs []error
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			time.Sleep(time.Second)
			errs = append(errs, ctx.Err())
			return time.Second, k%3 != 0
		})
		tr.Fire()
		time.Sleep(time.Minute)
		tr.Suspend() // idle: cancels nothing
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 2*time.Second, 4*time.Second, time.Minute, time.Minute+2*time.Second, time.Minute+4*time.Second)
		require.NoError(t, tr.Stop(context.Background()))
		assert.Equal(t, []error{nil, nil, nil, nil, nil, nil}, errs)
	}},

	// 6. Stop.
	{"StopWaitsForRun", func(t *testing.T, e *env) {
		tr, r := e.bind(sleepFirst(10 * time.Second))
		tr.Fire()
		time.Sleep(2 * time.Second)
		require.NoError(t, tr.Stop(context.Background()))
		assert.Equal(t, 10*time.Second, e.since())
		assert.Zero(t, r.running())
	}},
	{"StopGivesUpWhenContextEnds", func(t *testing.T, e *env) {
		tr, _ := e.bind(sleepFirst(10 * time.Second))
		tr.Fire()
		time.Sleep(2 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		assert.ErrorIs(t, tr.Stop(ctx), context.DeadlineExceeded)
		assert.Equal(t, 5*time.Second, e.since())
		require.NoError(t, tr.Stop(context.Background()))
		assert.Equal(t, 10*time.Second, e.since())
	}},
	{"StopCancelsPendingTimerAtOnce", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.FireAfter(time.Hour)
		require.NoError(t, tr.Stop(context.Background()))
		assert.Zero(t, e.since())
		time.Sleep(2 * time.Hour)
		e.runsAt(r)
	}},
	{"StoppedTriggerFiresAgain", func(t *testing.T, e *env) {
		tr, r := e.bind(nil)
		tr.FireAfter(time.Minute)
		require.NoError(t, tr.Stop(context.Background()))
		time.Sleep(time.Hour)
		tr.FireAfter(time.Minute)
		time.Sleep(time.Hour)
		e.runsAt(r, time.Hour+time.Minute)
	}},

	// 7. Panics, with a handler; and runtime.Goexit.
	{"PanicHandlerRecovers", func(t *testing.T, e *env) {
		var got []any
		tr, r := e.bind(func(_ context.Context, k int) (time.Duration, bool) {
			if k == 1 {
				panic("boom")
			}
			return time.Second, k < 3
		}, circulation.WithPanicHandler(func(v any) { got = append(got, v) }))
		tr.Fire()
		time.Sleep(time.Hour) // the panicking run counts as (0, false)
		tr.Fire()             // not wedged
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Hour, time.Hour+time.Second)
		require.NoError(t, tr.Stop(context.Background()))
		assert.Equal(t, []any{"boom"}, got)
	}},
	{"PanicHandlerKeepsFireReservedDuringRun", func(t *testing.T, e *env) {
		var tr *circulation.Trigger
		var got []any
		tr, r := e.bind(func(_ context.Context, k int) (time.Duration, bool) {
			if k == 1 {
				time.Sleep(time.Second)
				tr.Fire()
				panic("boom")
			}
			return 0, false
		}, circulation.WithPanicHandler(func(v any) { got = append(got, v) }))
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Second)
		require.NoError(t, tr.Stop(context.Background()))
		assert.Equal(t, []any{"boom"}, got)
	}},
	{"GoexitDoesNotWedge", func(t *testing.T, e *env) {
		var tr *circulation.Trigger
		tr, r := e.bind(func(_ context.Context, k int) (time.Duration, bool) {
			if k == 1 {
				tr.FireAfter(time.Minute) // armed before the exit: still runs
				runtime.Goexit()
			}
			return 0, false
		})
		tr.Fire()
		time.Sleep(time.Hour)
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Minute, time.Hour)
	}},

	// 8. Calls from inside the Func.
	{"FireAfterInsideTask", func(t *testing.T, e *env) {
		var tr *circulation.Trigger
		tr, r := e.bind(func(_ context.Context, k int) (time.Duration, bool) {
			if k == 1 {
				tr.FireAfter(time.Minute)
			}
			return 0, false
		})
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Minute)
	}},
	{"FireInsideTaskRunsRightAfter", func(t *testing.T, e *env) {
		var tr *circulation.Trigger
		tr, r := e.bind(func(_ context.Context, k int) (time.Duration, bool) {
			if k == 1 {
				time.Sleep(10 * time.Second)
				tr.Fire()
				return 5 * time.Second, true // superseded by the Fire
			}
			return 0, false
		})
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 10*time.Second)
	}},
	{"SuspendInsideTask", func(t *testing.T, e *env) {
		var tr *circulation.Trigger
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			tr.Suspend()
			assert.Error(t, ctx.Err(), "Suspend did not cancel the run's context")
			return time.Second, true
		})
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0)
	}},
	{"StopInsideTaskWithItsContext", func(t *testing.T, e *env) {
		var tr *circulation.Trigger
		tr, r := e.bind(func(ctx context.Context, k int) (time.Duration, bool) {
			assert.ErrorIs(t, tr.Stop(ctx), context.Canceled)
			return time.Second, true
		})
		tr.Fire()
		time.Sleep(time.Hour)
		e.runsAt(r, 0)
	}},

	// 9. Negative delays mean zero.
	{"NegativeDelaysMeanZero", func(t *testing.T, e *env) {
		tr, r := e.bind(func(_ context.Context, k int) (time.Duration, bool) {
			return -5 * time.Second, k < 2
		})
		tr.FireAfter(-time.Hour)
		time.Sleep(time.Hour)
		e.runsAt(r, 0, 0)
	}},

	// 1. Never concurrent, with fires from many goroutines over time.
	{"NeverConcurrent", func(t *testing.T, e *env) {
		var tr *circulation.Trigger
		tr, r := e.bind(func(_ context.Context, k int) (time.Duration, bool) {
			time.Sleep(time.Duration(k%7) * time.Second)
			if k%5 == 0 {
				tr.Fire()
			}
			return time.Duration(k%3) * time.Second, k%4 != 0
		})
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 50 {
					time.Sleep(time.Duration((g*31+i*17)%11) * time.Second)
					switch (g + i) % 4 {
					case 0:
						tr.Fire()
					case 1:
						tr.FireAfter(time.Duration(i%5) * time.Second)
					case 2:
						tr.Suspend()
					default:
						tr.FireAfter(time.Duration(g) * time.Second / 2)
					}
				}
			})
		}
		wg.Wait()
		before := len(r.starts())
		tr.Fire()
		time.Sleep(time.Hour)
		assert.Greater(t, len(r.starts()), before, "the last Fire was lost")
	}},
}

// sleepFirst is a body whose first run takes d, then every run stops.
func sleepFirst(d time.Duration) func(context.Context, int) (time.Duration, bool) {
	return func(_ context.Context, k int) (time.Duration, bool) {
		if k == 1 {
			time.Sleep(d)
		}
		return 0, false
	}
}

func TestTrigger(t *testing.T) {
	for _, sc := range schedulers {
		t.Run(sc.name, func(t *testing.T) {
			for _, tc := range suite {
				t.Run(tc.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						e := &env{t: t, s: sc.new(t), slack: sc.slack, start: time.Now()}
						tc.run(t, e)
					})
				})
			}
		})
	}
}

func TestBindNilFuncPanics(t *testing.T) {
	assert.PanicsWithValue(t, "circulation: nil Func", func() {
		circulation.Bind(nil, nil)
	})
}

// TestTimersStayOnTheirClock: a Trigger reuses the timers it superseded, and
// must only ever reuse its own. Timers recycled by a Trigger on the real
// clock must not end up in a Trigger inside a synctest bubble, where they
// would never fire on the bubble's clock.
func TestTimersStayOnTheirClock(t *testing.T) {
	outside := circulation.Bind(nil, func(context.Context) (time.Duration, bool) { return 0, false })
	for range 100 {
		outside.FireAfter(time.Hour)
	}
	require.NoError(t, outside.Stop(context.Background()))

	synctest.Test(t, func(t *testing.T) {
		e := &env{t: t, start: time.Now()}
		tr, r := e.bind(nil)
		for range 100 {
			tr.FireAfter(5 * time.Minute)
			tr.FireAfter(time.Minute)
		}
		time.Sleep(time.Hour)
		e.runsAt(r, time.Minute)
	})
}

// TestStopLeavesNothing stops a Trigger on the real clock while a run is in
// flight and another is reserved: the run ends only once Stop has begun
// (Stop's Suspend cancels its context), and once Stop returns nil, the run
// has returned and no goroutine of the Trigger's is left.
func TestStopLeavesNothing(t *testing.T) {
	started := make(chan struct{}, 1)
	var returned atomic.Int32
	tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-ctx.Done()
		returned.Add(1)
		return time.Millisecond, true
	})
	tr.Fire()
	<-started
	tr.Fire()               // reserved behind the run in flight
	tr.FireAfter(time.Hour) // a pending timer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tr.Stop(ctx))
	require.EqualValues(t, 1, returned.Load(), "Stop returned before the run did")
	goleak.VerifyNone(t)
}

package circulation_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
)

// The tests in this file drive the Trigger with fakeScheduler, which runs
// callbacks only when told to: in any order, stale, duplicated, and (with
// stopLie) after Stop claimed nothing was stopped. Guarantees 1 (never
// concurrent) and 2 (the latest call wins) must hold whatever it does.

// counter is a Func that counts runs and notices overlaps.
type counter struct {
	runs, inflight, overlaps atomic.Int64
	next                     func() (time.Duration, bool)
}

func (c *counter) task(context.Context) (time.Duration, bool) {
	if c.inflight.Add(1) > 1 {
		c.overlaps.Add(1)
	}
	defer c.inflight.Add(-1)
	c.runs.Add(1)
	for range 3 {
		runtime.Gosched() // widen the window for an overlap
	}
	if c.next == nil {
		return 0, false
	}
	return c.next()
}

func TestStaleAndDuplicateCallbacksRunNothing(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 1))
		fs := &fakeScheduler{stopLie: seed%2 == 1}
		c := &counter{}
		tr := circulation.Bind(fs, c.task)
		tr.FireAfter(5 * time.Minute)
		tr.FireAfter(time.Minute)
		tr.FireAfter(time.Hour)
		latest := fs.armed()[2]
		for _, ft := range fs.shuffled(r) {
			before := c.runs.Load()
			ft.release()
			if ft != latest {
				require.Equal(t, before, c.runs.Load(), "seed %d: a superseded callback ran the Func", seed)
			}
		}
		require.EqualValues(t, 1, c.runs.Load(), "seed %d", seed)
	}
}

// TestAgainstModel runs random operations and random callback deliveries on
// one goroutine and checks each step against a plain model: a delivered
// callback runs the Func if and only if it belongs to the latest arming and
// has not run yet, and every superseded timer has been stopped.
func TestAgainstModel(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 2))
		fs := &fakeScheduler{}
		c := &counter{}
		var want time.Duration
		c.next = func() (time.Duration, bool) {
			want = time.Duration(r.IntN(5)-1) * time.Second // negative means zero
			return want, r.IntN(3) > 0
		}
		tr := circulation.Bind(fs, c.task)

		var latest *fakeTimer // the arming that may still run, if any
		armedSince := func(n int) *fakeTimer {
			a := fs.armed()
			require.Len(t, a, n+1, "seed %d: want exactly one new timer", seed)
			return a[n]
		}
		for step := range 60 {
			n := len(fs.armed())
			switch op := r.IntN(10); {
			case op < 4:
				d := time.Duration(r.IntN(4)-1) * time.Minute
				if op < 2 {
					tr.Fire()
					d = 0
				} else {
					tr.FireAfter(d)
				}
				if d <= 0 && latest != nil && latest.d == 0 && !latest.fired {
					// A no-delay arming is pending and its callback has
					// not started: the Fire coalesces into it.
					require.Len(t, fs.armed(), n, "seed %d step %d: a coalescing Fire armed a timer", seed, step)
					continue
				}
				latest = armedSince(n)
				assert.Equal(t, max(d, 0), latest.d)
			case op < 5:
				tr.Suspend()
				latest = nil
				require.Len(t, fs.armed(), n)
			case op < 6:
				require.NoError(t, tr.Stop(context.Background()))
				latest = nil
				require.Empty(t, fs.live(), "seed %d step %d: Stop left a timer", seed, step)
			default:
				all := fs.armed()
				if len(all) == 0 {
					continue
				}
				ft := all[r.IntN(len(all))]
				if r.IntN(2) == 0 && latest != nil {
					ft = latest
				}
				runs := c.runs.Load()
				shouldRun := ft == latest && !ft.fired
				ft.release()
				if !shouldRun {
					require.Equal(t, runs, c.runs.Load(), "seed %d step %d: stale callback ran", seed, step)
					continue
				}
				require.Equal(t, runs+1, c.runs.Load(), "seed %d step %d: current callback did not run", seed, step)
				latest = nil
				if a := fs.armed(); len(a) > n {
					require.Len(t, a, n+1)
					latest = a[n]
					assert.Equal(t, max(want, 0), latest.d)
				}
			}
			for _, ft := range fs.live() {
				require.Same(t, latest, ft, "seed %d step %d: a superseded timer was not stopped", seed, step)
			}
		}
		require.Zero(t, c.overlaps.Load())
		require.NoError(t, tr.Stop(context.Background()))
	}
}

// TestStaleCallbackAfterVersionWrap holds a superseded callback while the
// 26-bit version wraps all the way around to the value it was armed with. It
// must still not run the Func, whether or not the Scheduler's Stop worked.
func TestStaleCallbackAfterVersionWrap(t *testing.T) {
	for _, lie := range []bool{false, true} {
		fs := &fakeScheduler{stopLie: lie}
		c := &counter{}
		tr := circulation.Bind(fs, c.task)

		tr.FireAfter(time.Hour)
		stale, v := fs.armed()[0], circulation.Version(tr)
		tr.Fire()
		superseded := fs.armed()[1]
		// VersionSpace - 1 more versions bring the counter back to v: the stale
		// callback's version is the current one again.
		circulation.SkipVersions(tr, circulation.VersionSpace-1)
		require.Equal(t, v, circulation.Version(tr))

		stale.release()
		superseded.release()
		stale.release()
		require.Zero(t, c.runs.Load(), "stopLie=%v: a stale callback ran after the version wrapped", lie)

		tr.Fire()
		fs.armed()[2].release()
		require.EqualValues(t, 1, c.runs.Load(), "stopLie=%v", lie)
		require.NoError(t, tr.Stop(context.Background()))
	}
}

// TestCallbacksDeliveredConcurrently delivers every callback, stale and
// duplicated, from several goroutines at once while others fire.
func TestCallbacksDeliveredConcurrently(t *testing.T) {
	for seed := range uint64(20) {
		fs := &fakeScheduler{stopLie: seed%2 == 1}
		c := &counter{next: func() (time.Duration, bool) { return time.Second, true }}
		tr := circulation.Bind(fs, c.task)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(seed, uint64(g)))
				for range 300 {
					switch r.IntN(4) {
					case 0:
						tr.Fire()
					case 1:
						tr.FireAfter(time.Minute)
					case 2:
						tr.Suspend()
					default:
						if a := fs.armed(); len(a) > 0 {
							a[r.IntN(len(a))].release()
						}
					}
				}
			})
		}
		wg.Wait()
		require.Zero(t, c.overlaps.Load(), "seed %d: runs overlapped", seed)

		// Deliver everything still pending, then check the last Fire runs.
		for _, ft := range fs.armed() {
			ft.release()
		}
		tr.Fire()
		runs := c.runs.Load()
		a := fs.armed()
		a[len(a)-1].release()
		require.Equal(t, runs+1, c.runs.Load(), "seed %d: the last Fire was lost", seed)
		tr.Suspend()
		for _, ft := range fs.armed() {
			ft.release()
		}
		require.NoError(t, tr.Stop(context.Background()))
	}
}

// TestStopWaitsForUnstoppableTimer: when the Scheduler cannot stop a timer,
// Stop waits for its callback, and returns as soon as it has been delivered.
func TestStopWaitsForUnstoppableTimer(t *testing.T) {
	fs := &fakeScheduler{stopLie: true}
	c := &counter{}
	tr := circulation.Bind(fs, c.task)
	tr.FireAfter(time.Hour)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, tr.Stop(ctx), context.Canceled, "Stop returned while a callback was outstanding")

	done := make(chan error)
	go func() { done <- tr.Stop(context.Background()) }()
	fs.armed()[0].release()
	require.NoError(t, <-done)
	require.Zero(t, c.runs.Load())
}

// TestInterleavedArming puts a second call between a Fire's version advance
// and the moment it installs its timer, the window where a racing call would
// land. Whatever the order, exactly the latest arming stays pending, every
// superseded timer is stopped, and only the latest can run.
func TestInterleavedArming(t *testing.T) {
	tests := []struct {
		name   string
		first  func(tr *circulation.Trigger)
		inside func(tr *circulation.Trigger)
		runs   int64 // after releasing every callback
	}{
		{"SuspendInsideFire", (*circulation.Trigger).Fire, (*circulation.Trigger).Suspend, 0},
		{"FireInsideFireAfter", func(tr *circulation.Trigger) { tr.FireAfter(time.Hour) }, (*circulation.Trigger).Fire, 1},
		{"FireAfterInsideFire", (*circulation.Trigger).Fire, func(tr *circulation.Trigger) { tr.FireAfter(time.Hour) }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &fakeScheduler{}
			c := &counter{}
			tr := circulation.Bind(fs, c.task)
			fs.onArm = func() { tt.inside(tr) }
			tt.first(tr)

			live := fs.live()
			if tt.runs == 0 {
				require.Empty(t, live, "a superseded timer is still pending")
			} else {
				a := fs.armed()
				require.Equal(t, []*fakeTimer{a[len(a)-1]}, live, "want only the latest arming pending")
			}
			for _, ft := range fs.armed() {
				ft.release()
			}
			require.Equal(t, tt.runs, c.runs.Load())
			require.NoError(t, tr.Stop(context.Background()))
		})
	}
}

// TestFireCoalescesOnlyIntoUnstartedArming: a Fire on an idle Trigger whose
// pending arming has no delay rides on it instead of arming a timer, but only
// if that arming's callback has not started. Here the callback runs the Func
// to completion inside the Fire, just before the Fire validates the state:
// the state is back to what the Fire first saw, yet the run began before the
// Fire, so the Fire must arm a new timer.
func TestFireCoalescesOnlyIntoUnstartedArming(t *testing.T) {
	fs := &fakeScheduler{}
	c := &counter{}
	tr := circulation.Bind(fs, c.task)

	tr.Fire()
	tr.Fire() // coalesces: the first arming has not started
	require.Len(t, fs.armed(), 1)

	first := fs.armed()[0]
	circulation.SetCoalesceHook(func() {
		circulation.SetCoalesceHook(nil)
		first.release() // starts and finishes a run: the state is as before
	})
	defer circulation.SetCoalesceHook(nil)
	tr.Fire()
	require.EqualValues(t, 1, c.runs.Load())
	a := fs.armed()
	require.Len(t, a, 2, "the Fire coalesced into an arming that had already run: the fire is lost")
	a[1].release()
	require.EqualValues(t, 2, c.runs.Load())
	require.NoError(t, tr.Stop(context.Background()))
}

// TestSuspendAfterRunEndedCancelsNothingLater: a Suspend that found a run in
// flight but reaches its context only after the run has ended must leave no
// record behind. Once the version has moved on by half the version space,
// such a record would look newer than a new run and cancel it.
func TestSuspendAfterRunEndedCancelsNothingLater(t *testing.T) {
	fs := &fakeScheduler{}
	started, release := make(chan struct{}), make(chan struct{})
	var ctxErrs []error
	tr := circulation.Bind(fs, func(ctx context.Context) (time.Duration, bool) {
		if len(ctxErrs) == 0 {
			close(started)
			<-release
		}
		ctxErrs = append(ctxErrs, ctx.Err())
		return 0, false
	})
	tr.Fire()
	loopDone := make(chan struct{})
	go func() {
		fs.armed()[0].release() // the first run, blocked until release
		close(loopDone)
	}()
	<-started

	circulation.SetSuspendHook(func() {
		circulation.SetSuspendHook(nil)
		close(release) // the run in flight ends...
		<-loopDone     // ...and its loop gives up the running bit
	})
	defer circulation.SetSuspendHook(nil)
	tr.Suspend()

	circulation.SkipVersions(tr, 1<<27+5)
	tr.Fire()
	a := fs.armed()
	a[len(a)-1].release()
	require.Equal(t, []error{nil, nil}, ctxErrs, "a Suspend from long ago cancelled a new run")
	require.NoError(t, tr.Stop(context.Background()))
}

// A Suspend can land in the gap between one loop giving up the running bit
// and the next loop's first iteration publishing its context: it records a
// cancel for that iteration. The ending loop must leave that record alone,
// or the new iteration runs with a context that is never cancelled.
func TestSuspendBetweenLoopsCancelsTheNextRun(t *testing.T) {
	fs := &fakeScheduler{}
	var ctxErrs []error
	tr := circulation.Bind(fs, func(ctx context.Context) (time.Duration, bool) {
		ctxErrs = append(ctxErrs, ctx.Err())
		return 0, false
	})
	atBegin, goOn, bDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer circulation.SetLoopEndHook(nil)
	defer circulation.SetBeginHook(nil)
	circulation.SetLoopEndHook(func() {
		// Loop A has given up the running bit. Loop B takes it on
		// another goroutine and stops before its first iteration begins.
		circulation.SetLoopEndHook(nil)
		circulation.SetBeginHook(func() {
			circulation.SetBeginHook(nil)
			close(atBegin)
			<-goOn
		})
		tr.Fire()
		a := fs.armed()
		go func() {
			a[len(a)-1].release()
			close(bDone)
		}()
		<-atBegin
		tr.Suspend() // B holds the running bit but has published no context
	})
	tr.Fire()
	fs.armed()[0].release() // loop A: one run, then the hook; A ends
	close(goOn)
	<-bDone
	require.Len(t, ctxErrs, 2)
	assert.NoError(t, ctxErrs[0])
	assert.ErrorIs(t, ctxErrs[1], context.Canceled, "the run Suspend superseded was not cancelled")
	require.NoError(t, tr.Stop(context.Background()))
}

// A Scheduler that panics in AfterFunc (a stopped wheel.Wheel does) arms
// nothing. The panic reaches the caller of Fire or FireAfter; from a run that
// asked for its next iteration it goes to the panic handler, since no caller
// is on that goroutine. Either way the Trigger is left as if that arming had
// been superseded: Stop does not wait for it, the running bit is free, and
// once the Scheduler works again, so does the Trigger.
func TestSchedulerPanicLeavesTheTriggerUsable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakeScheduler{}
		runs := 0
		var handled []any
		tr := circulation.Bind(fs, func(context.Context) (time.Duration, bool) {
			runs++
			return time.Second, true
		}, circulation.WithPanicHandler(func(r any) { handled = append(handled, r) }))
		stopped := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return tr.Stop(ctx)
		}

		fs.closed = true
		assert.Panics(t, func() { tr.FireAfter(time.Second) })
		assert.Panics(t, tr.Fire)
		require.NoError(t, stopped(), "Stop waits for a timer that was never armed")

		fs.closed = false
		tr.Fire()
		fs.closed = true
		assert.NotPanics(t, fs.live()[0].release, "the run's next arming")
		assert.Equal(t, 1, runs)
		assert.Equal(t, []any{errClosed}, handled, "the handler gets the Scheduler's panic")
		require.NoError(t, stopped(), "Stop waits for a timer that was never armed")

		fs.closed = false
		tr.Fire()
		fs.live()[0].release()
		assert.Equal(t, 2, runs, "the Trigger runs again once the Scheduler works")
		require.NoError(t, stopped())
	})
}

// When a run's next arming panics, the run has already given up the running
// bit, and another run may hold it by then. The panic must leave that bit
// alone: a Fire during the other run still reserves one more run after it
// instead of starting one beside it.
func TestSchedulerPanicAfterTheRunLeavesTheNextRunAlone(t *testing.T) {
	fs := &fakeScheduler{}
	var runs, inFlight, most atomic.Int32
	entered, unblock := make(chan struct{}), make(chan struct{})
	tr := circulation.Bind(fs, func(context.Context) (time.Duration, bool) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		if n > most.Load() {
			most.Store(n)
		}
		if runs.Add(1) == 2 {
			close(entered)
			<-unblock
		}
		return time.Hour, true
	})
	bDone := make(chan struct{})
	tr.Fire()
	first := fs.armed()[0]
	fs.mu.Lock()
	fs.onArm = func() {
		// Run 1 has given up the running bit and is arming its next
		// timer: run 2 starts on another goroutine, then the arming fails.
		tr.Fire()
		a := fs.armed()
		go func() {
			a[len(a)-1].release()
			close(bDone)
		}()
		<-entered
		fs.mu.Lock()
		fs.closed = true
		fs.mu.Unlock()
	}
	fs.mu.Unlock()
	assert.NotPanics(t, first.release, "the panic of the run's next arming stays on the Trigger's goroutine")

	fs.mu.Lock()
	fs.closed = false
	fs.mu.Unlock()
	tr.Fire() // run 2 is in flight: this reserves a run after it
	for _, ft := range fs.live() {
		go ft.release() // a timer here could only start a run beside run 2
	}
	close(unblock)
	<-bDone
	assert.Equal(t, int32(3), runs.Load(), "run 1, run 2, and the run reserved during run 2")
	assert.Equal(t, int32(1), most.Load(), "runs overlapped")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a bound, not a wait
	defer cancel()
	require.NoError(t, tr.Stop(ctx))
}

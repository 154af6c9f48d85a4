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

const ms = time.Millisecond

// trace records a Trigger's trace, with their times relative to start.
type trace struct {
	start time.Time
	mu    sync.Mutex
	evs   []circulation.TriggerEvent
}

func (e *trace) observe(ev circulation.TriggerEvent) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

func (e *trace) all() []circulation.TriggerEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]circulation.TriggerEvent(nil), e.evs...)
}

func (e *trace) of(k circulation.EventKind) []circulation.TriggerEvent {
	var out []circulation.TriggerEvent
	for _, ev := range e.all() {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// at is the time d after the test's start.
func (e *trace) at(d time.Duration) time.Time { return e.start.Add(d) }

func TestObserverRunEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &trace{start: time.Now()}
		var k int
		tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
			k++
			time.Sleep(300 * ms)
			if k == 1 {
				return 2 * time.Second, true
			}
			return 0, false
		}, circulation.WithObserver(ev.observe))
		defer tr.Stop(context.Background())

		tr.FireAfter(time.Second)
		time.Sleep(10 * time.Second)

		want := []circulation.TriggerEvent{
			{Kind: circulation.RunStarted, Run: 1, Due: ev.at(1000 * ms), Start: ev.at(1000 * ms)},
			{Kind: circulation.RunEnded, Run: 1, Due: ev.at(1000 * ms), Start: ev.at(1000 * ms),
				Duration: 300 * ms, Next: 2 * time.Second, Again: true},
			{Kind: circulation.RunStarted, Run: 2, Due: ev.at(3300 * ms), Start: ev.at(3300 * ms)},
			{Kind: circulation.RunEnded, Run: 2, Due: ev.at(3300 * ms), Start: ev.at(3300 * ms), Duration: 300 * ms},
		}
		assert.Equal(t, want, stripMono(ev.all()))
	})
}

// stripMono drops the monotonic readings, so that times compare with ==.
func stripMono(evs []circulation.TriggerEvent) []circulation.TriggerEvent {
	for i := range evs {
		evs[i].Due, evs[i].Start = evs[i].Due.Round(0), evs[i].Start.Round(0)
	}
	return evs
}

func TestObserverLateness(t *testing.T) {
	t.Run("ReservedBehindARun", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev := &trace{start: time.Now()}
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
				time.Sleep(500 * ms)
				return 0, false
			}, circulation.WithObserver(ev.observe))
			defer tr.Stop(context.Background())

			tr.Fire()             // run 1: 0 to 500ms
			time.Sleep(100 * ms)  //
			tr.Fire()             // at 100ms, during run 1: reserves run 2
			time.Sleep(100 * ms)  //
			tr.Fire()             // at 200ms: joins the reservation
			time.Sleep(time.Hour) //

			starts := stripMono(ev.of(circulation.RunStarted))
			require.Len(t, starts, 2)
			assert.Equal(t, ev.at(100*ms), starts[1].Due, "due when the Fire that reserved it was made")
			assert.Equal(t, ev.at(500*ms), starts[1].Start)
			assert.Equal(t, 400*ms, starts[1].Start.Sub(starts[1].Due), "lateness: the wait for run 1")
			joined := ev.of(circulation.FireCoalesced)
			require.Len(t, joined, 2)
			assert.True(t, joined[0].Running && joined[1].Running)
		})
	})
	t.Run("MinInterval", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev := &trace{start: time.Now()}
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) { return 0, false },
				circulation.WithObserver(ev.observe), circulation.WithMinInterval(time.Second))
			defer tr.Stop(context.Background())
			tr.Fire()
			time.Sleep(200 * ms)
			tr.Fire() // too soon: waits until 1s
			time.Sleep(time.Hour)
			starts := stripMono(ev.of(circulation.RunStarted))
			require.Len(t, starts, 2)
			assert.Equal(t, ev.at(1000*ms), starts[1].Start)
			assert.Equal(t, ev.at(1000*ms), starts[1].Due, "due when the minimum interval allows it")
		})
	})
	t.Run("SlowTimer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// A Scheduler 50ms late: the lateness is the Scheduler's.
			ev := &trace{start: time.Now()}
			tr := circulation.Bind(lateScheduler(50*ms), func(ctx context.Context) (time.Duration, bool) { return 0, false },
				circulation.WithObserver(ev.observe))
			defer tr.Stop(context.Background())
			tr.FireAfter(time.Second)
			time.Sleep(time.Hour)
			starts := stripMono(ev.of(circulation.RunStarted))
			require.Len(t, starts, 1)
			assert.Equal(t, ev.at(1000*ms), starts[0].Due)
			assert.Equal(t, ev.at(1050*ms), starts[0].Start)
		})
	})
}

// lateScheduler runs every callback d after its due time.
type lateScheduler time.Duration

func (l lateScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return time.AfterFunc(d+time.Duration(l), f)
}

func TestObserverAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &trace{start: time.Now()}
		var k atomic.Int32
		var tr *circulation.Trigger
		tr = circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
			switch k.Add(1) {
			case 1:
				tr.FireAfter(time.Hour) // supersedes this run's answer
				return time.Second, true
			case 2:
				tr.FireWithin(time.Hour) // competes: the answer, sooner, is kept
				return time.Second, true
			}
			return 0, false
		}, circulation.WithObserver(ev.observe))
		defer tr.Stop(context.Background())

		tr.Fire()
		time.Sleep(2 * time.Hour)
		ends := ev.of(circulation.RunEnded)
		require.Len(t, ends, 3)
		assert.True(t, ends[0].Superseded, "FireAfter during the run supersedes its answer")
		assert.False(t, ends[1].Superseded, "FireWithin during the run lets the answer compete")
		assert.Equal(t, time.Second, ends[1].Next)
		assert.True(t, ends[1].Again)
		starts := stripMono(ev.of(circulation.RunStarted))
		assert.Equal(t, ev.at(time.Hour+time.Second), starts[2].Start, "the answer won over FireWithin's hour")
		sup := stripMono(ev.of(circulation.ArmingSuperseded))
		require.Len(t, sup, 1, "the FireWithin's arming, an hour away")
		assert.Equal(t, ev.at(2*time.Hour), sup[0].Due)
	})
}

func TestObserverPanics(t *testing.T) {
	t.Run("WithHandler", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var order []string
			var mu sync.Mutex
			note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
			ev := &trace{start: time.Now()}
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
				time.Sleep(20 * ms)
				panic("boom")
			},
				circulation.WithObserver(func(e circulation.TriggerEvent) { note(e.Kind.String()); ev.observe(e) }),
				circulation.WithPanicHandler(func(r any) { note("handler") }))
			defer tr.Stop(context.Background())
			tr.Fire()
			time.Sleep(time.Second)
			ends := ev.of(circulation.RunEnded)
			require.Len(t, ends, 1)
			assert.True(t, ends[0].Panicked)
			assert.Equal(t, "boom", ends[0].Panic)
			assert.Equal(t, 20*ms, ends[0].Duration)
			assert.False(t, ends[0].Again)
			mu.Lock()
			assert.Equal(t, []string{"run-started", "run-ended", "handler"}, order)
			mu.Unlock()
			assert.Equal(t, uint64(1), tr.Stats().Panics)
		})
	})
	t.Run("WithoutHandler", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev := &trace{start: time.Now()}
			rs := &recoveringScheduler{}
			tr := circulation.Bind(rs, func(ctx context.Context) (time.Duration, bool) { panic("boom") },
				circulation.WithObserver(ev.observe))
			defer tr.Stop(context.Background())
			tr.Fire()
			time.Sleep(time.Second)
			ends := ev.of(circulation.RunEnded)
			require.Len(t, ends, 1)
			assert.True(t, ends[0].Panicked)
			assert.Nil(t, ends[0].Panic, "the panic goes on: nobody recovered it")
			assert.Equal(t, []any{"boom"}, rs.panics())
			assert.Equal(t, circulation.TriggerStats{Runs: 1, Panics: 1, Fires: 1}, tr.Stats())
		})
	})
	t.Run("Goexit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev := &trace{start: time.Now()}
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) { runtime.Goexit(); return 0, false },
				circulation.WithObserver(ev.observe), circulation.WithPanicHandler(func(any) { t.Error("Goexit is not a panic") }))
			defer tr.Stop(context.Background())
			tr.Fire()
			time.Sleep(time.Second)
			ends := ev.of(circulation.RunEnded)
			require.Len(t, ends, 1)
			assert.True(t, ends[0].Panicked)
			assert.Nil(t, ends[0].Panic)
			assert.Equal(t, circulation.TriggerStats{Runs: 1, Panics: 1, Fires: 1}, tr.Stats())
		})
	})
}

func TestObserverCoalescedAndSuperseded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &trace{start: time.Now()}
		fs := &fakeScheduler{stopLie: true}
		tr := circulation.Bind(fs, func(ctx context.Context) (time.Duration, bool) { return 0, false },
			circulation.WithObserver(ev.observe))

		tr.Fire() // arms
		tr.Fire() // joins the unstarted arming
		tr.Fire()
		joined := ev.of(circulation.FireCoalesced)
		require.Len(t, joined, 2)
		assert.False(t, joined[0].Running)

		tr.FireAfter(time.Hour)      // supersedes the Fire's arming, due now
		tr.FireAfter(2 * time.Hour)  // supersedes the hour
		tr.FireWithin(3 * time.Hour) // replaces the two hours: armed before the first FireWithin, it has no due time to compare
		tr.FireWithin(4 * time.Hour) // keeps the three hours
		tr.Suspend()                 // supersedes the three hours
		sup := stripMono(ev.of(circulation.ArmingSuperseded))
		require.Len(t, sup, 4)
		assert.Equal(t, []time.Time{ev.at(0), ev.at(time.Hour), ev.at(2 * time.Hour), ev.at(3 * time.Hour)},
			[]time.Time{sup[0].Due, sup[1].Due, sup[2].Due, sup[3].Due})
		assert.Len(t, ev.of(circulation.FireCoalesced), 3, "the second FireWithin joined the pending arming")

		// The superseded armings' callbacks, delivered all the same (this
		// Scheduler's Stop lies), change nothing and are not counted again.
		for _, ft := range fs.armed() {
			ft.release()
		}
		assert.Empty(t, ev.of(circulation.RunStarted))
		assert.Equal(t, circulation.TriggerStats{Fires: 7, Coalesced: 3, Superseded: 4}, tr.Stats())
		require.NoError(t, tr.Stop(context.Background()))
	})
}

// A callback that has begun when a later call supersedes its arming is
// counted once, by whichever of the two sees the other.
func TestObserverSupersededAfterTheCallbackBegan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &trace{start: time.Now()}
		fs := &fakeScheduler{}
		tr := circulation.Bind(fs, func(ctx context.Context) (time.Duration, bool) { return 0, false },
			circulation.WithObserver(ev.observe))
		tr.FireAfter(time.Second)
		// The second FireAfter has published its version and not yet
		// killed the first arming when that arming's callback begins: the
		// callback finds itself stale, and the kill finds it claimed.
		fs.onArm = func() { fs.armed()[0].release() }
		tr.FireAfter(2 * time.Second)
		require.Len(t, ev.of(circulation.ArmingSuperseded), 1)
		// The first arming's callback delivered again changes nothing.
		fs.armed()[0].release()
		// The callback begins after the kill: the kill counts it.
		tr.FireAfter(3 * time.Second)
		fs.armed()[1].release()
		fs.armed()[2].release() // runs
		assert.Len(t, ev.of(circulation.ArmingSuperseded), 2)
		assert.Len(t, ev.of(circulation.RunStarted), 1)
		assert.Equal(t, uint64(2), tr.Stats().Superseded)
		require.NoError(t, tr.Stop(context.Background()))
	})
}

// An arming whose timer fires during a run becomes a run owed after it,
// due when the timer fired; a later call that drops it reports it
// superseded.
func TestObserverOwedRuns(t *testing.T) {
	t.Run("ArmingDuringARun", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev := &trace{start: time.Now()}
			var k atomic.Int32
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
				if k.Add(1) == 1 {
					time.Sleep(2 * time.Second)
				}
				return 0, false
			}, circulation.WithObserver(ev.observe))
			defer tr.Stop(context.Background())
			tr.Fire()
			synctest.Wait()           // the run is in flight
			tr.FireAfter(time.Second) // falls due during it
			time.Sleep(time.Hour)
			starts := stripMono(ev.of(circulation.RunStarted))
			require.Len(t, starts, 2)
			assert.Equal(t, ev.at(time.Second), starts[1].Due)
			assert.Equal(t, ev.at(2*time.Second), starts[1].Start)
		})
	})
	t.Run("Dropped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev := &trace{start: time.Now()}
			release := make(chan struct{})
			var k atomic.Int32
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
				if k.Add(1) == 1 {
					<-release
				}
				return 0, false
			}, circulation.WithObserver(ev.observe))
			tr.Fire()
			synctest.Wait() // the run is in flight
			tr.FireAfter(time.Second)
			time.Sleep(2 * time.Second) // the arming fell due: a run is owed
			tr.Suspend()                // drops it
			close(release)
			require.NoError(t, tr.Stop(context.Background()))
			sup := stripMono(ev.of(circulation.ArmingSuperseded))
			require.Len(t, sup, 1)
			assert.Equal(t, ev.at(time.Second), sup[0].Due)
			assert.Equal(t, int32(1), k.Load())
			assert.Equal(t, circulation.TriggerStats{Runs: 1, Fires: 2, Superseded: 1}, tr.Stats())
		})
	})
	t.Run("DroppedByFireAfter", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev := &trace{start: time.Now()}
			release := make(chan struct{})
			var k atomic.Int32
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
				if k.Add(1) == 1 {
					<-release
				}
				return 0, false
			}, circulation.WithObserver(ev.observe))
			tr.Fire()
			synctest.Wait()
			tr.Fire()               // owed after the run, due at 0
			time.Sleep(time.Second) //
			tr.FireAfter(time.Hour) // drops it
			close(release)
			require.NoError(t, tr.Stop(context.Background())) // supersedes the hour
			sup := stripMono(ev.of(circulation.ArmingSuperseded))
			require.Len(t, sup, 2)
			assert.Equal(t, []time.Time{ev.at(0), ev.at(time.Hour + time.Second)}, []time.Time{sup[0].Due, sup[1].Due})
			assert.Equal(t, circulation.TriggerStats{Runs: 1, Fires: 3, Coalesced: 1, Superseded: 2}, tr.Stats())
		})
	})
	t.Run("FireWithinJoins", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev := &trace{start: time.Now()}
			var tr *circulation.Trigger
			var k atomic.Int32
			tr = circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
				if k.Add(1) == 1 {
					tr.FireWithin(0) // due now, during the run: owed after it
					tr.FireWithin(0) // joins what is owed
				}
				return 0, false
			}, circulation.WithObserver(ev.observe))
			defer tr.Stop(context.Background())
			tr.Fire()
			time.Sleep(time.Second)
			joined := ev.of(circulation.FireCoalesced)
			require.Len(t, joined, 2)
			assert.True(t, joined[0].Running && joined[1].Running)
			assert.Equal(t, circulation.TriggerStats{Runs: 2, Fires: 3, Coalesced: 2}, tr.Stats())
		})
	})
}

// Shutdown hurries the pending arming: its run is due when Shutdown was
// called, and it is not superseded.
func TestObserverShutdown(t *testing.T) {
	t.Run("Idle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev := &trace{start: time.Now()}
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) { return time.Second, true },
				circulation.WithObserver(ev.observe))
			tr.FireAfter(time.Hour)
			time.Sleep(time.Second)
			require.NoError(t, tr.Shutdown(context.Background()))
			starts := stripMono(ev.of(circulation.RunStarted))
			require.Len(t, starts, 1)
			assert.Equal(t, ev.at(time.Second), starts[0].Due)
			assert.Equal(t, ev.at(time.Second), starts[0].Start)
			assert.Empty(t, ev.of(circulation.ArmingSuperseded))
			ends := ev.of(circulation.RunEnded)
			require.Len(t, ends, 1)
			assert.True(t, ends[0].Superseded, "closed: the answer is ignored")
		})
	})
	t.Run("DuringARun", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ev := &trace{start: time.Now()}
			release := make(chan struct{})
			var k atomic.Int32
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
				if k.Add(1) == 1 {
					<-release
				}
				return 0, false
			}, circulation.WithObserver(ev.observe))
			tr.Fire()
			synctest.Wait() // the run is in flight
			tr.FireAfter(time.Hour)
			time.Sleep(time.Second)
			done := make(chan error)
			go func() { done <- tr.Shutdown(context.Background()) }()
			synctest.Wait()
			assert.Equal(t, ev.at(time.Second), tr.Next().Round(0), "owed after the run in flight, from now")
			time.Sleep(time.Second)
			close(release)
			require.NoError(t, <-done)
			starts := stripMono(ev.of(circulation.RunStarted))
			require.Len(t, starts, 2)
			assert.Equal(t, ev.at(time.Second), starts[1].Due)
			assert.Equal(t, ev.at(2*time.Second), starts[1].Start)
			assert.Empty(t, ev.of(circulation.ArmingSuperseded))
			assert.Equal(t, uint64(0), tr.Stats().Superseded)
		})
	})
}

// A FireAfter that supersedes the pending arming while Shutdown is about
// to hurry it is counted; and of two Shutdowns, the one that loses does not
// make the hurried arming count as superseded.
func TestObserverShutdownRaces(t *testing.T) {
	t.Run("FireAfter", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) { return 0, false }, circulation.WithStats())
			tr.FireAfter(time.Hour)
			var calls atomic.Int32
			circulation.SetFlushHook(func() {
				if calls.Add(1) == 1 {
					tr.FireAfter(time.Hour)
				}
			})
			defer circulation.SetFlushHook(nil)
			require.NoError(t, tr.Shutdown(context.Background()))
			assert.Equal(t, circulation.TriggerStats{Runs: 1, Fires: 2, Superseded: 1}, tr.Stats())
		})
	})
	t.Run("TwoShutdowns", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) { return 0, false }, circulation.WithStats())
			tr.FireAfter(time.Hour)
			var calls atomic.Int32
			done := make(chan error)
			circulation.SetFlushHook(func() {
				if calls.Add(1) == 1 {
					go func() { done <- tr.Shutdown(context.Background()) }()
					synctest.Wait() // the other Shutdown wins, and hurries the arming
				}
			})
			defer circulation.SetFlushHook(nil)
			require.NoError(t, tr.Shutdown(context.Background()))
			require.NoError(t, <-done)
			assert.Equal(t, circulation.TriggerStats{Runs: 1, Fires: 1}, tr.Stats())
		})
	})
}

// Observing a Trigger does not change when its Func runs: FireWithin
// still replaces an arming made before the Trigger's first FireWithin.
func TestObservingChangesNothing(t *testing.T) {
	for _, opts := range [][]circulation.Option{nil, {circulation.WithStats()}, {circulation.WithObserver(func(circulation.TriggerEvent) {})}} {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var ranAt atomic.Int64
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
				ranAt.Store(int64(time.Since(start)))
				return 0, false
			}, opts...)
			tr.FireAfter(time.Second)
			tr.FireWithin(10 * time.Second)
			time.Sleep(time.Minute)
			assert.Equal(t, 10*time.Second, time.Duration(ranAt.Load()))
			require.NoError(t, tr.Stop(context.Background()))
		})
	}
}

// A Fire's arming started as a goroutine of its own (no delay, on the
// runtime's timers), superseded before the goroutine began, is counted
// once.
func TestObserverGoShotCountedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) { return 0, false }, circulation.WithStats())
		tr.Fire()               // a goroutine, not begun yet
		tr.FireAfter(time.Hour) // supersedes it
		require.NoError(t, tr.Stop(context.Background()))
		assert.Equal(t, circulation.TriggerStats{Fires: 2, Superseded: 2}, tr.Stats())
	})
}

func TestObserverMayCallTheTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr *circulation.Trigger
		var runs atomic.Int32
		once := true
		tr = circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
			runs.Add(1)
			return 0, false
		}, circulation.WithObserver(func(e circulation.TriggerEvent) {
			_ = tr.Stats()
			_ = tr.Next()
			if e.Kind == circulation.RunEnded && once {
				once = false
				assert.True(t, tr.Running(), "RunEnded comes before the run gives the Trigger up")
				tr.Fire() // one more run, right after
			}
		}))
		defer tr.Stop(context.Background())
		tr.Fire()
		time.Sleep(time.Second)
		assert.Equal(t, int32(2), runs.Load())
	})
}

func TestTriggerNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		release := make(chan struct{})
		tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
			<-release
			return 0, false
		}, circulation.WithStats())
		defer tr.Stop(context.Background())

		assert.True(t, tr.Next().IsZero(), "idle")
		tr.FireAfter(time.Hour)
		assert.Equal(t, start.Add(time.Hour), tr.Next().Round(0))
		tr.FireWithin(time.Minute)
		assert.Equal(t, start.Add(time.Minute), tr.Next().Round(0))
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.True(t, tr.Running())
		assert.True(t, tr.Next().IsZero(), "running: its answer will decide")
		time.Sleep(time.Second)
		tr.Fire() // reserved
		assert.Equal(t, start.Add(61*time.Second), tr.Next().Round(0), "owed: due when the Fire was made")
		tr.Suspend()
		assert.True(t, tr.Next().IsZero(), "suspended")
		release <- struct{}{}
		synctest.Wait()
		assert.False(t, tr.Running())
		close(release)
	})
	t.Run("WithoutStats", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) { return 0, false })
			tr.FireAfter(time.Hour)
			assert.True(t, tr.Next().IsZero(), "no due times recorded")
			tr.FireWithin(time.Minute)
			assert.True(t, tr.Next().IsZero(), "FireWithin's due times are its own")
			assert.Equal(t, circulation.TriggerStats{}, tr.Stats())
			require.NoError(t, tr.Stop(context.Background()))
		})
	})
}

func TestObservedFireAllocatesNothing(t *testing.T) {
	var n atomic.Int64
	obs := circulation.WithObserver(func(circulation.TriggerEvent) { n.Add(1) })
	t.Run("WhileRunning", func(t *testing.T) {
		started, release := make(chan struct{}), make(chan struct{})
		var runs atomic.Int32
		tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) {
			if runs.Add(1) == 1 {
				close(started)
				<-release
			}
			return 0, false
		}, obs)
		tr.Fire()
		<-started
		assert.Zero(t, testing.AllocsPerRun(100, tr.Fire), "a Fire that joins the run in flight")
		close(release)
		require.NoError(t, tr.Stop(context.Background()))
	})
	t.Run("Coalesced", func(t *testing.T) {
		fs := &fakeScheduler{}
		tr := circulation.Bind(fs, func(context.Context) (time.Duration, bool) { return 0, false }, obs)
		tr.Fire()
		assert.Zero(t, testing.AllocsPerRun(100, tr.Fire), "a Fire that joins an unstarted arming")
		assert.Zero(t, testing.AllocsPerRun(100, func() { tr.FireWithin(time.Hour) }), "a FireWithin that keeps it")
		require.NoError(t, tr.Stop(context.Background()))
	})
	assert.NotZero(t, n.Load())
}

// TestStressObserver fires, suspends and closes a Trigger from several
// goroutines and checks what the observer saw against what happened: the
// runs' events never overlap and come in order, the runs and fires the
// Trigger counted are the ones its Func and its callers counted on their
// own, and every snapshot keeps its bounds.
func TestStressObserver(t *testing.T) {
	for _, sc := range []struct {
		name string
		s    circulation.Scheduler
	}{{"runtime", nil}, {"chaos", chaosScheduler{}}} {
		t.Run(sc.name, func(t *testing.T) {
			var (
				mu      sync.Mutex
				inRun   bool
				lastRun uint64
				bad     []string
				started atomic.Uint64 // RunStarted events
				ended   atomic.Uint64 // RunEnded events
				ran     atomic.Uint64 // calls of the Func, counted by the Func
				fires   atomic.Uint64 // calls of Fire, FireAfter and FireWithin, counted by their callers
			)
			fail := func(s string) { mu.Lock(); bad = append(bad, s); mu.Unlock() }
			observe := func(e circulation.TriggerEvent) {
				switch e.Kind {
				case circulation.RunStarted:
					mu.Lock()
					if inRun || e.Run != lastRun+1 {
						bad = append(bad, "run events out of order")
					}
					inRun, lastRun = true, e.Run
					mu.Unlock()
					started.Add(1)
				case circulation.RunEnded:
					mu.Lock()
					if !inRun || e.Run != lastRun {
						bad = append(bad, "RunEnded without its RunStarted")
					}
					inRun = false
					mu.Unlock()
					ended.Add(1)
				}
			}
			signal := make(chan struct{}, 1)
			var tr *circulation.Trigger
			tr = circulation.Bind(sc.s, func(ctx context.Context) (time.Duration, bool) {
				ran.Add(1)
				select {
				case signal <- struct{}{}:
				default:
				}
				if rand.IntN(8) == 0 {
					fires.Add(1)
					tr.FireWithin(time.Duration(rand.IntN(50)) * time.Microsecond)
				}
				return time.Duration(rand.IntN(100)) * time.Microsecond, rand.IntN(3) == 0
			}, circulation.WithObserver(observe))
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						switch (i + g) % 5 {
						case 0, 1:
							fires.Add(1)
							tr.Fire()
						case 2:
							fires.Add(1)
							tr.FireAfter(time.Duration(rand.IntN(200)) * time.Microsecond)
						case 3:
							fires.Add(1)
							tr.FireWithin(time.Duration(rand.IntN(200)) * time.Microsecond)
						case 4:
							if rand.IntN(10) == 0 {
								tr.Suspend()
							}
							runtime.Gosched()
						}
						if i%64 == 0 {
							st := tr.Stats()
							if st.Coalesced > st.Fires || st.Panics > st.Runs {
								fail("snapshot out of bounds")
							}
						}
					}
				}()
			}
			time.Sleep(300 * ms)
			close(stop)
			wg.Wait()
			// At least one run, whatever the storm let through.
			select {
			case <-signal:
			default:
			}
			fires.Add(1)
			tr.Fire()
			<-signal
			require.NoError(t, tr.Close(context.Background()))
			st := tr.Stats()
			mu.Lock()
			assert.Empty(t, bad)
			mu.Unlock()
			assert.Equal(t, ran.Load(), st.Runs, "runs counted by the Trigger and by the Func")
			assert.Equal(t, ran.Load(), started.Load())
			assert.Equal(t, ran.Load(), ended.Load())
			assert.Equal(t, fires.Load(), st.Fires, "fires counted by the Trigger and by its callers")
			assert.NotZero(t, st.Coalesced)
			assert.NotZero(t, st.Superseded)
			assert.LessOrEqual(t, st.Coalesced, st.Fires)
			assert.False(t, st.Running)
		})
	}
}

// An arming whose FireAfter finds in the pending slot the shot of a later
// call, which superseded it before it got there, arms nothing; it is
// superseded all the same, and counted so. The later call is made from the
// observer, on the goroutine of the first, between its compare-and-swap and
// its arming: the first FireAfter drops the run owed after the run in
// flight, which the observer hears of first.
func TestObserverArmingSupersededBeforeItFoundTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var runs, hooked atomic.Int32
		var tr *circulation.Trigger
		tr = circulation.Bind(nil, func(context.Context) (time.Duration, bool) {
			if runs.Add(1) == 1 {
				<-release
			}
			return 0, false
		}, circulation.WithObserver(func(ev circulation.TriggerEvent) {
			if ev.Kind == circulation.ArmingSuperseded && hooked.Add(1) == 1 {
				tr.FireAfter(2 * time.Second) // supersedes the FireAfter below before it arms
			}
		}))
		tr.Fire()
		synctest.Wait() // the run is in flight
		tr.Fire()       // owed after it
		tr.FireAfter(time.Second)
		close(release)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		require.NoError(t, tr.Stop(context.Background()))
		assert.Equal(t, int32(2), runs.Load())
		// Superseded: the owed run, and FireAfter(time.Second).
		assert.Equal(t, circulation.TriggerStats{Runs: 2, Fires: 4, Coalesced: 1, Superseded: 2}, tr.Stats())
	})
}

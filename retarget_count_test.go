package circulation_test

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
)

// TestStressRetargetAccounting hammers a Trigger on the real clock with
// FireAfter, each superseding a pending arming due sooner or later, and
// Suspend timed to come as the kept timers fire early. With no Fire, no
// FireWithin and a Func that never asks to run again, every fire the
// Trigger takes arms exactly one arming, which either starts a run or is
// superseded: at rest, Fires == Runs + Superseded.
func TestStressRetargetAccounting(t *testing.T) {
	tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) { return 0, false }, circulation.WithStats())
	deadline := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				// A short arming whose timer is kept by a later one: its
				// callback comes early, about when the Suspend comes.
				short := time.Duration(50+rand.IntN(100)) * time.Microsecond
				tr.FireAfter(short)
				tr.FireAfter(short + time.Duration(1+rand.IntN(2000))*time.Microsecond)
				until := time.Now().Add(short + time.Duration(rand.IntN(40)-20)*time.Microsecond)
				for time.Now().Before(until) {
				}
				if rand.IntN(3) == 0 {
					tr.Suspend()
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, tr.Stop(context.Background()))
	st := tr.Stats()
	t.Logf("%+v", st)
	assert.Equal(t, st.Fires, st.Runs+st.Superseded, "every arming either runs or is counted superseded, once")
}

// TestStressRetargetShutdownHurries shuts down Triggers whose pending
// arming was re-targeted to an hour from now and keeps a timer that comes
// early about when Shutdown comes: Shutdown runs the arming at once, and
// returns well before the hour.
func TestStressRetargetShutdownHurries(t *testing.T) {
	var late atomic.Int64
	deadline := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				var ran atomic.Int32
				tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) { ran.Add(1); return 0, false })
				short := time.Duration(50+rand.IntN(100)) * time.Microsecond
				tr.FireAfter(short)
				tr.FireAfter(time.Hour)
				until := time.Now().Add(short + time.Duration(rand.IntN(40)-20)*time.Microsecond)
				for time.Now().Before(until) {
				}
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				if err := tr.Shutdown(ctx); err != nil || ran.Load() != 1 {
					late.Add(1)
				}
				cancel()
				_ = tr.Close(context.Background())
			}
		})
	}
	wg.Wait()
	assert.Zero(t, late.Load(), "Shutdowns that did not run the pending arming at once")
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

// A re-targeted arming due sooner than the timer that its early callback
// re-armed for the rest is not run late: the re-armed timer's time is
// recorded, and a FireAfter due before it re-arms it again.
func TestRetargetSoonerThanTheDelayedTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &starts{t0: time.Now()}
		tr := circulation.Bind(nil, s.f)
		tr.FireAfter(time.Second)     // timer at 1s
		tr.FireAfter(3 * time.Second) // due at 3s: timer kept
		time.Sleep(1500 * ms)         // it came at 1s, early, and was re-armed for 3s
		synctest.Wait()
		tr.FireAfter(time.Second) // due at 2.5s, before the timer
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Equal(t, []time.Duration{2500 * ms}, s.all())
		require.NoError(t, tr.Stop(context.Background()))
	})
}

// A timer that comes while retarget holds its shot (here while the
// observer hears of the arming superseded) is re-armed for what is left
// until the new due time, not for the whole delay again.
func TestRetargetTimerComesDuringRetarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &starts{t0: time.Now()}
		var pause atomic.Bool
		tr := circulation.Bind(nil, s.f, circulation.WithObserver(func(ev circulation.TriggerEvent) {
			if ev.Kind == circulation.ArmingSuperseded && pause.Swap(false) {
				time.Sleep(1500 * ms) // the kept timer comes at 1s meanwhile
			}
		}))
		tr.FireAfter(time.Second)
		pause.Store(true)
		tr.FireAfter(2 * time.Second) // due at 2s
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Equal(t, []time.Duration{2 * time.Second}, s.all())
		require.NoError(t, tr.Stop(context.Background()))
	})
}

// The longest delay does not wrap the monotonic due time: a FireAfter
// after it, due soon, runs soon. (On the real clock: inside a synctest
// bubble the clock the Trigger reads is negative, and cannot wrap.)
func TestRetargetLongestDelay(t *testing.T) {
	ran := make(chan struct{}, 1)
	tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) {
		ran <- struct{}{}
		return 0, false
	})
	tr.FireAfter(10 * ms)
	tr.FireAfter(math.MaxInt64)
	tr.FireAfter(10 * ms)
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Error("FireAfter(10ms) after FireAfter(math.MaxInt64) did not run")
	}
	require.NoError(t, tr.Stop(context.Background()))
}

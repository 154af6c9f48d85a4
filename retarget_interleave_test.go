package circulation

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests take, one at a time, the steps of a re-targeted shot's timer
// callback (shot.run) that no hook reaches: the window between its claim
// and delay's compare-and-swap, while the callback of a timer that came
// early holds the claim. The timer's delivery is played by the test: its
// timer is stopped, the clock is moved to when it would have come, and the
// callback's claim is taken as run takes it; then another call comes, and
// the callback goes on as run goes on (runAfterClaim).

// runAfterClaim is shot.run from the moment its Or(shotClaimed) returned
// f, which found the shot neither claimed nor busy.
func runAfterClaim(sh *shot, f uint32) { sh.claimed(f) }

// earlyClaim arms FireAfter(first) then FireAfter(second), second later
// than first, so that the pending shot is re-targeted and keeps its timer,
// then plays that timer coming at first: it returns the shot and the flags
// its callback's claim found.
func earlyClaim(t *testing.T, tr *Trigger, first, second time.Duration) (*shot, uint32) {
	tr.FireAfter(first)
	tr.FireAfter(second)
	sh := tr.pending.Load()
	require.NotNil(t, sh)
	require.Equal(t, shotLate, sh.flags.Load(), "the second FireAfter re-targets the first's shot")
	require.True(t, sh.timer.Stop(), "the kept timer is pending")
	time.Sleep(first) // when the timer would have come
	f := sh.flags.Or(shotClaimed)
	require.Zero(t, f&(shotClaimed|shotBusy))
	return sh, f
}

// A re-targeted arming whose early callback has claimed its shot, and which
// a Suspend then supersedes, is counted superseded: cancel finds the shot
// claimed and leaves the count to the callback, which finds the shot dead
// when delay's compare-and-swap fails.
func TestRetargetEarlyClaimThenSuspendCountsSuperseded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran atomic.Int32
		var events atomic.Int32
		tr := Bind(nil, func(context.Context) (time.Duration, bool) { ran.Add(1); return 0, false },
			WithObserver(func(ev TriggerEvent) {
				if ev.Kind == ArmingSuperseded {
					events.Add(1)
				}
			}))
		sh, f := earlyClaim(t, tr, time.Second, 2*time.Second)
		tr.Suspend() // cancel: Or(shotDead) finds the claim
		runAfterClaim(sh, f)
		require.NoError(t, tr.Stop(context.Background()))
		assert.Zero(t, ran.Load())
		// Two armings, neither ran: both superseded, the first by the
		// re-target, the second by the Suspend.
		assert.Equal(t, TriggerStats{Fires: 2, Superseded: 2}, tr.Stats(), "an arming superseded is not counted")
		assert.Equal(t, int32(2), events.Load(), "ArmingSuperseded events")
	})
}

// The same with a FireAfter superseding it: the superseded arming is
// counted once, and the new one runs at its own due time.
func TestRetargetEarlyClaimThenFireAfterCountsSuperseded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran atomic.Int32
		tr := Bind(nil, func(context.Context) (time.Duration, bool) { ran.Add(1); return 0, false }, WithStats())
		sh, f := earlyClaim(t, tr, time.Second, 2*time.Second)
		tr.FireAfter(3 * time.Second) // retarget refuses the claimed shot: cancel, a new shot
		runAfterClaim(sh, f)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Equal(t, int32(1), ran.Load())
		require.NoError(t, tr.Stop(context.Background()))
		assert.Equal(t, TriggerStats{Runs: 1, Fires: 3, Superseded: 2}, tr.Stats(), "an arming superseded is not counted")
	})
}

// Shutdown runs a pending arming at once. A re-targeted arming whose early
// callback holds the claim when Shutdown looks at the slot is not hurried:
// the callback re-arms the timer for the rest of the delay, and Shutdown
// waits for all of it (here an hour) instead of running the arming now.
func TestRetargetEarlyClaimShutdownHurries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ranAt atomic.Int64
		start := time.Now()
		tr := Bind(nil, func(context.Context) (time.Duration, bool) {
			ranAt.Store(int64(time.Since(start)))
			return 0, false
		})
		sh, f := earlyClaim(t, tr, time.Second, time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- tr.Shutdown(ctx) }()
		synctest.Wait() // Shutdown has closed the Trigger and waits
		go runAfterClaim(sh, f)
		err := <-done
		assert.NoError(t, err, "Shutdown waited for the re-targeted arming's due time")
		assert.Equal(t, int64(time.Second), ranAt.Load(), "the pending arming ran at another time than Shutdown's")
		require.NoError(t, tr.Close(context.Background()))
	})
}

// A re-targeted arming killed while delay holds its shot busy, after the
// timer delay re-armed came back and its callback left its claim to delay,
// is counted superseded once: cancel counts it, since delay, not a
// callback, holds the shot, and delay's callback then finds it dead.
func TestRetargetKilledWhileDelayHoldsTheClaimCountsSuperseded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran atomic.Int32
		tr := Bind(nil, func(context.Context) (time.Duration, bool) { ran.Add(1); return 0, false }, WithStats())
		sh, f := earlyClaim(t, tr, time.Second, 2*time.Second)
		testHookDelay = func(sh *shot) {
			testHookDelay = nil
			require.True(t, sh.timer.Stop(), "delay re-armed the timer")
			g := sh.flags.Or(shotClaimed) // the timer came back: its callback finds the shot busy
			require.NotZero(t, g&shotBusy)
			tr.Suspend() // cancel finds the shot busy and claimed
		}
		t.Cleanup(func() { testHookDelay = nil })
		runAfterClaim(sh, f)
		require.NoError(t, tr.Stop(context.Background()))
		assert.Zero(t, ran.Load())
		assert.Equal(t, TriggerStats{Fires: 2, Superseded: 2}, tr.Stats(), "an arming superseded is not counted once")
	})
}

// Shutdown that finds a re-targeted arming's early callback holding the
// claim leaves it to that callback. If the callback's delay re-arms the
// timer for the rest and hands the shot back after Shutdown looked at the
// slot but before it closed the Trigger, neither side hurries the arming:
// delay finds the Trigger open, and Shutdown decided on the claim it saw.
// Shutdown must still run the pending arming at once, not an hour later.
func TestRetargetEarlyClaimDelayHandsBackWhileShutdownCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ranAt atomic.Int64
		start := time.Now()
		tr := Bind(nil, func(context.Context) (time.Duration, bool) {
			ranAt.Store(int64(time.Since(start)))
			return 0, false
		})
		sh, f := earlyClaim(t, tr, time.Second, time.Hour)
		done := false
		testHookFlush = func() {
			if done {
				return
			}
			done = true
			// Shutdown has seen the shot claimed: the callback goes on,
			// re-arms the timer and hands the shot back, and finds the
			// Trigger still open.
			runAfterClaim(sh, f)
		}
		t.Cleanup(func() { testHookFlush = nil })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := tr.Shutdown(ctx)
		assert.NoError(t, err, "Shutdown waited for the re-targeted arming's due time")
		assert.Equal(t, int64(time.Second), ranAt.Load(), "the pending arming ran at another time than Shutdown's")
		require.NoError(t, tr.Close(context.Background()))
	})
}

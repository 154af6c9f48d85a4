package circulation_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
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
// early about when Shutdown comes: Shutdown runs the latest arming at
// once, and returns well before the hour (within 5 s, so that a loaded
// machine does not fail it: it did with 100 ms). A loaded machine may also
// start the short arming's run before the second FireAfter: that one then
// arms anew, and runs too.
func TestStressRetargetShutdownHurries(t *testing.T) {
	var late atomic.Int64
	deadline := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				// Each run notes which FireAfter had been called when it
				// started: on a loaded machine, the short arming's run can
				// start before the second FireAfter, which then arms anew.
				var ran, sawSecond atomic.Int32
				var second atomic.Bool
				tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) {
					ran.Add(1)
					if second.Load() {
						sawSecond.Add(1)
					}
					return 0, false
				})
				short := time.Duration(50+rand.IntN(100)) * time.Microsecond
				tr.FireAfter(short)
				second.Store(true)
				tr.FireAfter(time.Hour)
				until := time.Now().Add(short + time.Duration(rand.IntN(40)-20)*time.Microsecond)
				for time.Now().Before(until) {
				}
				// Well before the hour, and long enough that a loaded
				// machine's scheduling delays never pass it.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				// The latest arming ran: by Shutdown, or as the short
				// one's re-targeted run; and the short one, if its run
				// started before the second FireAfter took it, once.
				if err := tr.Shutdown(ctx); err != nil || sawSecond.Load() < 1 || ran.Load() > 2 {
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

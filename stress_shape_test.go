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

// hammer is a Trigger under random calls from several goroutines, whose
// Func counts overlaps and records when the latest run started.
type hammer struct {
	tr                       *circulation.Trigger
	inflight, overlaps, runs atomic.Int64
	firstStart, lastStart    atomic.Int64 // UnixNano
}

func newHammer(s circulation.Scheduler, opts ...circulation.Option) *hammer {
	h := &hammer{}
	h.tr = circulation.Bind(s, func(context.Context) (time.Duration, bool) {
		if h.inflight.Add(1) > 1 {
			h.overlaps.Add(1)
		}
		now := time.Now().UnixNano()
		h.firstStart.CompareAndSwap(0, now)
		h.lastStart.Store(now)
		h.runs.Add(1)
		spin(rand.IntN(3000))
		h.inflight.Add(-1)
		return time.Duration(rand.IntN(50)) * time.Microsecond, rand.IntN(4) > 0
	}, opts...)
	return h
}

// calls makes random calls, FireWithin among them, from 4 goroutines
// until the deadline or until stop is closed.
func (h *hammer) calls(deadline time.Time, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				select {
				case <-stop:
					return
				default:
				}
				spin(rand.IntN(2000))
				d := time.Duration(rand.IntN(100)) * time.Microsecond
				switch rand.IntN(7) {
				case 0, 1:
					h.tr.Fire()
				case 2:
					h.tr.FireAfter(d)
				case 3, 4:
					h.tr.FireWithin(d)
				case 5:
					h.tr.FireWithin(time.Hour) // rides on whatever is sooner
				default:
					h.tr.Suspend()
				}
			}
		})
	}
	wg.Wait()
}

// TestStressFireWithin mixes FireWithin with the other calls: no overlap,
// and a FireWithin at the end leads to a run that starts after it.
func TestStressFireWithin(t *testing.T) {
	for _, sc := range schedulers {
		t.Run(sc.name, func(t *testing.T) {
			h := newHammer(sc.new(t))
			h.calls(time.Now().Add(time.Second), nil)
			require.Zero(t, h.overlaps.Load(), "runs overlapped")
			fired := time.Now().UnixNano()
			h.tr.FireWithin(10 * time.Millisecond)
			require.Eventually(t, func() bool { return h.lastStart.Load() >= fired }, time.Minute, time.Millisecond,
				"no run started after the last FireWithin")
			require.NoError(t, h.tr.Stop(context.Background()))
			t.Logf("%d runs", h.runs.Load())
		})
	}
}

// TestStressMinInterval: under the same storm, with WithMinInterval, runs
// start at least the interval apart. The Func reads the clock a moment
// after the Trigger does, and that moment can be long on a loaded machine,
// so the test checks the span from the first start to the last, which only
// the first of those moments can shorten: n runs span at least n-1
// intervals. (Without the minimum, the storm makes tens of thousands of
// runs in the second.)
func TestStressMinInterval(t *testing.T) {
	const interval = 2 * time.Millisecond
	for _, sc := range schedulers {
		t.Run(sc.name, func(t *testing.T) {
			h := newHammer(sc.new(t), circulation.WithMinInterval(interval))
			h.calls(time.Now().Add(time.Second), nil)
			require.NoError(t, h.tr.Stop(context.Background()))
			require.Zero(t, h.overlaps.Load(), "runs overlapped")
			n, span := h.runs.Load(), time.Duration(h.lastStart.Load()-h.firstStart.Load())
			assert.GreaterOrEqual(t, span, time.Duration(n-1)*interval-20*time.Millisecond, "%d runs in %v", n, span)
			t.Logf("%d runs in %v", n, span)
		})
	}
}

// TestStressClose closes the Trigger in the middle of the storm: once Close
// has returned, no run starts, however many calls follow.
func TestStressClose(t *testing.T) {
	for _, sc := range schedulers {
		t.Run(sc.name, func(t *testing.T) {
			for range 20 {
				h := newHammer(sc.new(t))
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() { h.calls(time.Now().Add(time.Minute), stop) })
				time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
				require.NoError(t, h.tr.Close(context.Background()))
				runs := h.runs.Load()
				require.Zero(t, h.inflight.Load(), "a run is in flight after Close returned")
				time.Sleep(5 * time.Millisecond) // the callers go on
				close(stop)
				wg.Wait()
				require.Equal(t, runs, h.runs.Load(), "a run started after Close returned")
				require.Zero(t, h.overlaps.Load(), "runs overlapped")
			}
		})
	}
}

// TestStressShutdown: a FireAfter made before Shutdown runs (at once, not in
// an hour), Shutdown returns once it has, and nothing runs after.
func TestStressShutdown(t *testing.T) {
	for _, sc := range schedulers {
		t.Run(sc.name, func(t *testing.T) {
			for range 20 {
				h := newHammer(sc.new(t))
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() { h.calls(time.Now().Add(time.Minute), stop) })
				time.Sleep(time.Duration(rand.IntN(10)) * time.Millisecond)
				close(stop)
				wg.Wait()
				fired := time.Now().UnixNano()
				h.tr.FireAfter(time.Hour)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				require.NoError(t, h.tr.Shutdown(ctx), "Shutdown did not run the pending arming at once")
				cancel()
				require.GreaterOrEqual(t, h.lastStart.Load(), fired, "the pending arming did not run")
				runs := h.runs.Load()
				h.tr.Fire()
				h.tr.FireWithin(0)
				time.Sleep(2 * time.Millisecond)
				require.Equal(t, runs, h.runs.Load(), "a run started after Shutdown returned")
				require.Zero(t, h.overlaps.Load(), "runs overlapped")
			}
		})
	}
}

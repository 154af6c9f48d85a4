package circulation_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
)

// TestStress hammers one Trigger on the real clock from several goroutines
// with random Fire, FireAfter and Suspend calls while its Func counts the
// runs in flight. No two runs may overlap, and after the hammering stops a
// final Fire must lead to a run that starts after it.
func TestStress(t *testing.T) {
	for _, sc := range schedulers {
		t.Run(sc.name, func(t *testing.T) {
			stress(t, sc.new(t), time.Second)
		})
	}
}

func stress(t *testing.T, s circulation.Scheduler, d time.Duration) {
	var inflight, overlaps, runs atomic.Int64
	var lastStart atomic.Int64 // UnixNano of the latest run's start
	tr := circulation.Bind(s, func(context.Context) (time.Duration, bool) {
		if inflight.Add(1) > 1 {
			overlaps.Add(1)
		}
		lastStart.Store(time.Now().UnixNano())
		runs.Add(1)
		spin(rand.IntN(5000))
		inflight.Add(-1)
		return time.Duration(rand.IntN(50)) * time.Microsecond, rand.IntN(4) > 0
	})
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				spin(rand.IntN(2000)) // let timers fire and runs start between calls
				switch rand.IntN(5) {
				case 0, 1:
					tr.Fire()
				case 2, 3:
					tr.FireAfter(time.Duration(rand.IntN(100)) * time.Microsecond)
				default:
					tr.Suspend()
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, overlaps.Load(), "runs overlapped")
	require.NotZero(t, runs.Load())

	// No lost fire: the last Fire leads to a run that starts after it.
	fired := time.Now().UnixNano()
	tr.Fire()
	require.Eventually(t, func() bool { return lastStart.Load() >= fired }, time.Minute, time.Millisecond,
		"no run started after the last Fire")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tr.Stop(ctx))
	require.Zero(t, inflight.Load())
	t.Logf("%d runs", runs.Load())
}

var sink atomic.Int64

// spin burns about n steps of CPU without blocking, yielding now and then.
func spin(n int) {
	x := int64(0)
	for i := range n {
		x += int64(i)
		if i%500 == 0 {
			runtime.Gosched()
		}
	}
	sink.Add(x)
}

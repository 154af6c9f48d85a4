package wheel_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/wheel"
)

// Semantic 7: goroutines arm and stop timers at once, on the real clock,
// across shards, while timers fire. Every timer's callback runs exactly
// once if its Stop reported false, never if it reported true, and never
// before its deadline. Run it with -race; it takes well under a second.
func TestConcurrentArmStopFire(t *testing.T) {
	const (
		goroutines = 4
		perG       = 5000
		maxDelay   = 3 * time.Millisecond
	)
	w := wheel.New(wheel.WithShards(3), wheel.WithTick(100*time.Microsecond), wheel.WithSlots(16))
	defer w.Stop()

	type entry struct {
		armed   time.Time
		d       time.Duration
		ran     atomic.Int32
		early   atomic.Bool
		stopped bool
	}
	var wg sync.WaitGroup // one count per timer: its callback or its successful Stop
	entries := make([][]*entry, goroutines)
	var arms sync.WaitGroup
	for g := range goroutines {
		arms.Add(1)
		go func() {
			defer arms.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var mine []*entry
			var timers []interface{ Stop() bool }
			for range perG {
				e := &entry{armed: time.Now(), d: time.Duration(rng.Int64N(int64(maxDelay)))}
				wg.Add(1)
				timers = append(timers, w.AfterFunc(e.d, func() {
					if time.Since(e.armed) < e.d {
						e.early.Store(true)
					}
					e.ran.Add(1)
					wg.Done()
				}))
				mine = append(mine, e)
				// Stop a random earlier timer, whether it fired or not.
				if rng.IntN(2) == 0 {
					i := rng.IntN(len(timers))
					if timers[i].Stop() {
						require.False(t, mine[i].stopped, "Stop reported true twice")
						mine[i].stopped = true
						wg.Done()
					}
				}
			}
			entries[g] = mine
		}()
	}
	arms.Wait()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("timers still pending after 10 s: Len() = %d", w.Len())
	}
	require.Zero(t, w.Stop())
	for g, mine := range entries {
		for i, e := range mine {
			want := int32(1)
			if e.stopped {
				want = 0
			}
			require.Equal(t, want, e.ran.Load(), "goroutine %d timer %d (stopped=%v)", g, i, e.stopped)
			require.False(t, e.early.Load(), "goroutine %d timer %d ran early", g, i)
		}
	}
}

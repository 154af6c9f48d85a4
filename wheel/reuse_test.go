package wheel

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
)

// timerBehind returns the timer that the Timer of a call points into.
func timerBehind(tm circulation.Timer) *timer {
	switch h := tm.(type) {
	case *timer:
		return h
	case *handle:
		return (*timer)(unsafe.Pointer(uintptr(unsafe.Pointer(h)) &^ (timerSize - 1)))
	}
	panic("not a wheel Timer")
}

// A timer whose call is over, stopped or fired, serves a later call, and
// the earlier call's Timer then stops nothing: its Stop reports false and
// the later call still runs.
func TestStaleTimerStopsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := New(WithShards(1))
		defer w.Stop()
		var ran [3]atomic.Int32
		t0 := w.AfterFunc(time.Second, func() { ran[0].Add(1) })
		require.True(t, t0.Stop())

		t1 := w.AfterFunc(time.Second, func() { ran[1].Add(1) })
		require.Same(t, timerBehind(t0), timerBehind(t1), "a stopped call's timer is reused")
		require.True(t, t0 != t1, "two calls have the same Timer")
		assert.False(t, t0.Stop(), "the stopped call's Timer stopped the next call")
		assert.Equal(t, 1, w.Len())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.EqualValues(t, 1, ran[1].Load())

		t2 := w.AfterFunc(time.Second, func() { ran[2].Add(1) })
		require.Same(t, timerBehind(t1), timerBehind(t2), "a fired call's timer is reused")
		assert.False(t, t1.Stop(), "the fired call's Timer stopped the next call")
		assert.False(t, t0.Stop())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.EqualValues(t, [3]int32{0, 1, 1}, [3]int32{ran[0].Load(), ran[1].Load(), ran[2].Load()})
	})
}

// No two calls get the same Timer: a timer serves timerSize calls, each
// with a Timer of its own, and then makes way for a new one.
func TestEveryCallHasItsOwnTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := New(WithShards(1))
		defer w.Stop()
		const calls = 3*timerSize + 5
		seen := map[circulation.Timer]int{}
		behind := map[*timer]int{}
		var tms []circulation.Timer
		for i := range calls {
			tm := w.AfterFunc(time.Second, func() {})
			if j, ok := seen[tm]; ok {
				t.Fatalf("call %d got the Timer of call %d", i, j)
			}
			seen[tm] = i
			behind[timerBehind(tm)]++
			tms = append(tms, tm)
			require.True(t, tm.Stop())
		}
		assert.Len(t, behind, 4, "each timer serves timerSize calls")
		for tm, n := range behind {
			assert.LessOrEqual(t, n, timerSize, "timer %p", tm)
		}
		for i, tm := range tms {
			assert.False(t, tm.Stop(), "call %d", i)
		}
		assert.Zero(t, w.Len())
	})
}

// A shard keeps at most keepTimers timers for reuse, and none after
// Wheel.Stop. An inline wheel does not reuse the timers it fires: its
// goroutine still refers to them until their callbacks start.
func TestReuseIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		free := func(w *Wheel) int {
			n := 0
			for _, sh := range w.shards {
				sh.mu.Lock()
				n += len(sh.free)
				sh.mu.Unlock()
			}
			return n
		}
		w := New(WithShards(1))
		var tms []circulation.Timer
		for range 3 * keepTimers {
			tms = append(tms, w.AfterFunc(time.Second, func() {}))
		}
		for _, tm := range tms {
			tm.Stop()
		}
		assert.Equal(t, keepTimers, free(w))
		w.Stop()
		assert.Zero(t, free(w))

		in := New(WithShards(1), WithInlineCallbacks())
		defer in.Stop()
		held := in.AfterFunc(time.Second, func() {})
		for range 10 {
			in.AfterFunc(time.Second, func() {})
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Zero(t, free(in), "an inline wheel reused a timer it fired")
		assert.False(t, held.Stop())
		assert.Zero(t, free(in))
	})
}

// FuzzReuse arms, stops and lets fire timers of a one-shard wheel in a
// random order, stopping earlier calls' Timers whether they are over or
// not, so that stale Timers meet reused timers. Against a model of each
// call: Stop reports true exactly while the call is pending and has not
// been stopped, a callback runs at most once, never before its deadline,
// and never after its call's Stop reported true, and every call that was
// not stopped runs.
func FuzzReuse(f *testing.F) {
	f.Add(uint64(1), uint16(200))
	f.Add(uint64(2), uint16(500))
	f.Add(uint64(3), uint16(1000))
	f.Fuzz(func(t *testing.T, seed uint64, steps uint16) {
		synctest.Test(t, func(t *testing.T) {
			const tick = time.Millisecond
			w := New(WithShards(1), WithTick(tick), WithSlots(4))
			defer w.Stop()
			rng := rand.New(rand.NewPCG(seed, 9))
			type call struct {
				tm       circulation.Timer
				deadline time.Time
				ran      atomic.Int32
				early    atomic.Bool
				stopped  bool
			}
			var calls []*call
			for step := range int(steps) {
				switch op := rng.IntN(4); {
				case op == 0: // arm
					c := &call{deadline: time.Now().Add(time.Duration(rng.Int64N(int64(20 * tick))))}
					c.tm = w.AfterFunc(time.Until(c.deadline), func() {
						if time.Now().Before(c.deadline) {
							c.early.Store(true)
						}
						c.ran.Add(1)
					})
					calls = append(calls, c)
				case op == 1 && len(calls) > 0: // stop any call, stale or not
					c := calls[rng.IntN(len(calls))]
					synctest.Wait()
					now := time.Now()
					ok := c.tm.Stop()
					switch {
					case c.stopped:
						require.False(t, ok, "step %d: a second Stop reported true", step)
					case now.Before(c.deadline):
						require.True(t, ok, "step %d: Stop of a pending call reported false", step)
					case now.Sub(c.deadline) > tick:
						require.False(t, ok, "step %d: Stop of a call a tick past its deadline reported true", step)
					}
					if ok {
						require.Zero(t, c.ran.Load(), "step %d: Stop reported true after the callback ran", step)
					}
					c.stopped = c.stopped || ok
				default: // let time pass
					time.Sleep(time.Duration(rng.Int64N(int64(3 * tick))))
				}
			}
			time.Sleep(21 * tick)
			synctest.Wait()
			for i, c := range calls {
				want := int32(1)
				if c.stopped {
					want = 0
				}
				require.Equal(t, want, c.ran.Load(), "call %d (stopped %v)", i, c.stopped)
				require.False(t, c.early.Load(), "call %d ran early", i)
			}
			require.Zero(t, w.Len())
		})
	})
}

// Stopping the oldest timer and arming a new one, the steady load of a
// server's timeouts, reuses timers: about one allocation (a batch of four
// timers) per 4*timerSize operations, where taking a new timer for every
// call made one per four.
func TestSteadyLoadAllocatesNextToNothing(t *testing.T) {
	w := New(WithShards(1))
	defer w.Stop()
	ring := make([]circulation.Timer, 1000)
	for i := range ring {
		ring[i] = w.AfterFunc(time.Hour, func() {})
	}
	const ops = 100_000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range ops {
		j := i % len(ring)
		ring[j].Stop()
		ring[j] = w.AfterFunc(time.Hour, func() {})
	}
	runtime.ReadMemStats(&after)
	mallocs := after.Mallocs - before.Mallocs
	assert.Less(t, mallocs, uint64(ops/64), "%d allocations in %d operations", mallocs, ops)
}

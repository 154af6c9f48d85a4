package wheel_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/wheel"
)

// record is what a callback saw: when it was armed, with what delay, and
// when it ran.
type record struct {
	armed time.Time
	d     time.Duration
	ran   time.Time
}

// Semantics 1 and 2: in a synctest bubble the clock only moves when every
// goroutine waits and the runtime wakes sleepers exactly on time, so the
// wheel's own lateness shows: never early, never late by a tick, and on
// time except for timers whose tick starts the span of a slot on a level
// above 0 (those wait for the slot's timers to move down, up to a tick).
func TestNeverEarlyLateLessThanATick(t *testing.T) {
	for _, tick := range []time.Duration{time.Millisecond, 7 * time.Millisecond, time.Second} {
		for _, slots := range []int{2, 64, 512} {
			t.Run(fmt.Sprintf("tick=%v/slots=%d", tick, slots), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					w := wheel.New(wheel.WithTick(tick), wheel.WithSlots(slots))
					defer w.Stop()
					rng := rand.New(rand.NewPCG(1, uint64(slots)))
					var mu sync.Mutex
					var recs []*record
					for range 400 {
						// Arm at scattered times, including between ticks.
						time.Sleep(time.Duration(rng.Int64N(int64(3 * tick))))
						r := &record{armed: time.Now(), d: time.Duration(rng.Int64N(int64(2000 * tick)))}
						w.AfterFunc(r.d, func() {
							mu.Lock()
							r.ran = time.Now()
							mu.Unlock()
						})
						recs = append(recs, r)
					}
					time.Sleep(2001 * tick)
					synctest.Wait()
					mu.Lock()
					defer mu.Unlock()
					// A deadline is kept to the nanosecond, or with a
					// tick over 134 ms to within tick/2^27 (see WithTick).
					grain := max(1, (tick+1<<27-1)>>27)
					onTime := 0
					for i, r := range recs {
						require.False(t, r.ran.IsZero(), "timer %d (d=%v) never ran", i, r.d)
						late := r.ran.Sub(r.armed) - r.d
						require.GreaterOrEqual(t, late, time.Duration(0), "timer %d (d=%v) ran early", i, r.d)
						require.Less(t, late, tick, "timer %d (d=%v) ran more than a tick late", i, r.d)
						if late < grain {
							onTime++
						}
					}
					// A tick starts a span above level 0 once in slots ticks.
					assert.GreaterOrEqual(t, onTime, len(recs)-len(recs)*4/slots-2, "timers late though their deadline had passed")
					assert.Equal(t, 0, w.Len())
				})
			})
		}
	}
}

// Semantic 3: any delay works, from nothing to centuries, across every
// level boundary of the default geometry (512 slots of 1 ms).
func TestAnyDelay(t *testing.T) {
	delays := []time.Duration{
		1, time.Millisecond - 1, time.Millisecond, time.Millisecond + 1,
		511 * time.Millisecond, 512 * time.Millisecond, 513 * time.Millisecond,
		512*512*time.Millisecond - 1, 512 * 512 * time.Millisecond, 512*512*time.Millisecond + 1,
		time.Hour, 3 * 24 * time.Hour, 400 * 24 * time.Hour, 100 * 365 * 24 * time.Hour,
		math.MaxInt64 - 1<<61, // near the largest Duration, every bit but bit 61 set
	}
	for _, d := range delays {
		t.Run(d.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := wheel.New()
				defer w.Stop()
				time.Sleep(time.Millisecond / 3) // start between ticks
				armed := time.Now()
				ran := make(chan time.Time, 1)
				w.AfterFunc(d, func() { ran <- time.Now() })
				time.Sleep(d - 1)
				synctest.Wait()
				require.Empty(t, ran, "ran before its deadline")
				time.Sleep(1 + wheel.DefaultTick)
				synctest.Wait()
				require.Len(t, ran, 1, "did not run within a tick of its deadline")
				late := (<-ran).Sub(armed) - d
				assert.GreaterOrEqual(t, late, time.Duration(0))
				assert.Less(t, late, wheel.DefaultTick)
			})
		})
	}
}

// AfterFunc with no delay starts f at once in its own goroutine; its Timer
// can no longer be stopped.
func TestZeroDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New()
		defer w.Stop()
		for _, d := range []time.Duration{0, -time.Hour} {
			ran := make(chan time.Time, 1)
			start := time.Now()
			tm := w.AfterFunc(d, func() { ran <- time.Now() })
			synctest.Wait()
			require.Len(t, ran, 1)
			assert.Equal(t, start, <-ran)
			assert.False(t, tm.Stop())
		}
	})
}

// Semantic 4: a callback that blocks never delays another timer.
func TestSlowCallbackDoesNotDelayOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New()
		defer w.Stop()
		release := make(chan struct{})
		start := time.Now()
		w.AfterFunc(10*time.Millisecond, func() { <-release })
		w.AfterFunc(10*time.Millisecond, func() { <-release })
		ran := make(chan time.Duration, 2)
		w.AfterFunc(10*time.Millisecond, func() { ran <- time.Since(start) })
		w.AfterFunc(20*time.Millisecond, func() { ran <- time.Since(start) })
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, ran, 2)
		assert.Equal(t, 10*time.Millisecond, <-ran)
		assert.Equal(t, 20*time.Millisecond, <-ran)
		close(release)
	})
}

// WithInlineCallbacks runs callbacks on the wheel's goroutine: a blocking
// one holds up the others, which is why it is opt-in.
func TestInlineCallbacksRunInOrderOnTheWheel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New(wheel.WithInlineCallbacks())
		defer w.Stop()
		start := time.Now()
		var got []time.Duration
		w.AfterFunc(10*time.Millisecond, func() { time.Sleep(50 * time.Millisecond) })
		w.AfterFunc(20*time.Millisecond, func() { got = append(got, time.Since(start)) })
		w.AfterFunc(0, func() { got = append(got, time.Since(start)) })
		time.Sleep(time.Second)
		synctest.Wait()
		// The zero delay waits for the next tick; the 20 ms timer waits
		// for the blocking callback.
		assert.Equal(t, []time.Duration{time.Millisecond, 60 * time.Millisecond}, got)
	})
}

// Semantic 5: with nothing due soon the wheel's goroutine sleeps; it looks
// at its shards a handful of times an hour, not once a tick.
func TestIdleWheelSleeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New()
		defer w.Stop()
		synctest.Wait()
		before := wheel.Scans(w)
		ran := make(chan struct{})
		w.AfterFunc(time.Hour, func() { close(ran) })
		time.Sleep(time.Hour - time.Nanosecond)
		synctest.Wait()
		select {
		case <-ran:
			t.Fatal("ran early")
		default:
		}
		time.Sleep(wheel.DefaultTick)
		<-ran
		// One wake for the AfterFunc's kick, one per level the timer
		// moves down, one to fire it.
		assert.LessOrEqual(t, wheel.Scans(w)-before, uint64(5))
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		assert.LessOrEqual(t, wheel.Scans(w)-before, uint64(5), "an empty wheel woke up")
	})
}

// Semantic 6: Stop reports whether it stopped the timer, exactly once, and
// the wheel lets go of the callback at once, though its deadline is far.
func TestStopFreesAtOnce(t *testing.T) {
	w := wheel.New()
	defer w.Stop()
	var sink atomic.Pointer[[1 << 20]byte]
	// arm returns a timer whose callback alone refers to a large object.
	arm := func() (interface{ Stop() bool }, weak.Pointer[[1 << 20]byte]) {
		big := new([1 << 20]byte)
		return w.AfterFunc(time.Hour, func() { sink.Store(big) }), weak.Make(big)
	}
	tm, ref := arm()
	runtime.GC()
	require.NotNil(t, ref.Value(), "the wheel does not hold the pending callback")
	require.Equal(t, 1, w.Len())
	require.True(t, tm.Stop())
	require.False(t, tm.Stop())
	require.Equal(t, 0, w.Len())
	runtime.GC()
	assert.Nil(t, ref.Value(), "the wheel still holds the stopped callback")
	runtime.KeepAlive(tm)
}

// A timer that fired cannot be stopped, and stopping one never touches
// another: the slot's last timer moves into the stopped one's place.
func TestStopAfterFireAndNeighbours(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New()
		defer w.Stop()
		var ran [8]atomic.Bool
		var tms [8]interface{ Stop() bool }
		for i := range tms {
			// All in one slot: same deadline.
			tms[i] = w.AfterFunc(time.Second, func() { ran[i].Store(true) })
		}
		assert.True(t, tms[2].Stop())
		assert.True(t, tms[7].Stop())
		assert.True(t, tms[0].Stop())
		assert.Equal(t, 5, w.Len())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		for i := range tms {
			stopped := i == 0 || i == 2 || i == 7
			assert.Equal(t, !stopped, ran[i].Load(), "timer %d", i)
			assert.False(t, tms[i].Stop(), "timer %d", i)
		}
		assert.Equal(t, 0, w.Len())
	})
}

// Semantic 8 and Stop's contract: pending timers are dropped and counted,
// no callback starts afterwards, the goroutine is gone, AfterFunc panics.
func TestStopDropsPendingAndLeaksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New(wheel.WithShards(3))
		var ran atomic.Int32
		var tms []interface{ Stop() bool }
		for i := range 100 {
			tms = append(tms, w.AfterFunc(time.Duration(i)*time.Second, func() { ran.Add(1) }))
		}
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 11, ran.Load()) // 0 s to 10 s
		require.Equal(t, 89, w.Len())
		assert.Equal(t, 89, w.Stop())
		assert.Equal(t, 0, w.Stop())
		assert.Equal(t, 0, w.Len())
		for i, tm := range tms {
			// A dropped timer reports true to its first Stop only.
			assert.Equal(t, i > 10, tm.Stop(), "timer %d", i)
			assert.False(t, tm.Stop(), "timer %d", i)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.EqualValues(t, 11, ran.Load())
		assert.PanicsWithValue(t, "wheel: AfterFunc on stopped Wheel", func() { w.AfterFunc(time.Second, func() {}) })
		assert.PanicsWithValue(t, "wheel: AfterFunc on stopped Wheel", func() { w.AfterFunc(0, func() {}) })
	})
	goleak.VerifyNone(t)
}

// Stop from inside an inline callback must not wait for itself.
func TestStopFromInlineCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One shard: callbacks due at the same tick run in the order
		// they were armed.
		w := wheel.New(wheel.WithInlineCallbacks(), wheel.WithShards(1))
		var ran atomic.Int32
		dropped := make(chan int, 1)
		w.AfterFunc(time.Second, func() { dropped <- w.Stop() })
		w.AfterFunc(time.Second, func() { ran.Add(1) })
		w.AfterFunc(time.Minute, func() { ran.Add(1) })
		time.Sleep(time.Hour)
		synctest.Wait()
		// The second 1 s callback was due but had not started: dropped
		// uncounted; the minute one was pending: dropped and counted.
		assert.Equal(t, 1, <-dropped)
		assert.EqualValues(t, 0, ran.Load())
	})
}

func TestNewPanicsOnInvalidOptions(t *testing.T) {
	assert.PanicsWithValue(t, "wheel: WithTick(0s): tick must be positive", func() { wheel.New(wheel.WithTick(0)) })
	assert.PanicsWithValue(t, "wheel: WithTick(-1ms): tick must be positive", func() { wheel.New(wheel.WithTick(-time.Millisecond)) })
	assert.PanicsWithValue(t, "wheel: WithSlots(0): slots must be in [1, 65536]", func() { wheel.New(wheel.WithSlots(0)) })
	assert.PanicsWithValue(t, "wheel: WithSlots(65537): slots must be in [1, 65536]", func() { wheel.New(wheel.WithSlots(1<<16 + 1)) })
	assert.PanicsWithValue(t, "wheel: WithShards(0): shards must be in [1, 1024]", func() { wheel.New(wheel.WithShards(0)) })
	w := wheel.New()
	defer w.Stop()
	assert.PanicsWithValue(t, "wheel: AfterFunc with nil func", func() { w.AfterFunc(time.Second, nil) })
}

// holdDispatch makes a wheel's goroutine, once it has collected due
// callbacks, close collected and wait until proceed is closed before it
// dispatches them. It is for one dispatch: the hook is removed when t ends.
func holdDispatch(t *testing.T) (collected, proceed chan struct{}) {
	collected, proceed = make(chan struct{}), make(chan struct{})
	wheel.SetDispatchHook(func() { close(collected); <-proceed })
	t.Cleanup(func() { wheel.SetDispatchHook(nil) })
	return collected, proceed
}

// When Stop returns, the wheel's goroutine has done its last work: Stop
// waits while the goroutine holds callbacks it has collected, and they
// are all handed over before Stop returns. (The goroutine may still be
// returning from its last call; goleak sees it gone moments later.)
func TestStopWaitsForTheGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		collected, proceed := holdDispatch(t)
		w := wheel.New()
		for range 1000 {
			w.AfterFunc(time.Second, func() {})
		}
		<-collected // the goroutine holds the 1000 due callbacks
		stopped := make(chan int)
		go func() { stopped <- w.Stop() }()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Stop returned while the wheel's goroutine held due callbacks")
		default:
		}
		close(proceed)
		assert.Equal(t, 0, <-stopped)
		assert.EqualValues(t, 1000, wheel.Submitted(w))
	})
	goleak.VerifyNone(t)
}

// A Stop from another goroutine while an inline wheel's goroutine holds due
// callbacks it has not started drops them as it drops pending timers: none
// runs, Stop counts them, and each Timer's Stop reports true once.
func TestStopDropsHeldInlineCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		collected, proceed := holdDispatch(t)
		w := wheel.New(wheel.WithInlineCallbacks())
		var ran atomic.Int64
		timers := make([]circulation.Timer, 1000)
		for i := range timers {
			timers[i] = w.AfterFunc(time.Second, func() { ran.Add(1) })
		}
		<-collected // the goroutine holds the 1000 due callbacks
		stopped := make(chan int)
		go func() { stopped <- w.Stop() }()
		synctest.Wait() // Stop has marked the wheel stopped and waits for the goroutine
		close(proceed)
		assert.Equal(t, 1000, <-stopped)
		assert.Zero(t, ran.Load())
		for i, tm := range timers {
			require.True(t, tm.Stop(), "timer %d: first Stop of a dropped timer", i)
			require.False(t, tm.Stop(), "timer %d: second Stop", i)
		}
	})
	goleak.VerifyNone(t)
}

// On an inline wheel, a Timer's Stop between the goroutine's collecting its
// callback and starting it prevents the call, and reports so.
func TestStopPreventsAHeldInlineCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		collected, proceed := holdDispatch(t)
		w := wheel.New(wheel.WithInlineCallbacks())
		defer w.Stop()
		var a, b atomic.Int64
		ta := w.AfterFunc(time.Second, func() { a.Add(1) })
		tb := w.AfterFunc(time.Second, func() { b.Add(1) })
		<-collected
		assert.True(t, ta.Stop())
		assert.False(t, ta.Stop())
		close(proceed)
		synctest.Wait()
		wheel.SetDispatchHook(nil)
		assert.Zero(t, a.Load())
		assert.EqualValues(t, 1, b.Load())
		assert.False(t, tb.Stop())
	})
	goleak.VerifyNone(t)
}

// A Stop concurrent with the first returns only once the first has, so
// that the wheel's goroutine is gone and no callback starts when either
// returns.
func TestConcurrentStopsWaitForTheFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		collected, proceed := holdDispatch(t)
		w := wheel.New()
		for range 1000 {
			w.AfterFunc(time.Second, func() {})
		}
		w.AfterFunc(time.Hour, func() {})
		<-collected // the goroutine holds the 1000 due callbacks
		stopped := make(chan int)
		for range 2 {
			go func() { stopped <- w.Stop() }()
		}
		synctest.Wait()
		select {
		case n := <-stopped:
			t.Fatalf("a Stop returned %d while the wheel's goroutine held due callbacks", n)
		default:
		}
		close(proceed)
		a, b := <-stopped, <-stopped
		assert.ElementsMatch(t, []int{0, 1}, []int{a, b})
		assert.EqualValues(t, 1000, wheel.Submitted(w))
		assert.Zero(t, w.Stop())
	})
	goleak.VerifyNone(t)
}

// A second Stop of a stopped timer reports false whatever tick its deadline
// was in, the first few included.
func TestSecondStopOfAnEarlyTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New(wheel.WithTick(time.Second))
		defer w.Stop()
		for _, d := range []time.Duration{1, time.Second + 1, 2*time.Second + 1, 3*time.Second + 1} {
			tm := w.AfterFunc(d, func() {})
			assert.True(t, tm.Stop(), d)
			assert.False(t, tm.Stop(), d)
		}
	})
}

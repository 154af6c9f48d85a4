package wheel_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/wheel"
)

// A Trigger bound to a wheel never runs its Func twice at once, even when
// fired from many goroutines while the Func blocks.
func TestTriggerNoOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New()
		defer w.Stop()
		var inside, runs atomic.Int32
		tr := circulation.Bind(w, func(ctx context.Context) (time.Duration, bool) {
			if inside.Add(1) != 1 {
				t.Error("Func runs twice at once")
			}
			runs.Add(1)
			time.Sleep(3 * time.Millisecond)
			inside.Add(-1)
			return 2 * time.Millisecond, runs.Load() < 50
		})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 20 {
					tr.FireAfter(time.Duration(g+i%3) * time.Millisecond)
					time.Sleep(time.Duration(1+g) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		require.NoError(t, tr.Stop(context.Background()))
		assert.Positive(t, runs.Load())
		assert.Equal(t, 0, w.Len())
	})
}

// The latest of FireAfter and Suspend wins, whether it moves the run
// sooner or later, and the run happens when the wheel says, never early.
func TestTriggerLatestWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New()
		defer w.Stop()
		start := time.Now()
		ran := make(chan time.Duration, 10)
		tr := circulation.Bind(w, func(context.Context) (time.Duration, bool) {
			ran <- time.Since(start)
			return 0, false
		})

		tr.FireAfter(time.Hour)
		tr.FireAfter(10 * time.Millisecond) // sooner wins
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, ran, 1)
		assert.Equal(t, 10*time.Millisecond, <-ran)

		start = time.Now()
		tr.FireAfter(10 * time.Millisecond)
		tr.FireAfter(time.Minute) // later wins
		time.Sleep(time.Second)
		synctest.Wait()
		require.Empty(t, ran)
		assert.Equal(t, 1, w.Len(), "the superseded timer was not stopped")
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Len(t, ran, 1)
		assert.Equal(t, time.Minute, <-ran)

		tr.FireAfter(10 * time.Millisecond)
		tr.Suspend() // suspend wins
		assert.Equal(t, 0, w.Len())
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Empty(t, ran)
		require.NoError(t, tr.Stop(context.Background()))
	})
}

// A Trigger that circulates on a wheel and is then stopped leaves no timer
// in the wheel and never runs again; its period follows the wheel's clock.
func TestTriggerStopLeavesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New()
		defer w.Stop()
		var runs atomic.Int32
		var last atomic.Int64
		start := time.Now()
		tr := circulation.Bind(w, func(context.Context) (time.Duration, bool) {
			runs.Add(1)
			last.Store(int64(time.Since(start)))
			return 100 * time.Millisecond, true
		})
		tr.Fire()
		time.Sleep(time.Second + 50*time.Millisecond)
		synctest.Wait()
		assert.EqualValues(t, 11, runs.Load()) // at 0, 100 ms, ..., 1 s
		assert.Equal(t, time.Second, time.Duration(last.Load()))
		assert.Equal(t, 1, w.Len())
		require.NoError(t, tr.Stop(context.Background()))
		assert.Equal(t, 0, w.Len())
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.EqualValues(t, 11, runs.Load())
	})
}

// Stopping the wheel under a Trigger does not wedge the Trigger: the first
// Stop of a dropped timer reports true (its callback will never run), so
// the Trigger's Stop returns and the Trigger holds nothing.
func TestTriggerStopAfterWheelStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New()
		tr := circulation.Bind(w, func(context.Context) (time.Duration, bool) { return 0, false })
		tr.FireAfter(time.Hour)
		require.Equal(t, 1, w.Stop())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, tr.Stop(ctx), "the Trigger waits for a timer the wheel dropped")
	})
}

// Stopping the wheel under a running Trigger crashes nothing, whichever
// comes first: the run's request for its next iteration finds the wheel
// stopped, the Trigger rests, its Stop returns nil, and the panic handler,
// if there is one, hears of it.
func TestWheelStoppedUnderRunningTrigger(t *testing.T) {
	for _, handler := range []bool{true, false} {
		name := "without panic handler"
		if handler {
			name = "with panic handler"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := wheel.New()
				started, release := make(chan struct{}), make(chan struct{})
				var runs atomic.Int32
				var handled atomic.Value
				var opts []circulation.Option
				if handler {
					opts = append(opts, circulation.WithPanicHandler(func(r any) { handled.Store(r) }))
				}
				tr := circulation.Bind(w, func(context.Context) (time.Duration, bool) {
					if runs.Add(1) == 1 {
						close(started)
						<-release
					}
					return time.Second, true
				}, opts...)
				tr.Fire()
				<-started
				w.Stop()
				close(release) // the run asks for its next iteration: (1s, true)
				synctest.Wait()
				require.NoError(t, tr.Stop(context.Background()))
				time.Sleep(time.Minute)
				assert.EqualValues(t, 1, runs.Load())
				if handler {
					assert.Equal(t, "wheel: AfterFunc on stopped Wheel", handled.Load())
				}
			})
		})
	}
}

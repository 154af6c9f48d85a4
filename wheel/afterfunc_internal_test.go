package wheel

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// AfterFunc takes a timer from its shard's batch only for a call it makes
// pending: not for one it starts at once because the wheel's goroutine has
// handled its tick already, nor for one it refuses because the shard was
// stopped. A timer taken and not used would keep f, and its batch, alive.
func TestAfterFuncTakesNoTimerItDoesNotKeep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := New()
		defer w.Stop()
		lockAll := func(f func(*shard)) {
			for _, sh := range w.shards {
				sh.mu.Lock()
				f(sh)
				sh.mu.Unlock()
			}
		}
		untouched := func() {
			t.Helper()
			lockAll(func(sh *shard) {
				assert.Nil(t, sh.batch.timers)
				assert.Zero(t, sh.count)
			})
		}

		// The goroutine's clock is far ahead of this call's reading.
		lockAll(func(sh *shard) { sh.cur = 1 << 40 })
		var ran atomic.Int64
		tm := w.AfterFunc(time.Second, func() { ran.Add(1) })
		synctest.Wait()
		assert.EqualValues(t, 1, ran.Load())
		assert.False(t, tm.Stop())
		untouched()

		// Stop has stopped the shards but not yet set closed.
		lockAll(func(sh *shard) { sh.stopped = true })
		assert.PanicsWithValue(t, "wheel: AfterFunc on stopped Wheel", func() {
			w.AfterFunc(time.Second, func() {})
		})
		untouched()
	})
}

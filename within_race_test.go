package circulation_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation"
)

// gatedScheduler is the runtime's timers, except that its first AfterFunc
// waits for release: the arming that calls it has published its version,
// and its timer has not reached the pending slot yet.
type gatedScheduler struct {
	once    sync.Once
	blocked chan struct{} // closed when the first AfterFunc waits
	release chan struct{} // closed to let it go on
}

func (g *gatedScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	g.once.Do(func() {
		close(g.blocked)
		<-g.release
	})
	return time.AfterFunc(d, f)
}

// A FireWithin that looked at the pending slot while an earlier
// FireWithin's arming, due sooner, was still on its way there, and that
// publishes after that arming arrived, must not push the run back to its
// own later time: earliest wins. The earlier call had returned, its
// arming in place, and nothing compares the two later.
func TestFireWithinRaceWithArmingOnItsWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gatedScheduler{blocked: make(chan struct{}), release: make(chan struct{})}
		start := time.Now()
		var mu sync.Mutex
		var runs []time.Duration
		tr := circulation.Bind(g, func(context.Context) (time.Duration, bool) {
			mu.Lock()
			runs = append(runs, time.Since(start))
			mu.Unlock()
			return 0, false
		})
		first := make(chan struct{})
		go func() {
			tr.FireWithin(time.Minute)
			close(first)
		}()
		<-g.blocked // the first call has published; its timer is not in the slot yet
		var once sync.Once
		circulation.SetKeepHook(func() {
			once.Do(func() {
				// The second call found nothing to keep; the first
				// call's arming now reaches the slot, and the call
				// returns, before the second one publishes.
				close(g.release)
				<-first
			})
		})
		defer circulation.SetKeepHook(nil)
		tr.FireWithin(3 * time.Minute)
		time.Sleep(10 * time.Minute)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []time.Duration{time.Minute}, runs, "FireWithin(1m), then FireWithin(3m): one run, at 1m")
		assert.NoError(t, tr.Stop(context.Background()))
	})
}

package circulation_test

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
)

// A run is superseded by every call made after it began, however many: the
// version may have gone all the way round the version space, or more than
// half of it, and come back to the value the run began with or pass it.
// SkipVersions stands for the calls (a whole turn of them would take
// seconds of real Fires).
func TestRunOutlivesVersionWrap(t *testing.T) {
	for _, tt := range []struct {
		name    string
		calls   uint32 // FireAfter calls made while the run is in flight
		suspend bool   // and then a Suspend
	}{
		{"a whole turn, then Suspend", circulation.VersionSpace - 1, true}, // the version is back where the run began
		{"half a turn, then Suspend", circulation.VersionSpace / 2, true},
		{"half a turn and one, then Suspend", circulation.VersionSpace/2 + 1, true},
		{"just under half a turn, then Suspend", circulation.VersionSpace/2 - 1, true},
		{"a whole turn", circulation.VersionSpace, false}, // no Suspend: the run goes on uncancelled
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var runs atomic.Int32
				release := make(chan struct{})
				ctxErr := make(chan error, 1)
				tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
					if runs.Add(1) == 1 {
						<-release
						ctxErr <- ctx.Err()
					}
					return time.Millisecond, true
				})
				tr.Fire()
				synctest.Wait() // the first run is in flight
				v := circulation.Version(tr)
				circulation.SkipVersions(tr, tt.calls)
				total := tt.calls
				if tt.suspend {
					tr.Suspend()
					total++
				}
				if total%circulation.VersionSpace == 0 {
					require.Equal(t, v, circulation.Version(tr), "the version is back where the run began")
				}
				close(release)
				time.Sleep(100 * time.Millisecond)
				if tt.suspend {
					assert.ErrorIs(t, <-ctxErr, context.Canceled, "Suspend did not cancel the run's context")
				} else {
					assert.NoError(t, <-ctxErr, "FireAfter cancels no run")
				}
				assert.EqualValues(t, 1, runs.Load(), "the superseded run's (1ms, true) was acted on")
				require.NoError(t, tr.Stop(context.Background()))
			})
		})
	}
}

// gateScheduler hands out timers that tests fire by hand; the first
// AfterFunc stalls until gate is closed.
type gateScheduler struct {
	mu      sync.Mutex
	timers  []*gateTimer
	entered chan struct{} // closed when the first AfterFunc stalls
	gate    chan struct{}
}

type gateTimer struct {
	s       *gateScheduler
	f       func()
	stopped bool
}

func (g *gateScheduler) AfterFunc(_ time.Duration, f func()) circulation.Timer {
	g.mu.Lock()
	tm := &gateTimer{s: g, f: f}
	g.timers = append(g.timers, tm)
	first := len(g.timers) == 1
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.gate
	}
	return tm
}

func (tm *gateTimer) Stop() bool {
	tm.s.mu.Lock()
	defer tm.s.mu.Unlock()
	stopped := !tm.stopped
	tm.stopped = true
	return stopped
}

// fireAll fires every timer not stopped, as many times as it takes.
func (g *gateScheduler) fireAll() {
	for {
		g.mu.Lock()
		var next *gateTimer
		for _, tm := range g.timers {
			if !tm.stopped {
				tm.stopped, next = true, tm
				break
			}
		}
		g.mu.Unlock()
		if next == nil {
			return
		}
		next.f()
	}
}

// An arming stalled in the Scheduler while the calls made meanwhile move the
// version on by half the version space or more must not displace the latest
// call's timer when it finally reaches the pending slot.
func TestStalledArmingKeepsTheLatest(t *testing.T) {
	for _, calls := range []uint32{circulation.VersionSpace/2 - 2, circulation.VersionSpace / 2, circulation.VersionSpace - 3} {
		g := &gateScheduler{entered: make(chan struct{}), gate: make(chan struct{})}
		var runs atomic.Int32
		tr := circulation.Bind(g, func(context.Context) (time.Duration, bool) {
			runs.Add(1)
			return 0, false
		})
		stalled := make(chan struct{})
		go func() {
			defer close(stalled)
			tr.FireAfter(time.Second) // stalls inside AfterFunc
		}()
		<-g.entered
		circulation.SkipVersions(tr, calls) // the calls made meanwhile
		tr.FireAfter(time.Second)           // the latest call
		close(g.gate)
		<-stalled
		g.fireAll()
		require.EqualValues(t, 1, runs.Load(), "after %d calls: the latest FireAfter ran %d times, want 1", calls, runs.Load())
		require.NoError(t, tr.Stop(context.Background()))
	}
}

// flakyScheduler is RuntimeScheduler, except that its AfterFunc panics
// while fail is set.
type flakyScheduler struct {
	fail   atomic.Bool
	mu     sync.Mutex
	timers []*time.Timer
}

func (s *flakyScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	if s.fail.Load() {
		panic("flaky: AfterFunc refused")
	}
	tm := time.AfterFunc(d, f)
	s.mu.Lock()
	s.timers = append(s.timers, tm)
	s.mu.Unlock()
	return tm
}

// A FireAfter whose Scheduler panics has still superseded the pending
// arming: its timer is stopped, as a FireAfter that armed would stop it.
func TestPanickingArmingStopsTheSuperseded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &flakyScheduler{}
		var runs atomic.Int32
		tr := circulation.Bind(s, func(context.Context) (time.Duration, bool) {
			runs.Add(1)
			return 0, false
		})
		tr.FireAfter(time.Hour)
		s.fail.Store(true)
		assert.Panics(t, func() { tr.FireAfter(time.Minute) })
		s.fail.Store(false)
		s.mu.Lock()
		first := s.timers[0]
		s.mu.Unlock()
		assert.False(t, first.Stop(), "the superseded timer is still pending")
		time.Sleep(2 * time.Hour)
		assert.Zero(t, runs.Load())
		require.NoError(t, tr.Stop(context.Background()))
	})
}

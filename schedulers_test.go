package circulation_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/wheel"
)

// schedulers are the Schedulers the behaviour suite runs over. slack is how
// late a callback may run on it (never early).
var schedulers = []struct {
	name  string
	slack time.Duration
	new   func(t *testing.T) circulation.Scheduler
}{
	{"runtime", 0, func(*testing.T) circulation.Scheduler { return nil }},
	{"chaos", 0, func(*testing.T) circulation.Scheduler { return chaosScheduler{} }},
	{"wheel", time.Millisecond, func(t *testing.T) circulation.Scheduler {
		w := wheel.New() // 1ms tick: a callback may run up to 1ms late, never early
		t.Cleanup(func() { w.Stop() })
		return w
	}},
}

// chaosScheduler delivers every callback twice, at its due time and again a
// little later, and its Stop reports success without cancelling anything:
// every stopped timer is still delivered. The Trigger must not care.
type chaosScheduler struct{}

func (chaosScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	time.AfterFunc(d, f)
	time.AfterFunc(d+time.Millisecond, f)
	return liar{}
}

type liar struct{}

func (liar) Stop() bool { return true }

// fakeScheduler holds callbacks until the test releases them, in any order,
// any number of times, stopped or not.
type fakeScheduler struct {
	mu      sync.Mutex
	timers  []*fakeTimer
	stopLie bool // Stop reports false and changes nothing
	closed  bool // AfterFunc panics, as a stopped wheel.Wheel does

	// onArm, if set, is called once, by the next AfterFunc before it
	// returns: that is, inside a Fire, after the Fire advanced the version
	// and before it installed its timer. Tests use it to interleave other
	// calls there.
	onArm func()
}

type fakeTimer struct {
	s       *fakeScheduler
	d       time.Duration
	f       func()
	stopped bool
	fired   bool
}

func (s *fakeScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		panic(errClosed)
	}
	ft := &fakeTimer{s: s, d: d, f: f}
	s.timers = append(s.timers, ft)
	hook := s.onArm
	s.onArm = nil
	s.mu.Unlock()
	if hook != nil {
		hook()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed { // closed by the hook: the timer was never armed
			ft.stopped = true
			panic(errClosed)
		}
	}
	return ft
}

var errClosed = errors.New("fake: AfterFunc on closed scheduler")

func (ft *fakeTimer) Stop() bool {
	ft.s.mu.Lock()
	defer ft.s.mu.Unlock()
	if ft.s.stopLie {
		return false
	}
	ok := !ft.stopped && !ft.fired
	ft.stopped = true
	return ok
}

// armed returns the timers armed so far, in order.
func (s *fakeScheduler) armed() []*fakeTimer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*fakeTimer(nil), s.timers...)
}

// live returns the timers neither stopped nor fired.
func (s *fakeScheduler) live() []*fakeTimer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var l []*fakeTimer
	for _, ft := range s.timers {
		if !ft.stopped && !ft.fired {
			l = append(l, ft)
		}
	}
	return l
}

// release runs the callback on the calling goroutine, whatever its state.
func (ft *fakeTimer) release() {
	ft.s.mu.Lock()
	ft.fired = true
	ft.s.mu.Unlock()
	ft.f()
}

// shuffled returns the armed timers in a random order, each one or more times.
func (s *fakeScheduler) shuffled(r *rand.Rand) []*fakeTimer {
	var out []*fakeTimer
	for _, ft := range s.armed() {
		for range 1 + r.IntN(3) {
			out = append(out, ft)
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// recoveringScheduler runs callbacks on the runtime's timers but recovers a
// panic in them, so that a test can watch what a panic leaves behind.
type recoveringScheduler struct {
	mu        sync.Mutex
	recovered []any
}

func (s *recoveringScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return time.AfterFunc(d, func() {
		defer func() {
			if r := recover(); r != nil {
				s.mu.Lock()
				s.recovered = append(s.recovered, r)
				s.mu.Unlock()
			}
		}()
		f()
	})
}

func (s *recoveringScheduler) panics() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]any(nil), s.recovered...)
}

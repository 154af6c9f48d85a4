package schedule_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/schedule"
)

// held is a Scheduler that calls back only when the test says so: any
// timer, any number of times, stopped or not. Its Stop reports true once
// for a timer that neither was stopped nor called back.
type held struct {
	mu     sync.Mutex
	timers []*heldTimer
}

type heldTimer struct {
	s              *held
	d              time.Duration
	f              func()
	code           uintptr
	stopped, fired bool
}

func (s *held) AfterFunc(d time.Duration, f func()) circulation.Timer {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &heldTimer{s: s, d: d, f: f, code: reflect.ValueOf(f).Pointer()}
	s.timers = append(s.timers, t)
	return t
}

func (t *heldTimer) Stop() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	ok := !t.stopped && !t.fired
	t.stopped = true
	return ok
}

// call runs the timer's callback on the calling goroutine.
func (t *heldTimer) call() {
	t.s.mu.Lock()
	t.fired = true
	t.s.mu.Unlock()
	t.f()
}

// all returns the timers armed so far, in order.
func (s *held) all() []*heldTimer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*heldTimer(nil), s.timers...)
}

// live returns the timers with the callback code of t that are neither
// stopped nor called back.
func (s *held) live(code uintptr) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.timers {
		if t.code == code && !t.stopped && !t.fired {
			n++
		}
	}
	return n
}

// A callback held back while the job was re-armed 65536 times is still
// not the current arming's: it arms nothing and handles no slot. (With a
// 16-bit generation it matched the current one, and the job had two
// timers.)
func TestStaleCallbackAfterGenerationWrap(t *testing.T) {
	var s held
	j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil },
		schedule.WithScheduler(&s))
	start(t, j)
	stale := s.all()[0]
	for range 1 << 15 {
		j.SetSchedule(schedule.Every(time.Hour))
	}
	n := len(s.all())
	require.Equal(t, 1, s.live(stale.code))
	stale.call()
	assert.Equal(t, n, len(s.all()), "the stale callback armed a timer")
	assert.Equal(t, 1, s.live(stale.code), "timers of the job live")
	stop(t, j)
	assert.Zero(t, s.live(stale.code))
}

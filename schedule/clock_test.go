package schedule_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
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
	at             time.Time // when the timer is due
	f              func()
	code           uintptr
	stopped, fired bool
}

func (s *held) AfterFunc(d time.Duration, f func()) circulation.Timer {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &heldTimer{s: s, d: d, at: time.Now().Add(d), f: f, code: reflect.ValueOf(f).Pointer()}
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

// A Scheduler that stops arming timers under running jobs (a stopped
// wheel.Wheel) crashes nothing and wedges nothing: a wake or a re-arm by
// the watch that finds it closed leaves the job resting, with no next
// slot; Resume and SetSchedule pass its panic to their caller once they
// have let go of the job; Stop returns nil; and nothing runs after.
func TestSchedulerClosedUnderJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Timers armed before 1.5s still call back; the machine sleeps
		// from 1.2s for 10s, so that the watch re-arms every job.
		s := &tally{closeAt: at(1500 * time.Millisecond), sleepFrom: at(1200 * time.Millisecond), sleepFor: 10 * time.Second}
		var l journal
		var jobs []*schedule.Job
		for _, name := range []string{"a", "b", "c"} {
			j := schedule.NewJob(name, schedule.Every(time.Second), l.work(0), schedule.WithScheduler(s),
				schedule.WithObserver(l.observe))
			start(t, j)
			jobs = append(jobs, j)
		}
		jobs[2].Pause()
		time.Sleep(20 * time.Second)
		for _, j := range jobs[:2] {
			assert.True(t, j.Next().IsZero(), "%s: Next, with no timer armed", j.Name())
		}
		assert.PanicsWithValue(t, errSchedulerClosed, jobs[2].Resume)
		assert.True(t, jobs[2].Next().IsZero())
		assert.PanicsWithValue(t, errSchedulerClosed, func() { jobs[0].SetSchedule(schedule.Every(time.Minute)) })
		for _, j := range jobs {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			assert.NoError(t, j.Stop(ctx), j.Name())
			cancel()
		}
		n := len(l.starts())
		time.Sleep(time.Hour)
		assert.Equal(t, n, len(l.starts()), "runs after Stop")
		_, live, _ := s.counts()
		assert.Zero(t, live)
	})
}

// The same with a real wheel.Wheel stopped under a started job, a paused
// one and one not yet started.
func TestWheelStoppedUnderJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := wheel.New()
		f := func(context.Context, schedule.Run) error { return nil }
		a := schedule.NewJob("a", schedule.Every(time.Second), f, schedule.WithScheduler(w))
		b := schedule.NewJob("b", schedule.Every(time.Second), f, schedule.WithScheduler(w))
		c := schedule.NewJob("c", schedule.Every(time.Second), f, schedule.WithScheduler(w))
		start(t, a)
		start(t, b)
		b.Pause()
		time.Sleep(2500 * time.Millisecond)
		w.Stop()
		const msg = "wheel: AfterFunc on stopped Wheel"
		assert.PanicsWithValue(t, msg, b.Resume)
		assert.PanicsWithValue(t, msg, func() { a.SetSchedule(schedule.Every(time.Minute)) })
		assert.PanicsWithValue(t, msg, func() { _ = c.Start(context.Background()) })
		time.Sleep(time.Minute)
		for _, j := range []*schedule.Job{a, b, c} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			assert.NoError(t, j.Stop(ctx), j.Name())
			assert.True(t, j.Next().IsZero(), j.Name())
			cancel()
		}
	})
}

// nanScheduler is a comparable Scheduler that is not equal to itself.
type nanScheduler struct{ nan float64 }

func (nanScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return time.AfterFunc(d, f)
}

// A Scheduler whose equality lies (a NaN field) cannot be found in the
// map of shared watches: each of its jobs gets a watch of its own, and the
// map does not grow by one entry per job for good.
func TestSchedulerUnequalToItselfLeavesNoWatch(t *testing.T) {
	before := schedule.Watches()
	s := nanScheduler{math.NaN()}
	for i := range 100 {
		j := schedule.NewJob(fmt.Sprint("j", i), schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil },
			schedule.WithScheduler(s))
		start(t, j)
		stop(t, j)
	}
	assert.LessOrEqual(t, schedule.Watches(), before, "watches of other tests may have gone meanwhile")
}

// A wheel.Wheel that its program stopped and dropped is not kept reachable
// by its jobs' shared watch, whatever became of the jobs: started and
// stopped, never started, started paused and stopped, or whose Start was
// cancelled.
func TestDroppedWheelIsCollected(t *testing.T) {
	before := schedule.Watches()
	var collected atomic.Bool
	func() {
		w := wheel.New()
		runtime.AddCleanup(w, func(b *atomic.Bool) { b.Store(true) }, &collected)
		f := func(context.Context, schedule.Run) error { return nil }
		a := schedule.NewJob("a", schedule.Every(time.Hour), f, schedule.WithScheduler(w))
		start(t, a)
		stop(t, a)
		schedule.NewJob("b", schedule.Every(time.Hour), f, schedule.WithScheduler(w))
		c := schedule.NewJob("c", schedule.Every(time.Hour), f, schedule.WithScheduler(w))
		c.Pause()
		start(t, c)
		stop(t, c)
		d := schedule.NewJob("d", schedule.Every(time.Hour), f, schedule.WithScheduler(w))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, d.Start(ctx), context.Canceled)
		w.Stop()
	}()
	for i := 0; i < 100 && !collected.Load(); i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	assert.True(t, collected.Load(), "the wheel is still reachable")
	assert.LessOrEqual(t, schedule.Watches(), before, "watches of other tests may have gone meanwhile")
}

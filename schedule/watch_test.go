package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/schedule"
)

// tally is a Scheduler on the runtime's timers that counts the calls of
// AfterFunc and the timers live: armed, and neither stopped nor come to
// calling their f. A callback waits lag after its timer fires before it
// calls f, so that a Stop in between reports false while f has not run.
// Its timers stop while the machine sleeps, from sleepFrom for sleepFor.
type tally struct {
	lag       time.Duration
	sleepFrom time.Time
	sleepFor  time.Duration
	closeAt   time.Time // from then on AfterFunc panics, as a stopped wheel's does; timers armed before still call back

	mu          sync.Mutex
	calls, live int
	liveBy      map[uintptr]int // by the code of f: the job's timers, and its watch's
	maxBy       map[uintptr]int
}

var errSchedulerClosed = errors.New("tally: AfterFunc on a closed Scheduler")

type tallyTimer struct {
	s    *tally
	t    *time.Timer
	code uintptr
	once sync.Once
}

func (c *tallyTimer) done() {
	c.once.Do(func() { c.s.mu.Lock(); c.s.live--; c.s.liveBy[c.code]--; c.s.mu.Unlock() })
}

func (c *tallyTimer) Stop() bool {
	ok := c.t.Stop()
	if ok {
		c.done()
	}
	return ok
}

func (s *tally) AfterFunc(d time.Duration, f func()) circulation.Timer {
	if !s.closeAt.IsZero() && !time.Now().Before(s.closeAt) {
		panic(errSchedulerClosed)
	}
	code := reflect.ValueOf(f).Pointer()
	s.mu.Lock()
	if s.liveBy == nil {
		s.liveBy, s.maxBy = map[uintptr]int{}, map[uintptr]int{}
	}
	s.calls++
	s.live++
	s.liveBy[code]++
	s.maxBy[code] = max(s.maxBy[code], s.liveBy[code])
	s.mu.Unlock()
	due := time.Now().Add(d)
	if s.sleepFor > 0 && due.After(s.sleepFrom) && time.Now().Before(s.sleepFrom.Add(s.sleepFor)) {
		due = due.Add(s.sleepFor)
	}
	c := &tallyTimer{s: s, code: code}
	c.t = time.AfterFunc(time.Until(due), func() {
		if s.lag > 0 {
			time.Sleep(s.lag)
		}
		c.done()
		f()
	})
	return c
}

// counts returns the calls of AfterFunc, the timers live, and the most
// timers live at once for each callback code, fewest first.
func (s *tally) counts() (calls, live int, maxLive []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.maxBy {
		maxLive = append(maxLive, n)
	}
	slices.Sort(maxLive)
	return s.calls, s.live, maxLive
}

// Idle jobs do not wake: over an idle hour, a hundred jobs whose slots are
// further away arm their timers once each, and the one watch of their
// Scheduler wakes once a second. When the last job stops, nothing of them
// is left on the Scheduler.
func TestIdleJobsDoNotWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s tally
		var jobs []*schedule.Job
		for i := range 100 {
			j := schedule.NewJob(fmt.Sprint("j", i), schedule.Every(2*time.Hour), func(context.Context, schedule.Run) error { return nil },
				schedule.WithScheduler(&s))
			start(t, j)
			jobs = append(jobs, j)
		}
		time.Sleep(time.Hour + time.Second/2)
		calls, live, _ := s.counts()
		assert.Equal(t, 100+3600+1, calls, "job timers, and the watch's every second")
		assert.Equal(t, 101, live)
		for _, j := range jobs {
			stop(t, j)
		}
		_, live, _ = s.counts()
		assert.Zero(t, live, "timers left after the last Stop")
		time.Sleep(time.Hour)
		calls, _, _ = s.counts()
		assert.Equal(t, 100+3600+1, calls, "the watch stopped with the last job")
	})
}

// A thousand jobs on one Scheduler whose timers stopped while the machine
// slept: the watch notices the sleep a second after the wake and each job
// runs once for its latest missed slot, with Reason CatchUp.
func TestSleepIsNoticedForEveryJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &tally{sleepFrom: at(90 * time.Second), sleepFor: 30 * time.Minute}
		var mu sync.Mutex
		runs := map[string][]string{}
		var jobs []*schedule.Job
		for i := range 1000 {
			name := fmt.Sprint("j", i)
			j := schedule.NewJob(name, schedule.Every(10*time.Minute), func(_ context.Context, r schedule.Run) error {
				mu.Lock()
				runs[name] = append(runs[name], fmt.Sprint(since(r.Due), " ", r.Reason, " at ", since(time.Now())))
				mu.Unlock()
				return nil
			}, schedule.WithScheduler(s))
			start(t, j)
			jobs = append(jobs, j)
		}
		time.Sleep(35 * time.Minute)
		for _, j := range jobs {
			stop(t, j)
		}
		require.Len(t, runs, 1000)
		for name, r := range runs {
			assert.Equal(t, []string{"30m0s CatchUp at 31m31s"}, r, name)
		}
	})
}

// A job never has two timers: a change made while its timer's callback has
// started, but not yet run (its Stop reports false), leaves the re-arming
// to that callback. Every slot is still handled once: run at its time, or
// Skipped by the Pause made while it was due.
func TestOneTimerPerJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &tally{lag: time.Millisecond}
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Second), l.work(0), schedule.WithScheduler(s),
			schedule.WithObserver(l.observe))
		start(t, j)
		for i := range 20 {
			time.Sleep(time.Until(j.Next()) + 500*time.Microsecond) // the callback is waiting out its lag
			switch i % 3 {
			case 0:
				j.SetSchedule(schedule.Every(time.Second))
			case 1:
				j.Pause()
				j.Resume()
			case 2:
				j.RunNow()
			}
		}
		stop(t, j)
		_, live, maxLive := s.counts()
		assert.Zero(t, live)
		assert.Equal(t, []int{1, 1}, maxLive, "most timers live at once: the job's, and its watch's")
		slots := map[string]string{}
		for _, r := range l.recs() {
			if r.Reason == schedule.Scheduled {
				assert.NotContains(t, slots, since(r.Due), "slot handled twice")
				slots[since(r.Due)] = r.Status.String()
			}
		}
		for i := range 20 {
			want := "Succeeded"
			if i%3 == 1 {
				want = "Skipped" // the slot due at the Pause
			}
			assert.Equal(t, want, slots[since(at(time.Duration(i+1)*time.Second))], "slot %d", i+1)
		}
	})
}

// chaos is a Scheduler that calls back every timer twice, a millisecond
// apart, and whose Stop reports true but stops nothing.
type chaos struct {
	calls atomic.Int32
}

type chaosTimer struct{}

func (chaosTimer) Stop() bool { return true }

func (c *chaos) AfterFunc(d time.Duration, f func()) circulation.Timer {
	c.calls.Add(1)
	time.AfterFunc(d, f)
	time.AfterFunc(d+time.Millisecond, f)
	return chaosTimer{}
}

// A Scheduler that calls back twice, and after Stop, never makes a job
// wake twice for one arming: each slot runs once, at its time, through
// SetSchedule, Pause and Resume, and its timers do not multiply.
func TestMisbehavingScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		var c chaos
		j := schedule.NewJob("j", schedule.Every(time.Second), l.work(100*time.Millisecond), schedule.WithScheduler(&c),
			schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(2500 * time.Millisecond)
		j.SetSchedule(schedule.Every(time.Second))
		j.Pause()
		j.Resume()
		time.Sleep(1750 * time.Millisecond)
		stop(t, j)
		assert.Equal(t, []string{"1s Succeeded Scheduled 1s-1.1s", "2s Succeeded Scheduled 2s-2.1s",
			"3s Succeeded Scheduled 3s-3.1s", "4s Succeeded Scheduled 4s-4.1s"}, l.summary())
		// The job: at Start, at each slot, SetSchedule, Resume (7); the
		// watch's Trigger, once a second from Start to the Pause (3) and
		// from the Resume on (2).
		assert.Equal(t, int32(12), c.calls.Load())
	})
}

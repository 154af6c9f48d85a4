package schedule

import (
	"context"
	"reflect"
	"runtime"
	"sync"
	"time"
	"weak"

	"github.com/circulation-go/circulation"
)

// A job waits for its next slot on one timer of its Scheduler, armed for
// the whole wait. Those timers run on the monotonic clock, which stops
// while the machine sleeps (golang/go#35012) and ignores steps of the wall
// clock, by which slots fall due. A watch notices both for all the jobs of
// a Scheduler at once: every watchEvery it compares how far the wall clock
// moved with how far the monotonic clock did (without a monotonic reading,
// as in a testing/synctest bubble, with the delay its own timer was armed
// for), and once they have parted by more than watchSlack it re-arms every
// job it holds for its next slot by the wall clock. A slot that the jump
// made due then falls due at once, under the Misfire policy.
const (
	watchEvery = time.Second
	watchSlack = 100 * time.Millisecond
)

// A watch holds the jobs of one Scheduler whose timer is armed, and the
// Trigger that watches the clocks for them while there is at least one.
// Lock order: watch.mu, then Job.mu.
type watch struct {
	sched circulation.Scheduler
	pool  pool // starts the runners of its jobs that have no RunLimit

	mu      sync.Mutex
	jobs    []*Job               // each job's index here is its idx-1
	t       *circulation.Trigger // the watcher; nil while jobs is empty
	retired *circulation.Trigger // the watcher, suspended when jobs emptied, until a Stop waits for it or jobs fill again
	prev    time.Time            // the watcher's latest reading of the clock
	drift   time.Duration        // how far the wall clock moved from the timers' clock since the jobs were last re-armed
}

// watches holds the shared watches, one per Scheduler. It holds them
// weakly: a watch lives as long as a job refers to it, and its entry then
// leaves the map, so that a Scheduler dropped with its jobs (a stopped
// wheel.Wheel) is not kept reachable.
var watches struct {
	mu sync.Mutex
	m  map[any]weak.Pointer[watch]
}

// watchFor returns the watch of the jobs on s. Jobs share the watch of
// their Scheduler, except where sharing could mix testing/synctest
// bubbles, whose timers must not be touched from another bubble: inside a
// bubble (where time.Now has no monotonic reading), a job on a Scheduler
// that is not a pointer, such as RuntimeScheduler, gets a watch of its own,
// and so does a job on a Scheduler that cannot be a map key or is not equal
// to itself (a NaN field).
func watchFor(s circulation.Scheduler) *watch {
	switch s.(type) {
	case nil, circulation.RuntimeScheduler, *circulation.RuntimeScheduler:
		s = circulation.RuntimeScheduler{}
	}
	v := reflect.ValueOf(s)
	if !v.Comparable() || !v.Equal(v) || (!hasMono(time.Now()) && v.Kind() != reflect.Pointer) {
		return &watch{sched: s}
	}
	watches.mu.Lock()
	defer watches.mu.Unlock()
	if w := watches.m[s].Value(); w != nil {
		return w
	}
	if watches.m == nil {
		watches.m = make(map[any]weak.Pointer[watch])
	}
	w := &watch{sched: s}
	watches.m[s] = weak.Make(w)
	runtime.AddCleanup(w, forgetWatch, any(s))
	return w
}

// forgetWatch removes the entry of s from watches once its watch is gone.
func forgetWatch(s any) {
	watches.mu.Lock()
	defer watches.mu.Unlock()
	if watches.m[s].Value() == nil {
		delete(watches.m, s)
	}
}

// hasMono reports whether t carries a monotonic clock reading.
func hasMono(t time.Time) bool { return t != t.Round(0) }

// sync lists j if its timer is armed and unlists it otherwise, starting
// the watcher with the first job and suspending it with the last. Callers
// call it, without j.mu, after a change that may have changed which.
func (w *watch) sync(j *Job) {
	w.mu.Lock()
	defer w.mu.Unlock()
	j.mu.Lock()
	want := j.armedLocked()
	switch {
	case want && j.flags&jobListed == 0:
		w.jobs = append(w.jobs, j)
		j.idx = int32(len(w.jobs))
		j.flags |= jobListed
	case !want && j.flags&jobListed != 0:
		i, n := j.idx-1, len(w.jobs)-1
		w.jobs[i] = w.jobs[n]
		w.jobs[i].idx = i + 1
		w.jobs[n] = nil
		w.jobs = w.jobs[:n]
		if cap(w.jobs) > 64 && n < cap(w.jobs)/4 {
			w.jobs = append([]*Job(nil), w.jobs...)
		}
		j.idx = 0
		j.flags &^= jobListed
	}
	j.mu.Unlock()
	switch {
	case len(w.jobs) > 0 && w.t == nil:
		t := w.retired // suspended: fired again, it runs check once more, never twice at once
		if t == nil {
			t = circulation.Bind(w.sched, w.check)
		}
		if !fireAfter(t, watchEvery) {
			return // a Scheduler that arms nothing (a stopped wheel.Wheel) has no clock to watch
		}
		w.prev, w.drift, w.t, w.retired = time.Now(), 0, t, nil
	case len(w.jobs) == 0 && w.t != nil:
		w.t.Suspend()
		w.retired, w.t = w.t, nil
	}
}

// fireAfter fires t after d, and reports false if the Scheduler panicked
// instead.
func fireAfter(t *circulation.Trigger, d time.Duration) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	t.FireAfter(d)
	return true
}

// quiesce waits until the watcher suspended when the watch emptied, if
// any, has returned.
func (w *watch) quiesce(ctx context.Context) error {
	w.mu.Lock()
	t := w.retired
	w.retired = nil
	w.mu.Unlock()
	if t == nil {
		return nil
	}
	return t.Stop(ctx)
}

// check is the watcher's Func.
func (w *watch) check(ctx context.Context) (time.Duration, bool) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if ctx.Err() != nil { // suspended under w.mu: this watcher retired
		return 0, false
	}
	wall := now.Round(0).Sub(w.prev.Round(0))
	timers := watchEvery // all that is known without a monotonic reading
	if hasMono(now) && hasMono(w.prev) {
		timers = now.Sub(w.prev)
	}
	w.prev = now
	w.drift += wall - timers
	if w.drift > watchSlack || w.drift < -watchSlack {
		w.drift = 0
		for _, j := range w.jobs {
			j.rearm()
		}
	}
	return watchEvery, true
}

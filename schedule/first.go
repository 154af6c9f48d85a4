package schedule

import (
	"strconv"
	"sync"
	"time"
)

// First returns the Schedule of the first n times of s after after, the
// times that Upcoming(s, after, n) lists: a job on it has n slots, and
// then none, as a job whose Schedule has ended. Each time counts once,
// whatever became of its slot: a slot Skipped or Missed uses its turn, as
// a firing does in Quartz's repeatCount (First(s, after, c+1) is a
// trigger with repeatCount c) and an action in Temporal's limited
// actions. The times depend on s, after and n alone, so every replica
// and every restart that makes the same First agrees on its last time,
// with nothing kept but its definition. A time is an instant: an hour
// that a change of daylight-saving time repeats has two only if s gives
// two, as a spec with a * in its hour field does.
//
// First finds its times by calling s.Next from after, one time after the
// other, and remembers how far it went: its first Next at t walks the
// times of s from after to t, up to n of them, and each Next later, one
// more. A First made long after after, of a frequent Schedule with a large
// n, walks its past times once (a year of one-minute slots is half a
// million calls of Next). First(s, after, 0) has no time. First panics if
// s is nil or n is negative.
func First(s Schedule, after time.Time, n int) Schedule {
	switch {
	case s == nil:
		panic("schedule: First with a nil Schedule")
	case n < 0:
		panic("schedule: First with a negative count " + strconv.Itoa(n))
	}
	return &first{s: s, after: after.Round(0), n: n, last: after.Round(0)}
}

// first is First's Schedule. It remembers the times of s it has walked:
// the k-th of them, last.
type first struct {
	s     Schedule
	after time.Time
	n     int
	job   bool // made by the job for WithMaxRuns: SetSchedule limits the new Schedule too

	mu    sync.Mutex
	k     int       // the times of s after after that are known: 0 to n
	last  time.Time // the k-th, or after if k is 0
	ended bool      // s has no time after last
}

// Next returns the first of the n times strictly after t, or the zero
// Time if none is left.
func (f *first) Next(t time.Time) time.Time {
	if t.Before(f.after) {
		t = f.after
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.k > 0 && t.Before(f.last) {
		return next(f.s, t) // at most last, one of the k known
	}
	for f.walkLocked() {
		if f.last.After(t) {
			return f.last
		}
	}
	return time.Time{}
}

// walkLocked finds the next time of s, the k+1-th, and reports whether
// there is one: false once k is n or s has ended. The caller holds f.mu.
func (f *first) walkLocked() bool {
	if f.k >= f.n || f.ended {
		return false
	}
	x := next(f.s, f.last)
	if x.IsZero() {
		f.ended = true
		return false
	}
	f.k++
	f.last = x
	return true
}

// remaining returns n less the times at or before t.
func (f *first) remaining(t time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.last.After(t) && f.walkLocked() {
	}
	done := f.k
	if f.k > 0 && f.last.After(t) {
		done--
	}
	return f.n - done
}

// WithMaxRuns limits the job to n slots: those of its Schedule after the
// time it has been scheduled since (WithSince's time, or the first Start
// that a SharedStore recorded; see Start), as First counts them, whether
// they ran or not. After its last slot the job has no Next, as a job
// whose Schedule has ended. On a SharedStore, every replica and every
// restart counts from the time the store recorded, and agrees on the last
// slot; on another Store the count begins at WithSince's time or else at
// each Start, and so does it on a SharedStore that cannot answer at
// Start: give WithSince for a count that holds whatever the store says.
// SetSchedule counts the slots of the new Schedule from the same time.
// Remaining reports the slots left. The default, n = 0, is no limit.
// Quartz's repeatCount, Temporal's limited actions (remaining actions),
// gocron's WithLimitedRuns. WithMaxRuns panics if n is negative.
func WithMaxRuns(n int) Option {
	if n < 0 {
		panic("schedule: WithMaxRuns(" + strconv.Itoa(n) + "): negative count")
	}
	return optionFunc(func(c *config) { c.maxRuns = n })
}

// limitLocked limits s to the job's WithMaxRuns slots after since. The
// caller holds j.mu.
func (j *Job) limitLocked(s Schedule, since time.Time) Schedule {
	f := First(s, since, j.cfg.maxRuns).(*first)
	f.job = true
	return f
}

// Remaining reports how many slots the job has left of its limit, and
// whether it has one: with WithMaxRuns once it has started, or with a
// Schedule made by First, the limit's n less the slots counted at or
// before now, whether they ran or not (Temporal's remaining actions). It
// is 0 once the last slot has fallen due, and stays above 0 if the
// Schedule ends first.
func (j *Job) Remaining() (int, bool) {
	j.mu.Lock()
	s := j.sched
	j.mu.Unlock()
	f, ok := s.(*first)
	if !ok {
		return 0, false
	}
	return f.remaining(time.Now()), true
}

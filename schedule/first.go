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
// more. That first walk is the cost of a First made long after after:
// up to n calls of s.Next, holding the First's lock (and a job's, at its
// Start and SetSchedule), which take some 100 ns each for a cron spec: a
// year of one-second slots is 31 million of them, seconds. Keep n to what
// the job needs, or after recent. First(s, after, 0) has no time.
// First panics if s is nil or n is negative.
func First(s Schedule, after time.Time, n int) Schedule {
	switch {
	case s == nil:
		panic("schedule: First with a nil Schedule")
	case n < 0:
		panic("schedule: First with a negative count " + strconv.Itoa(n))
	}
	return &first{s: s, after: after.Round(0), n: n, last: after.Round(0), at: after.Round(0)}
}

// first is First's Schedule. It remembers the times of s it has walked:
// the k-th of them, last. Apart from that walk, which Next takes as far
// as it is asked, remaining keeps a count of its own, of the times at or
// before the latest time it was asked: a Next asked ahead (a jitter's look
// at the slot after, a preview) does not make a time count before it has
// fallen due.
type first struct {
	s     Schedule
	after time.Time
	n     int
	job   bool // made by the job for WithMaxRuns: SetSchedule limits the new Schedule too
	// held says that the job could not read when its slots are counted
	// from, at its Start: it has no time until recoverStart, once its
	// store answers, gives the job a First counted from the right time.
	// after is then a guess, the latest it may be.
	held bool

	mu    sync.Mutex
	k     int       // the times of s after after that are known: 0 to n
	last  time.Time // the k-th, or after if k is 0
	ended bool      // s has no time after last
	// The count of remaining: done times, the latest at, at or before the
	// time remaining was last asked (after, if done is 0).
	done int
	at   time.Time
}

// Next returns the first of the n times strictly after t, or the zero
// Time if none is left.
func (f *first) Next(t time.Time) time.Time {
	if f.held {
		return time.Time{}
	}
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

// remaining returns n less the times at or before t, however far Next
// walked: its count goes on from the latest t asked, or, if t is earlier
// (the wall clock was set back), from after again. A walk of Next that has
// not passed t takes the count with it.
func (f *first) remaining(t time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at.After(t) {
		f.done, f.at = 0, f.after
	}
	if !f.last.After(t) {
		// Next's walk has not passed t: walk it on, to the first time
		// after t, counting those at or before t.
		for !f.last.After(t) {
			f.done, f.at = f.k, f.last
			if !f.walkLocked() {
				break
			}
		}
		return f.n - f.done
	}
	for f.done < f.n {
		x := next(f.s, f.at)
		if x.IsZero() || x.After(t) {
			break
		}
		f.done, f.at = f.done+1, x
	}
	return f.n - f.done
}

// WithMaxRuns limits the job to n slots: those of its Schedule after the
// time it has been scheduled since (WithSince's time, or the first Start
// that a SharedStore recorded; see Start), as First counts them, whether
// they ran or not. A RunNow does not count: the limit counts slots, as
// Quartz's repeatCount does, not runs, as gocron's WithLimitedRuns does.
// After its last slot the job has no Next, as a job whose Schedule has
// ended. SetSchedule counts the slots of the new Schedule from the same
// time. Remaining reports the slots left. The default, n = 0, is no
// limit. Quartz's repeatCount, Temporal's limited actions (remaining
// actions). WithMaxRuns panics if n is negative.
//
// On a SharedStore, every replica and every restart counts from the time
// the store recorded, and agrees on the last slot, provided they give the
// same WithSince, or none: the store keeps the earliest time it is given,
// and a replica started before another gave an earlier one keeps counting
// from the later. A SharedStore that cannot answer at Start holds the job:
// it runs no slot, and Next is zero, until the store answers, read again
// as Start reads a last record that failed; then the slots that fell due
// meanwhile are given the Misfire policy, as at a Start. On another Store
// the count begins at WithSince's time, or else at each Start: give
// WithSince for a count that holds across restarts.
//
// The job's Start and SetSchedule walk its Schedule from that time to
// now, up to n slots, holding the job's lock: see First for the cost.
func WithMaxRuns(n int) Option {
	if n < 0 {
		panic("schedule: WithMaxRuns(" + strconv.Itoa(n) + "): negative count")
	}
	return optionFunc(func(c *config) { c.maxRuns = n })
}

// limitLocked limits s to the job's WithMaxRuns slots after since. The
// caller holds j.mu.
func (j *Job) limitLocked(s Schedule, since time.Time) *first {
	f := First(s, since, j.cfg.maxRuns).(*first)
	f.job = true
	return f
}

// Remaining reports how many slots the job has left of its limit, and
// whether it has one: with WithMaxRuns once it has started, or with a
// Schedule made by First, the limit's n less the slots counted at or
// before now, whether they ran or not (Temporal's remaining actions). A
// slot that has not fallen due does not count, however far the Schedule
// was asked ahead. It is 0 once the last slot has fallen due, and stays
// above 0 if the Schedule ends first. While a job is held at Start (see
// WithMaxRuns), it counts from the Start, or WithSince's time, and may
// report more than is left.
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

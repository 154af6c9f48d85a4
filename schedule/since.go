package schedule

import (
	"context"
	"time"

	"github.com/circulation-go/circulation"
)

// WithSince says that the job has been scheduled since t, as a task defined
// at t is: a job with no record in its store then owes, at its first Start,
// the slots due after t, by its Misfire policy, as if it had run at t.
// Without it, a job that has no record owes the slots from its
// first Start on a SharedStore, and none on any other Store. A t after the
// Start, or zero, is the Start.
func WithSince(t time.Time) Option {
	return optionFunc(func(c *config) { c.since = t })
}

// maxNoted bounds the Missed records of one gap that a job writes to its
// store: the newest of them. The older ones reach only the Observer.
const maxNoted = 16

// sinceOf returns when the job has been scheduled since, for a Start at
// now of a job that has no record: the earliest of WithSince's time, the
// store's (a SharedStore's, which records the result), and now. read, if
// not nil, holds the store's answer, read by StartAll.
func (j *Job) sinceOf(ctx context.Context, now time.Time, read *lastRead) time.Time {
	t, _ := j.sinceKnown(ctx, now, read)
	return t
}

// sinceKnown is sinceOf, and reports whether the time is sure: false if
// the SharedStore failed, which may hold an earlier one.
func (j *Job) sinceKnown(ctx context.Context, now time.Time, read *lastRead) (time.Time, bool) {
	t := j.sinceBase(now)
	ss := j.cfg.shared
	if ss == nil {
		return t, true
	}
	if read != nil && read.sinceRead {
		if read.since.IsZero() { // the store failed
			return t, false
		}
		return minTime(t, read.since), true
	}
	got, err := ss.Since(ctx, j.name, t)
	if err != nil || got.IsZero() {
		return t, false // the store failed: what the job knows itself
	}
	return minTime(t, got), true
}

// sinceBase returns when the job has been scheduled since, by what it
// knows itself at a Start at now: WithSince's time, or now.
func (j *Job) sinceBase(now time.Time) time.Time {
	if s := j.cfg.since; !s.IsZero() && s.Before(now) {
		return s
	}
	return now
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// note queues the records among rs that the store is to hold, to be
// written to the job's store, so that it holds each slot's fate: the
// Missed records (the newest maxNoted of one gap) and the slots the
// overlap policy Skipped (kept). They are written on a goroutine of their
// own (writeNotes), one batch after another: a slow store holds up neither
// the job's timer nor the caller. Stop waits for the queued ones. A slot
// that has a record already keeps it; a store that fails loses them: they
// still reach the Observer.
func (j *Job) note(rs []Record) {
	if j.cfg.store == nil {
		return
	}
	var missed []Record
	for i := len(rs) - 1; i >= 0 && len(missed) < maxNoted; i-- {
		if kept(&rs[i]) {
			missed = append(missed, rs[i])
		}
	}
	if len(missed) == 0 {
		return
	}
	j.mu.Lock()
	if j.state == jobStopped { // Stop flushed the notes, or is flushing them
		j.mu.Unlock()
		return
	}
	r := j.active(time.Now().Round(0)).rareLocked()
	// The newest first, as maxNoted keeps: a queue that a stalled store
	// let grow keeps its newest records.
	r.notes = append(r.notes, missed...)
	if n := len(r.notes); n > 4*maxNoted {
		r.notes = append(r.notes[:0], r.notes[n-4*maxNoted:]...)
	}
	if r.noter == nil {
		r.noter = circulation.Bind(j.cfg.sched, j.writeNotes)
	}
	t := r.noter
	j.mu.Unlock()
	t.Fire()
}

// kept reports whether the store is to hold r, the record of a slot that
// did not run: Missed, or Skipped by the overlap policy, on this node or
// another (not a slot whose claim failed, which is owed, nor one a paused
// or stopped job dropped, which another node may still run).
func kept(r *Record) bool {
	switch {
	case r.Status == Missed:
		return true
	case r.Status != Skipped:
		return false
	}
	switch r.Err {
	case errOverlap.Error(), errFull.Error(), ErrReplaced.Error(), ErrBusy.Error():
		return true
	}
	return false
}

// writeNotes is the Func of the job's noter: it writes the queued records
// to the store, with a SharedStore's Note, or a Claim (with the record's
// status) and a Finish each on any other Store.
func (j *Job) writeNotes(context.Context) (time.Duration, bool) {
	j.mu.Lock()
	r := j.x.r
	rs := r.notes
	r.notes = nil
	j.mu.Unlock()
	if len(rs) == 0 {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), noteTimeout)
	defer cancel()
	if ns := j.cfg.shared; ns != nil {
		_ = ns.Note(ctx, rs)
		return 0, false
	}
	s := j.cfg.store
	for _, r := range rs {
		if err := s.Claim(ctx, r); err == nil {
			_ = s.Finish(ctx, r)
		} else if ctx.Err() != nil {
			break
		}
	}
	return 0, false
}

// flushNotes waits, at Stop, until the queued Missed records are written,
// and closes the noter.
func (j *Job) flushNotes(ctx context.Context) error {
	j.mu.Lock()
	var t *circulation.Trigger
	if j.x != nil && j.x.r != nil {
		t = j.x.r.noter
	}
	j.mu.Unlock()
	if t == nil {
		return nil
	}
	return t.Shutdown(ctx)
}

// noteTimeout bounds the writing of a gap's Missed records.
const noteTimeout = 10 * time.Second

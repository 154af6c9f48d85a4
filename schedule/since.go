package schedule

import (
	"context"
	"errors"
	"time"

	"github.com/circulation-go/circulation"
)

// WithSince says that the job has been scheduled since t, as a task defined
// at t is: a job with no record in its store then owes, at its first Start,
// the slots due after t, by its Misfire policy, as if it had run at t.
// Without it, a job that has no record owes the slots from its
// first Start on a SinceStore, and none on any other Store. A t after the
// Start, or zero, is the Start.
func WithSince(t time.Time) Option {
	return optionFunc(func(c *config) { c.since = t })
}

// A SinceStore is a Store that remembers, for each job, since when it has
// been scheduled, so that a job that has never run still owes, after a
// restart, the slots due while no process ran it (a once task due during
// the downtime, a new task's first slots). A Job on a SinceStore with no
// record calls Since at Start; StartAll calls SinceOf for many.
type SinceStore interface {
	Store
	// Since records t as the time job has been scheduled since, unless an
	// earlier one is recorded, and returns the earliest recorded.
	Since(ctx context.Context, job string, t time.Time) (time.Time, error)
	// SinceOf is Since for each job of jobs, with its time, in one call: it
	// returns the earliest time recorded of each.
	SinceOf(ctx context.Context, jobs map[string]time.Time) (map[string]time.Time, error)
}

// A NoteStore is a Store that records, in one call, slots that did not
// run. A Job records there the slots its Misfire policy left Missed (the
// newest maxNoted of each gap), so that each slot's fate is in the store,
// not only the Observer's; on a Store that is not a NoteStore it records
// each with Claim, with its Status, and Finish.
type NoteStore interface {
	Store
	// Note records each of rs, the finished record of a slot that did not
	// run, unless its slot has a record already. A Store that wraps
	// another, and is a NoteStore only if the other is, may return an
	// error wrapping errors.ErrUnsupported: the Job then records them as
	// on any other Store.
	Note(ctx context.Context, rs []Record) error
}

// maxNoted bounds the Missed records of one gap that a job writes to its
// store: the newest of them. The older ones reach only the Observer.
const maxNoted = 16

// sinceOf returns when the job has been scheduled since, for a Start at
// now of a job that has no record: the earliest of WithSince's time, the
// store's (a SinceStore's, which records the result), and now. read, if
// not nil, holds the store's answer, read by StartAll.
func (j *Job) sinceOf(ctx context.Context, now time.Time, read *lastRead) time.Time {
	t := j.sinceBase(now)
	ss, ok := j.cfg.store.(SinceStore)
	if !ok {
		return t
	}
	if read != nil && read.sinceRead {
		if read.since.IsZero() { // the store failed
			return t
		}
		return minTime(t, read.since)
	}
	got, err := ss.Since(ctx, j.name, t)
	if err != nil || got.IsZero() {
		return t // the store failed: what the job knows itself
	}
	return minTime(t, got)
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

// note queues the Missed records among rs, the newest maxNoted of them, to
// be written to the job's store, so that the store holds each slot's fate.
// They are written on a goroutine of their own (writeNotes), one batch
// after another: a slow store holds up neither the job's timer nor the
// caller. Stop waits for the queued ones. A slot that has a record already
// keeps it; a store that fails loses them: they still reach the Observer.
func (j *Job) note(rs []Record) {
	if j.cfg.store == nil {
		return
	}
	var missed []Record
	for i := len(rs) - 1; i >= 0 && len(missed) < maxNoted; i-- {
		if rs[i].Status == Missed {
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

// writeNotes is the Func of the job's noter: it writes the queued Missed
// records to the store, a NoteStore's Note, or a Claim (with the record's
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
	s := j.cfg.store
	if ns, ok := s.(NoteStore); ok {
		if err := ns.Note(ctx, rs); !errors.Is(err, errors.ErrUnsupported) {
			return 0, false
		}
	}
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

package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/circulation-go/circulation"
)

// ErrStarted is returned by Start on a Job started before.
var ErrStarted = errors.New("schedule: job already started")

// ErrStopped is returned by Start on a Job that Stop was called on, before
// Start or while Start read the store. The job never runs.
var ErrStopped = errors.New("schedule: job stopped")

// Start reads the job's last record from its store, applies the Misfire
// policy to the slots that passed since, and arms the job for its first
// slot strictly after now, which Next reports once Start returns. Catch-up
// runs start at once, on their own goroutines. A job with no record owes
// the slots since it has been scheduled (WithSince, or its first Start on
// a SharedStore), and none otherwise. The slots the Misfire policy leaves
// Missed are written to the store and reach the Observer.
//
// A store that fails here does not prevent the start: the job treats it as
// an outage and applies the Misfire policy at its first slot whose claim
// succeeds; a job with WithMaxRuns whose SharedStore cannot tell when its
// count began runs no slot until it can (see WithMaxRuns). Start returns ErrStarted if the job was started before, or
// another Start is under way; ErrStopped if Stop was called before Start
// returned; ctx.Err() if ctx is done before it reads the store (the job
// can then be started again); and the store's error if it cannot hold the
// job's name (see JobChecker).
func (j *Job) Start(ctx context.Context) error {
	return j.start(ctx, nil)
}

// lastRead is what a read of a job's last record found: the record, or
// ErrNoRecord, or the store's error.
type lastRead struct {
	rec Record
	err error
	// Of a job with no record on a SharedStore: the store's answer to
	// SinceOf, if sinceRead; zero if it failed.
	since     time.Time
	sinceRead bool
}

// start is Start, with the job's last record read already if read is not
// nil (StartAll).
func (j *Job) start(ctx context.Context, read *lastRead) error {
	j.mu.Lock()
	switch j.state {
	case jobNew:
		j.state = jobStarting
	case jobStopped:
		j.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrStopped, j.name)
	default:
		j.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrStarted, j.name)
	}
	j.mu.Unlock()
	abort := func(err error) error {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.state == jobStarting {
			j.state = jobNew
		}
		return err
	}
	if err := ctx.Err(); err != nil {
		return abort(err)
	}
	if c, ok := j.cfg.store.(JobChecker); ok {
		if err := c.CheckJob(j.name); err != nil {
			return abort(fmt.Errorf("schedule: job %.40q: %w", j.name, err))
		}
	}
	var last Record
	var since time.Time // of a job with no record: when it has been scheduled since
	known, outage := false, false
	sinceOK := false // since is the store's answer, or the job's own on a Store that keeps none
	if s := j.cfg.store; s != nil {
		if read == nil {
			read = &lastRead{}
			read.rec, read.err = s.Last(ctx, j.name)
		}
		r, err := read.rec, read.err
		switch {
		case err == nil:
			last, known = r, true
		case errors.Is(err, ErrNoRecord):
			since, sinceOK = j.sinceKnown(ctx, time.Now().Round(0), read)
		case ctx.Err() != nil:
			return abort(ctx.Err())
		default:
			outage = true
			j.storeFailed(s, err)
		}
	}
	// WithMaxRuns: the time the job's slots are counted from. A
	// SharedStore that cannot tell it holds the job (first.held) until
	// recoverStart reads it: counted from a later time, the job would run
	// slots past its last one.
	var counted time.Time
	held := false
	if j.cfg.maxRuns > 0 {
		counted, held = since, !sinceOK
		if counted.IsZero() {
			var ok bool
			counted, ok = j.sinceKnown(ctx, time.Now().Round(0), read)
			held = !ok
		}
	}

	var obs []Record
	var refused any // the Scheduler's panic when arming the job's timer
	stopped := false
	func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.state != jobStarting {
			stopped = true // by Stop, which leaves nothing for the job to run
			return
		}
		j.state = jobStarted
		now := time.Now().Round(0)
		if j.cfg.maxRuns > 0 {
			f := j.limitLocked(j.sched, counted)
			f.held = held
			j.sched = f
		}
		if outage {
			// Slots before the start may be owed: nothing is beneath
			// catching up. (A job that read its last record makes its
			// active state when it first needs it, as any other.)
			j.active(now).floor = time.Time{}
		}
		if held || outage && !j.paused() {
			// recoverStart reads the store's last record again, and gives
			// the slots missed before now what this Start would have; a
			// held job's, up to when the store answers, paused or not.
			r := j.active(now).rareLocked()
			r.gap, r.gapSched = now, j.sched
			r.recover = circulation.Bind(j.cfg.sched, j.recoverStart)
		}
		if j.paused() {
			return // a job started paused misses nothing before its start
		}
		// The slots after the last record are owed; with none, those
		// after since, as if the job had run then: a Start owes none at
		// its own instant either.
		from := last.Due
		if !known && since.Before(now) {
			from = since
		}
		if first := next(j.sched, from); !from.IsZero() && !first.IsZero() && !first.After(now) {
			obs = j.dueLocked(j.sched, first, now)
		}
		refused = j.armLocked(now)
		j.tellLocked(obs)
	}()
	if stopped {
		return fmt.Errorf("%w: %q", ErrStopped, j.name)
	}
	j.w.sync(j)
	j.told(obs)
	if j.cfg.lease != nil {
		// A job on a store without a lease enlists at its first claim
		// (enlistLate): an idle one holds nothing for it.
		j.enlist()
	}
	if outage || held {
		var t *circulation.Trigger
		j.mu.Lock()
		if r := j.x.r; r != nil { // nil if the job started paused, and not held
			t = r.recover
		}
		j.mu.Unlock()
		if t != nil {
			fireAfter(t, firstStartRetry)
		}
	}
	if refused != nil {
		panic(refused)
	}
	return nil
}

package schedule

import (
	"context"
	"errors"
	"time"
)

// A BackfillOption changes how Job.Backfill handles the slots of its
// range.
type BackfillOption interface{ apply(*backfillOptions) }

// backfillOptions are a Backfill's options; the zero value is the default.
type backfillOptions struct {
	again bool // RunAgain
}

type backfillFunc func(*backfillOptions)

func (f backfillFunc) apply(o *backfillOptions) { f(o) }

// RunAgain makes a Backfill run again the slots of its range that have a
// finished record (Succeeded, Failed, Canceled, Skipped or Missed) whose
// End is before the Backfill was called: such a slot is claimed again
// (AgainStore.ClaimAgain), and runs with Reason Backfill and an Attempt
// one more than its record's; BackfillProgress.RanAgain counts them. A
// slot whose run is in flight, or Released and waiting to be taken over,
// is left to that run, and counts in HadRecord, as does one whose run
// ended after the Backfill was called: of several Backfills with RunAgain
// of one range on replicas sharing a store, called before its run ended,
// only one runs it again, whichever comes first. A slot with no record
// runs as without RunAgain. A slot run again has the retries (WithRetry)
// its Attempt leaves, as a Recovered run does: one that used them all runs
// once more, without a retry.
//
// The job's Store must be an AgainStore (MemoryStore and
// schedule/sqlstore's Store are): on any other, Backfill returns an error
// naming the store's type, and runs nothing.
func RunAgain() BackfillOption {
	return backfillFunc(func(o *backfillOptions) { o.again = true })
}

// An AgainStore is a SharedStore that can claim a slot that has a record
// again, for a Backfill with RunAgain. MemoryStore and schedule/sqlstore's
// Store are AgainStores. Implementations must be safe for concurrent use.
type AgainStore interface {
	SharedStore

	// ClaimAgain claims again, for r.Node, the slot of r, whose record is
	// finished (any Status but Running and Released) and ended before
	// before (its End is before it, or zero, as on the records of slots
	// that did not run): the slot's record becomes r, Running, with a
	// fresh lease, Attempt one more than the finished record's, no End and
	// no Err. It returns that record. before is when the caller was asked
	// to run the slot again, by its clock: a run that ended after it ran
	// after the request, so that of two requests made before a run again
	// ended, one runs the slot. (A store compares it with End, as the
	// nodes' clocks recorded it: clocks that disagree by more than the
	// time between two requests may let both run.)
	//
	// It returns ErrClaimed if the slot has no such record: it has none
	// (or had one the store dropped, or is older than the history the
	// store keeps, where Claim would refuse it too), its run is in flight
	// or Released, or it ended at or after before; of several callers at
	// once, one claims it and the others get ErrClaimed. That answer comes
	// first. It then returns ErrBusy if the job r.Job has c.Max runs in
	// flight (c.Max > 0), counted as ClaimRun counts them, atomically with
	// the claim: a claim again is a run in flight as a ClaimRun's is, and
	// Renew, Finish, Release and Retry match its Node and new Attempt.
	// c.Replace is not heeded: a slot run again asks no run to end.
	ClaimAgain(ctx context.Context, r Record, c Concurrency, before time.Time) (Record, error)
}

// innermost returns the store s wraps (unwrapped), all the way in, or s:
// the one a user gave, for an error to name.
func innermost(s Store) Store {
	for {
		u, ok := s.(unwrapped)
		if !ok {
			return s
		}
		s = u.Unwrap()
	}
}

// claimAgain claims again the slot of p, a Backfill's that has a record,
// if the Backfill runs again the slots that have one (RunAgain), setting
// p.run.Attempt; it returns ErrClaimed otherwise, and the store's answer
// else. cancel cancels the run, as for claimIn.
//
//go:noinline
func (j *Job) claimAgain(ctx context.Context, cancel context.CancelCauseFunc, x *active, p *pending) error {
	j.mu.Lock()
	var before time.Time
	if f := j.fillLocked(p.run.Due); f != nil && f.opts.again {
		before = f.called
	}
	j.mu.Unlock()
	as, ok := x.store.(AgainStore)
	if before.IsZero() || !ok {
		return ErrClaimed // ok: Backfill checked it
	}
	r := &p.run
	rec := Record{Job: r.Job, Due: r.Due, Reason: r.Reason, Status: Running,
		Start: p.start, Node: j.cfg.nodeName(), Planned: p.planned}
	if j.cfg.lease == nil {
		// No Renew will tell the run it was replaced: the store calls
		// cancel instead.
		ctx = context.WithValue(ctx, stopKey{}, func(err error) { cancel(err) })
	}
	got, err := as.ClaimAgain(ctx, rec, j.cfg.concurrency(), before)
	if err != nil {
		return err
	}
	if got.Attempt < 1 {
		return errors.New("schedule: ClaimAgain returned a record of Attempt < 1")
	}
	r.Attempt = got.Attempt
	j.mu.Lock()
	if f := j.fillLocked(r.Due); f != nil {
		f.again = true
	}
	j.mu.Unlock()
	return nil
}

// ClaimAgain claims again the slot of r, whose record is finished and
// ended before before, if the job has fewer than c.Max runs in flight; see
// AgainStore. A Job of this process on m whose run a newer one replaces is
// told at once.
func (m *MemoryStore) ClaimAgain(ctx context.Context, r Record, c Concurrency, before time.Time) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.jobs[r.Job]
	i, found := find(rs, r.Due)
	if !found || m.findOpenLocked(r.Job, r.Due) != nil {
		return Record{}, ErrClaimed
	}
	if old := rs[i]; old.Status == Running || old.Status == Released || !old.End.Before(before) {
		return Record{}, ErrClaimed
	}
	// A run again is a claim of a slot that is not handed over: the runs
	// Released count, as for ClaimRun (queued).
	if err := m.admitLocked(r.Job, Concurrency{Max: c.Max}, true); err != nil {
		return Record{}, err
	}
	r.Status, r.Attempt, r.End, r.Err = Running, rs[i].Attempt+1, time.Time{}, ""
	rs[i] = r
	m.openLocked(r.Job, openClaim{due: r.Due, node: r.Node, attempt: r.Attempt, reason: r.Reason, stop: stopOf(ctx)})
	return r, nil
}

var _ AgainStore = (*MemoryStore)(nil)

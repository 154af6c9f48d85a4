package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// Claim records r before its run starts, with a fresh lease. It returns
// schedule.ErrClaimed if the slot (r.Job, r.Due) already has a record, or
// had one that pruning removed. An Attempt below 1 is recorded as 1; Renew
// and Finish match it the same way. Claim is ClaimRun with no
// Concurrency.
func (s *Store) Claim(ctx context.Context, r schedule.Record) error {
	_, err := s.ClaimRun(ctx, r, schedule.Concurrency{})
	return err
}

// ClaimRun claims the slot of r, as Claim does, if its job has fewer than
// c.Max runs in flight with a live lease, on any node (no limit if c.Max
// is 0), and returns when the claim's statement was sent: its lease began
// no earlier. It returns schedule.ErrBusy if the job has c.Max runs in
// flight, having asked them to end with c.Replace (Renew then answers
// their nodes schedule.ErrReplaced), but Recovered runs; see
// schedule.SharedStore. The count and the claim are one step: under Max
// 1 the claim takes its job's lane, which a unique index allows one run
// in flight at a time, and finds the job busy, too, with a run in flight
// outside the lane (claimed under another Max, or by a replica of schema
// version 2); under a higher Max, on PostgreSQL, the claims of a job lock
// its row of {t}_jobs in the statement, on SQLite the database's one
// writer counts alone. Claims of one job under different limits at once,
// as while a rolling deploy changes its Concurrency, may together exceed
// the lower one.
//
// Claims of many jobs at once are sent together, a statement for up to a
// thousand of them: a claim may wait behind those of other jobs when many
// fall due at once, and a schedule.Job counts its lease from the time
// ClaimRun returns, not from its call. A ClaimRun that ctx ends while it
// waits for its statement returns ctx.Err(), and claimed nothing. Once
// its statement is sent, ctx no longer cuts it short, for up to Lease():
// a statement cancelled mid-flight may have committed, and a claim whose
// caller believes it failed would hold its slot, not run, until its lease
// expired.
//
// A ClaimRun that returns an error other than ErrClaimed and ErrBusy may
// still have committed (the connection broke after the commit). The next
// claim of that slot through the same Store adopts that claim, if it is
// still running under the same node and attempt and the Store does not
// hold the slot otherwise, rather than returning ErrClaimed: a catch-up of
// the slot runs it at once, instead of a takeover once its lease expired.
func (s *Store) ClaimRun(ctx context.Context, r schedule.Record, c schedule.Concurrency) (time.Time, error) {
	s.mustBeMade()
	w, err := toRow(r)
	if err != nil {
		return time.Time{}, err
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	req := newRequest(opClaim, w)
	if r.Status == schedule.Running && testMutant != mutantLocalOverlap {
		req.m, req.rp = int64(max(c.Max, 0)), c.Replace
	}
	if err := s.b.do(ctx, req); err != nil {
		return time.Time{}, err
	}
	switch {
	case req.pruned && req.err != nil:
		return time.Time{}, fmt.Errorf("sqlstore: withdrawing the claim of %s at %v: %w", r.Job, r.Due, req.err)
	case req.pruned:
		return time.Time{}, schedule.ErrClaimed
	case req.err != nil:
		s.remember(w)
		return time.Time{}, fmt.Errorf("sqlstore: claiming %s at %v: %w", r.Job, r.Due, req.err)
	case req.busy:
		return time.Time{}, schedule.ErrBusy
	case !req.ok:
		// The slot has a record: maybe an unsure claim of this Store's,
		// which adopt hands over in a statement of its own.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.lease)
		defer cancel()
		since := time.Now()
		return since, s.adopt(actx, r, w)
	}
	s.hold(w)
	return req.sent, nil
}

// hold notes that s holds the claim w, alive now: an unsure claim of its
// slot is no longer adopted.
func (s *Store) hold(w row) {
	k := slotKey{w.job, w.due}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.unsure, k)
	if len(s.held) >= s.sweepAt {
		// Claims left running (a run that gave its lease up) are not
		// released: sweep those older than a lease, when the map has
		// doubled since the last sweep.
		for k, at := range s.held {
			if now.Sub(at) > s.opts.lease {
				delete(s.held, k)
			}
		}
		s.sweepAt = max(2*len(s.held), maxUnsure)
	}
	s.held[k] = now
}

// release notes that s no longer holds the claim of the slot of w: it
// finished, or its lease was lost.
func (s *Store) release(w row) {
	s.mu.Lock()
	delete(s.held, slotKey{w.job, w.due})
	s.mu.Unlock()
}

// holdsLocked reports whether s holds the slot k. The caller holds s.mu.
func (s *Store) holdsLocked(k slotKey) bool {
	at, ok := s.held[k]
	return ok && time.Since(at) <= s.opts.lease
}

// remember notes the claim w, whose statement failed, as unsure: it may
// have committed.
func (s *Store) remember(w row) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holdsLocked(slotKey{w.job, w.due}) {
		return // the slot's claim is this Store's, and alive: the failed one is not it
	}
	if len(s.unsure) >= maxUnsure {
		for k, u := range s.unsure {
			if time.Since(u.at) > s.opts.lease {
				delete(s.unsure, k)
			}
		}
		if len(s.unsure) >= maxUnsure {
			return
		}
	}
	s.unsure[slotKey{w.job, w.due}] = unsureClaim{node: w.node, attempt: w.attempt, at: time.Now()}
}

// adopt is Claim's answer when the slot of w has a record already. If an
// earlier Claim of the slot through s failed, that claim may have
// committed, and its caller, told it failed, does not run it: the slot
// would wait for the lease to expire and a takeover. If the record is that
// claim, still running with the same node and attempt, adopt hands it to
// w, with a fresh lease; otherwise the slot is another's: ErrClaimed. An
// unsure claim is adopted once, by the first Claim of its slot that finds
// the record, and never while s holds the slot: a claim of it made through
// s succeeded since, and is alive. Node names must differ between
// replicas, as for fencing.
func (s *Store) adopt(ctx context.Context, r schedule.Record, w row) error {
	k := slotKey{w.job, w.due}
	s.mu.Lock()
	u, ok := s.unsure[k]
	delete(s.unsure, k)
	held := s.holdsLocked(k)
	s.mu.Unlock()
	if !ok || u.attempt != w.attempt || held {
		return schedule.ErrClaimed
	}
	n, err := s.exec(ctx, s.q.adopt, w.job, w.due, u.node, u.attempt, w.reason, w.status, w.start, w.end, w.node, w.err,
		s.opts.lease.Microseconds())
	if err != nil {
		s.mu.Lock()
		s.unsure[k] = u // still unsure
		s.mu.Unlock()
		return fmt.Errorf("sqlstore: claiming %s at %v: %w", r.Job, r.Due, err)
	}
	if n == 0 {
		return schedule.ErrClaimed
	}
	if s.dialect == PostgreSQL {
		// The unsure claim was not checked against pruning.
		if err := s.checkPruned(ctx, r, w); err != nil {
			return err
		}
	}
	s.hold(w)
	return nil
}

// checkPruned withdraws a claim that raced a pruning of its slot, on
// PostgreSQL. The claim read the watermark in its statement's snapshot; if
// a pruning raised it and then deleted the slot's record after that
// snapshot, the insert found no conflict and succeeded. The watermark was
// raised before the delete, so a read after the insert sees it. (SQLite
// runs one writer at a time: its claim sees the latest watermark.)
func (s *Store) checkPruned(ctx context.Context, r schedule.Record, w row) error {
	var k int
	err := s.queryRow(ctx, s.q.pruned, w.job, w.due).Scan(&k)
	if err != nil {
		// The claim stands unchecked: its caller does not run it; the
		// next Claim of the slot through s adopts it, or its lease
		// expires, so the slot is not lost.
		s.remember(w)
		return fmt.Errorf("sqlstore: claiming %s at %v: %w", r.Job, r.Due, err)
	}
	if k == 0 {
		return nil
	}
	if _, err := s.exec(ctx, s.q.unclaim, w.job, w.due, w.node, w.attempt, w.status); err != nil {
		return fmt.Errorf("sqlstore: withdrawing the claim of %s at %v: %w", r.Job, r.Due, err)
	}
	return schedule.ErrClaimed
}

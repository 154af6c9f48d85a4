package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// Finish records the outcome of the claim of r.Node and r.Attempt: the
// Reason, Status (not Running), Start, End and Err of r. It returns
// schedule.ErrLeaseLost if the slot was taken over by another node, or
// another attempt. A Finish of a slot without a record claims it with r,
// so that a Missed or Skipped slot can be recorded in one call. Finish may
// be repeated.
//
// While the database fails, Finish tries again, for up to Lease() or until
// ctx is done: a claim left running would be taken over once its lease
// expired, and its slot run again.
func (s *Store) Finish(ctx context.Context, r schedule.Record) error {
	return s.end(ctx, r, r.Status == schedule.Released)
}

// end is Finish, and Release if released: a release that matches no
// running claim of its node returns schedule.ErrLeaseLost, and claims
// nothing.
func (s *Store) end(ctx context.Context, r schedule.Record, released bool) error {
	s.mustBeMade()
	w, err := toRow(r)
	if err != nil {
		return err
	}
	if r.Status == schedule.Running {
		// A running record without a lease would never be taken over.
		return errors.New("sqlstore: Finish with Record.Status Running")
	}
	// An outcome lost to a short outage would leave the claim running,
	// and its slot taken over and run again once the lease expired:
	// Finish keeps trying for up to a lease.
	deadline := time.Now().Add(s.opts.lease)
	pause := 20 * time.Millisecond
	for {
		err = s.finish(ctx, r, w, released)
		if err == nil || errors.Is(err, schedule.ErrLeaseLost) || ctx.Err() != nil || time.Now().Add(pause).After(deadline) {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		pause = min(2*pause, time.Second)
	}
	if err == nil || errors.Is(err, schedule.ErrLeaseLost) {
		s.release(w)
	}
	if err != nil {
		return err
	}
	if s.finishes.Add(1)%pruneEvery == 0 {
		// Pruning is housekeeping, done in the background, in batches
		// of jobs: the outcome is recorded, and the next pruning retries
		// what this one could not do.
		s.b.post(&request{op: opPrune, w: row{job: w.job}})
	}
	return nil
}

// settle returns a context that keeps the values of ctx but not its
// cancellation, bounded by d, for a write whose outcome the caller must
// know; or ctx.Err() if ctx is already done.
func settle(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	return c, cancel, nil
}

// finish makes one attempt at Finish, or at Release.
func (s *Store) finish(ctx context.Context, r schedule.Record, w row, released bool) error {
	if released {
		// A stopping node's, in a statement of its own: releases are
		// rare, and must not turn a finished record into a released one.
		n, err := s.exec(ctx, s.q.release, w.job, w.due, w.node, w.attempt, w.end, w.err)
		switch {
		case err != nil:
			return fmt.Errorf("sqlstore: releasing %s at %v: %w", r.Job, r.Due, err)
		case n == 0:
			return schedule.ErrLeaseLost
		}
		return nil
	}
	req := newRequest(opFinish, w)
	if err := s.b.do(ctx, req); err != nil {
		return err
	}
	if req.err != nil {
		return fmt.Errorf("sqlstore: finishing %s at %v: %w", r.Job, r.Due, req.err)
	}
	if req.ok {
		return nil
	}
	switch err := s.Claim(ctx, r); {
	case errors.Is(err, schedule.ErrClaimed):
		return schedule.ErrLeaseLost
	case err != nil:
		return err
	}
	return nil
}

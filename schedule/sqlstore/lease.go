package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// Renew extends the lease of r, a running record claimed by r.Node in
// attempt r.Attempt, to Lease() from now by the database's clock. It
// returns schedule.ErrLeaseLost if the slot has no such running claim: it
// was taken over, finished, released or pruned. A lease that expired but
// was not taken over yet is renewed. It returns schedule.ErrReplaced,
// having renewed the lease, once a claim asked the run to end
// (OverlapReplace).
func (s *Store) Renew(ctx context.Context, r schedule.Record) error {
	s.mustBeMade()
	w, err := toRow(r)
	if err != nil {
		return err
	}
	req := newRequest(opRenew, w)
	if err := s.b.do(ctx, req); err != nil {
		return err
	}
	if req.err != nil {
		return fmt.Errorf("sqlstore: renewing %s at %v: %w", r.Job, r.Due, req.err)
	}
	if !req.ok {
		s.release(w)
		return schedule.ErrLeaseLost
	}
	s.hold(w)
	if req.replaced {
		return schedule.ErrReplaced
	}
	return nil
}

// Release records r, a run of r.Node at r.Attempt that its node's Stop or
// Shutdown cut short, Released, with r's End and Err: its lease ends at
// once, and the next Reclaim of its job takes it over. It returns
// schedule.ErrLeaseLost if the slot has no running claim of r.Node at
// r.Attempt. Like Finish, it tries again while the database fails, for up
// to Lease() or until ctx is done.
func (s *Store) Release(ctx context.Context, r schedule.Record) (err error) {
	defer func(start time.Time) { s.done(hookRelease, 1, start, err) }(s.began())
	if testMutant == mutantNoRelease {
		r.Status = schedule.Canceled
		return s.end(ctx, r, false)
	}
	r.Status = schedule.Released
	return s.end(ctx, r, true)
}

// Retry records r, a failed attempt of the run that r.Node claimed in
// attempt r.Attempt, and claims the slot's next attempt, r.Attempt+1, for
// r.Node, with a fresh lease: the slot's record is then Running, with
// Attempt r.Attempt+1 and r's Reason, Start and Err (the failed attempt's
// message, until the next attempt's outcome replaces it) and no End;
// r.Status is not kept. Renew and Finish then match the new Attempt, and
// refuse the old one with schedule.ErrLeaseLost, as after a takeover. Retry
// returns schedule.ErrLeaseLost if the slot has no running claim of r.Node
// at r.Attempt: it was taken over, or finished. Like Claim, a Retry that
// has started is not cut short by ctx, for up to Lease().
func (s *Store) Retry(ctx context.Context, r schedule.Record) (err error) {
	s.mustBeMade()
	w, err := toRow(r)
	if err != nil {
		return err
	}
	ctx, cancel, err := settle(ctx, s.opts.lease)
	if err != nil {
		return err
	}
	defer cancel()
	defer func(start time.Time) { s.done(hookRetry, 1, start, err) }(s.began())
	n, err := s.exec(ctx, s.q.retry, w.job, w.due, w.node, w.attempt, w.reason, w.start, w.err, s.opts.lease.Microseconds())
	if err != nil {
		return fmt.Errorf("sqlstore: retrying %s at %v: %w", r.Job, r.Due, err)
	}
	if n == 0 {
		s.release(w)
		return schedule.ErrLeaseLost
	}
	w.attempt++
	s.hold(w)
	return nil
}

// Reclaim takes over, for node, the claim of job with the oldest Due that
// is Released, or Running with a lease expired by the database's clock
// (and not asked to end), under c.Max 1 the one in the job's lane first:
// it returns the record with Node set to node,
// Attempt incremented, Reason Recovered, Start now and a fresh lease; or
// schedule.ErrNoRecord if there is none. It takes nothing, and returns
// schedule.ErrBusy, if the job has c.Max runs in flight with a live lease
// (c.Max > 0). Of several nodes reclaiming at once, each claim goes to
// one. A running claim asked to end whose lease expired is recorded
// Canceled instead. Like Claim, a Reclaim that has started is not cut
// short by ctx, for up to Lease().
func (s *Store) Reclaim(ctx context.Context, job, node string, c schedule.Concurrency) (_ schedule.Record, err error) {
	s.mustBeMade()
	ctx, cancel, err := settle(ctx, s.opts.lease)
	if err != nil {
		return schedule.Record{}, err
	}
	defer cancel()
	defer func(start time.Time) { s.done(hookReclaim, 1, start, err) }(s.began())
	if s.dialect == SQLite {
		switch ok, err := s.exists(ctx, s.q.expired, job); {
		case err != nil:
			return schedule.Record{}, fmt.Errorf("sqlstore: reclaiming %s: %w", job, err)
		case !ok:
			return schedule.Record{}, schedule.ErrNoRecord
		}
	}
	max := int64(max(c.Max, 0))
	start := time.Now().UnixNano()
	end := time.Now().UnixNano()
	var w row
	err = s.retry(ctx, func() error {
		var err error
		w, err = s.reclaimOnce(ctx, job, node, max, start, end)
		return err
	})
	if max == 1 && isUniqueViolation(err) {
		// A claim took the job's lane meanwhile.
		return schedule.Record{}, schedule.ErrBusy
	}
	if err == sql.ErrNoRows {
		if max > 0 {
			// Nothing taken: the job is busy if there was a claim to take.
			if ok, err := s.exists(ctx, s.q.takeable, job); err == nil && ok {
				return schedule.Record{}, schedule.ErrBusy
			}
		}
		return schedule.Record{}, schedule.ErrNoRecord
	}
	if err != nil {
		return schedule.Record{}, fmt.Errorf("sqlstore: reclaiming %s: %w", job, err)
	}
	s.hold(w)
	return w.record(), nil
}

// reclaimOnce is one attempt at Reclaim: it closes the claims of job asked
// to end whose lease expired, and takes the oldest claim to take over, in
// one transaction. Under a limit above 1 it holds the job's lock on
// PostgreSQL, so that two nodes reclaiming two claims of the job at once
// count each other's; under 1, the job's lane decides.
func (s *Store) reclaimOnce(ctx context.Context, job, node string, max, start, end int64) (row, error) {
	lease := s.opts.lease.Microseconds()
	if s.dialect == SQLite {
		if _, err := s.execOnce(ctx, s.q.closeAsked, job, end, schedule.ErrReplaced.Error()); err != nil {
			return row{}, err
		}
		return scanRow(s.queryRow(ctx, s.q.reclaim, job, node, lease, start, max))
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return row{}, err
	}
	defer tx.Rollback()
	if max > 1 {
		s.stats.statements.Add(2)
		if _, err := tx.ExecContext(ctx, s.q.lockJob, job); err != nil {
			return row{}, err
		}
		if _, err := tx.ExecContext(ctx, s.q.lockJobRow, job); err != nil {
			return row{}, err
		}
	}
	s.stats.statements.Add(3)
	if _, err := tx.ExecContext(ctx, s.q.closeAsked, job, end, schedule.ErrReplaced.Error()); err != nil {
		return row{}, err
	}
	w, err := scanRow(tx.QueryRowContext(ctx, s.q.reclaim, job, node, lease, start, max))
	if err != nil && err != sql.ErrNoRows {
		return row{}, err
	}
	// Nothing to take over still commits the claims closed.
	if cerr := tx.Commit(); cerr != nil {
		return row{}, cerr
	}
	return w, err
}

// Expired returns the names of up to limit jobs that have a claim to take
// over: Released, or Running with a lease expired by the database's clock.
// The schedule.Jobs of a process on s look for them with one call of it
// every quarter of a lease, whatever their number: a million idle jobs cost
// four looks a lease. Each look is also the Store's heartbeat among the
// nodes, which shares the jobs among them (Owns): three statements in all.
func (s *Store) Expired(ctx context.Context, limit int) ([]string, error) {
	s.mustBeMade()
	if limit <= 0 {
		return nil, nil
	}
	var names []string
	err := s.retryOp(ctx, hookExpired, 1, func() error {
		names = names[:0]
		return s.query(ctx, s.q.expiredJobs, func(rows *sql.Rows) error {
			var job string
			if err := rows.Scan(&job); err != nil {
				return err
			}
			names = append(names, job)
			return nil
		}, limit)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: looking for expired claims: %w", err)
	}
	// The look is the Store's heartbeat among the nodes (Owns): a failed
	// one leaves the view it had, which ages out.
	_ = s.heartbeat(ctx)
	return names, nil
}

var _ schedule.SharedStore = (*Store)(nil)

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
// was taken over, finished or pruned. A lease that expired but was not
// taken over yet is renewed.
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
	return nil
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
func (s *Store) Retry(ctx context.Context, r schedule.Record) error {
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

var _ schedule.RetryStore = (*Store)(nil)

// Reclaim takes over, for node, the running record of job with the oldest
// Due whose lease has expired by the database's clock. It returns the
// record with Node set to node, Attempt incremented, Reason Recovered,
// Start now and a fresh lease; or schedule.ErrNoRecord if there is none.
// Of several nodes reclaiming at once, each expired claim goes to one.
// Like Claim, a Reclaim that has started is not cut short by ctx, for up
// to Lease().
func (s *Store) Reclaim(ctx context.Context, job, node string) (schedule.Record, error) {
	s.mustBeMade()
	ctx, cancel, err := settle(ctx, s.opts.lease)
	if err != nil {
		return schedule.Record{}, err
	}
	defer cancel()
	if s.dialect == SQLite {
		switch ok, err := s.exists(ctx, s.q.expired, job); {
		case err != nil:
			return schedule.Record{}, fmt.Errorf("sqlstore: reclaiming %s: %w", job, err)
		case !ok:
			return schedule.Record{}, schedule.ErrNoRecord
		}
	}
	start := time.Now().UnixNano()
	var w row
	err = s.retry(ctx, func() error {
		var err error
		w, err = scanRow(s.queryRow(ctx, s.q.reclaim, job, node, s.opts.lease.Microseconds(), start))
		return err
	})
	if err == sql.ErrNoRows {
		return schedule.Record{}, schedule.ErrNoRecord
	}
	if err != nil {
		return schedule.Record{}, fmt.Errorf("sqlstore: reclaiming %s: %w", job, err)
	}
	s.hold(w)
	return w.record(), nil
}

// Expired returns the names of up to limit jobs that have a running claim
// whose lease expired, by the database's clock. The schedule.Jobs of a
// process on s look for expired claims with one call of it every quarter
// of a lease, whatever their number: a million idle jobs cost four queries
// a lease.
func (s *Store) Expired(ctx context.Context, limit int) ([]string, error) {
	s.mustBeMade()
	if limit <= 0 {
		return nil, nil
	}
	var names []string
	err := s.retry(ctx, func() error {
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
	return names, nil
}

var _ schedule.ExpiredLister = (*Store)(nil)

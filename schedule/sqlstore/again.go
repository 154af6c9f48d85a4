package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// The statements of a claim again (schedule.AgainStore), built for the
// Store's dialect and table by again.
const (
	// againSQL claims again the finished record of slot ($1, $2) that
	// ended before $3 (or has no end: a slot that did not run), unless
	// pruning passed it, for node $4, with reason $5, start $6, planned
	// $7 and a fresh lease of $8 microseconds, at its next attempt, under
	// a limit of $9 runs in flight (0 for none), counted as a claim counts
	// them: under 1, no other slot of the job in flight with a live lease
	// or Released, and the claim takes the job's lane ({t}_lane, whose
	// unique index refuses a second run in it); above 1, fewer than $9
	// such runs, which on PostgreSQL the caller counts holding the job's
	// row of {t}_jobs. A running record (status 0, Released included) is
	// not finished: of two claims again at once, the second finds the
	// first's running row, as PostgreSQL checks it again once the first
	// commits. It returns the new attempt.
	againSQL = `UPDATE {t} SET node = $4, attempt = attempt + 1, reason = $5, status = 0, start_ns = $6,
	end_ns = NULL, err = '', planned_ns = $7, stop_asked = 0, released = 0, lease_until = {now} + $8,
	lane = CASE WHEN CAST($9 AS BIGINT) = 1 THEN 0 END
WHERE job = $1 AND due = $2 AND status <> 0 AND released = 0 AND (end_ns IS NULL OR end_ns < $3)
	AND NOT EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = $1 AND w.pruned_until >= $2)
	AND (CAST($9 AS BIGINT) = 0
		OR (CAST($9 AS BIGINT) = 1 AND NOT EXISTS (SELECT 1 FROM {t} f WHERE f.job = $1 AND f.status = 0
			AND f.due <> $2 AND (f.released = 1 OR f.lease_until >= {now})))
		OR (CAST($9 AS BIGINT) > 1 AND (SELECT COUNT(*) FROM {t} f WHERE f.job = $1 AND f.status = 0
			AND (f.released = 1 OR f.lease_until >= {now})) < CAST($9 AS BIGINT)))
RETURNING attempt`

	// againableSQL reports whether againSQL, the limit aside, would claim
	// the slot again: if it did not, the job was busy.
	againableSQL = `SELECT EXISTS (SELECT 1 FROM {t} WHERE job = $1 AND due = $2 AND status <> 0 AND released = 0
	AND (end_ns IS NULL OR end_ns < $3)
	AND NOT EXISTS (SELECT 1 FROM {t}_jobs w WHERE w.job = $1 AND w.pruned_until >= $2))`

	// unlaneJobSQL puts out of job $1's lane the run that holds it with an
	// expired lease, Released runs aside, as unlaneBatchSQL does for a
	// batch of claims: a claim again under a limit of 1 may then take it.
	unlaneJobSQL = `UPDATE {t} SET lane = 1 WHERE job = $1 AND lane = 0 AND status = 0 AND released = 0
	AND lease_until < {now}`
)

// ClaimAgain claims again, for r.Node, the slot of r whose record is
// finished (any status but Running and Released) and ended before
// before, by the End its node recorded (or has none, as a Skipped or
// Missed one), unless pruning passed the slot: its record becomes r,
// Running, with a fresh lease and Attempt one more than the finished
// one's; see schedule.AgainStore. It returns that record, with its Start
// as r gave it: the lease began no earlier.
//
// It returns schedule.ErrClaimed if the slot has no such record, and
// then schedule.ErrBusy if the job has c.Max runs in flight with a live
// lease or Released (c.Max > 0), counted as ClaimRun counts them: under
// Max 1 the claim again takes the job's lane, putting out of it a run
// whose lease expired; under a higher Max, on PostgreSQL, it holds the
// job's row of {t}_jobs while it counts. c.Replace is not heeded. A claim
// again is one statement (two under a higher Max on PostgreSQL, in a
// transaction), not batched: a Backfill makes one a slot. Like Claim, a
// ClaimAgain that has started is not cut short by ctx, for up to Lease();
// one that returns an error other than those two may have committed: the
// slot is then Running under r.Node, and is taken over once its lease
// expires.
func (s *Store) ClaimAgain(ctx context.Context, r schedule.Record, c schedule.Concurrency, before time.Time) (_ schedule.Record, err error) {
	s.mustBeMade()
	w, err := toRow(r)
	if err != nil {
		return schedule.Record{}, err
	}
	if before.IsZero() {
		return schedule.Record{}, errors.New("sqlstore: ClaimAgain before the zero Time")
	}
	b := before.UnixNano()
	switch { // out of range, as no End can be
	case before.Before(minTime):
		b = math.MinInt64
	case before.After(maxTime):
		b = math.MaxInt64
	}
	ctx, cancel, err := settle(ctx, s.opts.lease)
	if err != nil {
		return schedule.Record{}, err
	}
	defer cancel()
	defer func(start time.Time) { s.done(hookAgain, 1, start, err) }(s.began())
	q := &s.q
	m := int64(max(c.Max, 0))
	args := []any{w.job, w.due, b, w.node, w.reason, w.start, w.planned, s.opts.lease.Microseconds(), m}
	var attempt int64
	err = s.retry(ctx, func() error {
		var err error
		attempt, err = s.againOnce(ctx, q, m, args)
		if m == 1 && isUniqueViolation(err) {
			// The job's lane is held: by a run whose lease expired (which
			// the statement did not count), or by a claim since.
			if _, err := s.execOnce(ctx, q.unlane, w.job); err != nil {
				return err
			}
			attempt, err = s.againOnce(ctx, q, m, args)
		}
		return err
	})
	switch {
	case m == 1 && isUniqueViolation(err):
		return schedule.Record{}, schedule.ErrBusy
	case errors.Is(err, sql.ErrNoRows):
		if m > 0 {
			if ok, err := s.exists(ctx, q.againable, w.job, w.due, b); err == nil && ok {
				return schedule.Record{}, schedule.ErrBusy
			}
		}
		return schedule.Record{}, schedule.ErrClaimed
	case err != nil:
		return schedule.Record{}, fmt.Errorf("sqlstore: claiming %s at %v again: %w", r.Job, r.Due, err)
	}
	w.attempt, w.status, w.end, w.err = attempt, int64(schedule.Running), sql.NullInt64{}, ""
	s.hold(w)
	rec := w.record()
	rec.Due, rec.Start, rec.Planned = r.Due, r.Start, r.Planned // as given, not as stored
	return rec, nil
}

// againOnce runs againSQL once, under a limit m above 1 on PostgreSQL in
// a transaction that holds the job's row of {t}_jobs first, as the claims
// that count runs in flight do ({t}_claim_counted), so that it counts
// every claim of the job committed before it.
func (s *Store) againOnce(ctx context.Context, q *queries, m int64, args []any) (int64, error) {
	var attempt int64
	if m <= 1 || s.dialect != PostgreSQL {
		err := s.queryRow(ctx, q.again, args...).Scan(&attempt)
		return attempt, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	s.stats.statements.Add(3)
	if _, err := tx.ExecContext(ctx, s.q.lockJob, args[0]); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, s.q.lockJobRow, args[0]); err != nil {
		return 0, err
	}
	if err := tx.QueryRowContext(ctx, q.again, args...).Scan(&attempt); err != nil {
		return 0, err
	}
	return attempt, tx.Commit()
}

var _ schedule.AgainStore = (*Store)(nil)

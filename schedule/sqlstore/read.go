package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// Last returns the record with the latest Due of job, or
// schedule.ErrNoRecord.
func (s *Store) Last(ctx context.Context, job string) (schedule.Record, error) {
	s.mustBeMade()
	var w row
	err := s.retryOp(ctx, hookLast, 1, func() error {
		var err error
		w, err = scanRow(s.queryRow(ctx, s.q.last, job))
		return err
	})
	if err == sql.ErrNoRows {
		return schedule.Record{}, schedule.ErrNoRecord
	}
	if err != nil {
		return schedule.Record{}, fmt.Errorf("sqlstore: reading the last record of %s: %w", job, err)
	}
	return w.record(), nil
}

// LastOf returns the record with the latest Due of each of jobs that has
// one, by job name, in one statement per thousand jobs: schedule.StartAll
// reads the last records of the jobs it starts with it.
func (s *Store) LastOf(ctx context.Context, jobs []string) (map[string]schedule.Record, error) {
	s.mustBeMade()
	last := make(map[string]schedule.Record, len(jobs))
	for chunk := range slices.Chunk(jobs, maxBatch) {
		var buf []byte
		buf = append(buf, '[')
		for i, j := range chunk {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, toText(j))
		}
		buf = append(buf, ']')
		err := s.retryOp(ctx, hookLast, len(chunk), func() error {
			return s.query(ctx, s.bq.lastOf, func(rows *sql.Rows) error {
				w, err := scanRow(rows)
				if err != nil {
					return err
				}
				last[w.job] = w.record()
				return nil
			}, string(buf))
		})
		if err != nil {
			return nil, fmt.Errorf("sqlstore: reading the last records of %d jobs: %w", len(jobs), err)
		}
	}
	return last, nil
}

var _ schedule.LastReader = (*Store)(nil)

// History returns up to limit records of job, newest Due first. A limit of
// 0 returns none; a negative limit is an error.
func (s *Store) History(ctx context.Context, job string, limit int) ([]schedule.Record, error) {
	s.mustBeMade()
	if limit < 0 {
		return nil, fmt.Errorf("sqlstore: History limit %d is negative", limit)
	}
	if limit == 0 {
		return nil, nil
	}
	var recs []schedule.Record
	err := s.retryOp(ctx, hookHistory, 1, func() error {
		recs = recs[:0]
		rows, err := s.queryRows(ctx, s.q.history, job, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			w, err := scanRow(rows)
			if err != nil {
				return err
			}
			recs = append(recs, w.record())
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading the history of %s: %w", job, err)
	}
	return recs, nil
}

// Prune deletes the finished records of job that WithHistory and
// WithRetention do not keep, and returns how many it deleted. A slot whose record
// it deletes can no longer be claimed: the job's watermark, the newest Due
// it deleted, is raised before the records go. Finish calls Prune after
// every 16th Finish of the Store.
func (s *Store) Prune(ctx context.Context, job string) (_ int64, err error) {
	s.mustBeMade()
	defer func(start time.Time) { s.done(hookPrune, 1, start, err) }(s.began())
	keepOK, keepOther, cutoff, retained := s.opts.succeeded, s.opts.failed, s.cutoff(), s.opts.retained
	var mark sql.NullInt64
	err = s.retry(ctx, func() error {
		return s.queryRow(ctx, s.q.pruneMark, job, keepOK, keepOther, cutoff, retained).Scan(&mark)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: pruning %s: %w", job, err)
	}
	if !mark.Valid {
		return 0, nil
	}
	if _, err := s.exec(ctx, s.q.pruneWater, job, mark.Int64); err != nil {
		return 0, fmt.Errorf("sqlstore: pruning %s: %w", job, err)
	}
	n, err := s.exec(ctx, s.q.pruneDel, job, keepOK, keepOther, cutoff, retained, mark.Int64)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: pruning %s: %w", job, err)
	}
	return n, nil
}

// cutoff is the Due before which a record is too old for WithRetention to
// keep: Go's clock less the retention, read once for each pruning, and
// after every Due for WithRetention(0). Leases are measured by the
// database's clock, which the replicas must agree on; an age is not: a
// replica whose clock is a minute off keeps a minute more or less.
func (s *Store) cutoff() int64 {
	if s.opts.retention == 0 {
		return math.MaxInt64
	}
	return time.Now().UnixNano() - int64(s.opts.retention)
}

package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// Since records t as the time job has been scheduled since, unless an
// earlier time is recorded, and returns the earliest recorded: a
// schedule.Job with no record calls it at Start, so that the slots due
// while no process ran it are owed even if it never ran. The time is kept
// to the nanosecond in {t}_since, one row a job, written in one statement:
// of several Stores recording the same job at once, each gets the
// earliest of the times recorded so far, its own included. It returns an
// error if job cannot have records (CheckJob) or t is zero or out of the
// range a Store holds (years 1678 to 2262).
func (s *Store) Since(ctx context.Context, job string, t time.Time) (time.Time, error) {
	s.mustBeMade()
	if err := s.CheckJob(job); err != nil {
		return time.Time{}, err
	}
	if t.IsZero() || t.Before(minTime) || t.After(maxTime) {
		return time.Time{}, fmt.Errorf("sqlstore: Since(%s, %v): want a time in years 1678 to 2262", job, t)
	}
	var since int64
	err := s.retryOp(ctx, hookSince, 1, func() error { return s.queryRow(ctx, s.q.since, job, t.UnixNano()).Scan(&since) })
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlstore: recording since when %s is scheduled: %w", job, err)
	}
	return time.Unix(0, since), nil
}

// SinceOf is Since for each job of jobs, with its time, in a statement per
// thousand jobs: schedule.StartAll calls it for the jobs that have no
// record. Each time must be one Since takes.
func (s *Store) SinceOf(ctx context.Context, jobs map[string]time.Time) (map[string]time.Time, error) {
	s.mustBeMade()
	names := slices.Sorted(maps.Keys(jobs))
	rs := make([]*request, 0, min(len(names), maxBatch))
	got := make(map[string]time.Time, len(jobs))
	for chunk := range slices.Chunk(names, maxBatch) {
		rs = rs[:0]
		for _, job := range chunk {
			if err := s.CheckJob(job); err != nil {
				return nil, err
			}
			t := jobs[job]
			if t.IsZero() || t.Before(minTime) || t.After(maxTime) {
				return nil, fmt.Errorf("sqlstore: SinceOf(%s, %v): want a time in years 1678 to 2262", job, t)
			}
			rs = append(rs, &request{w: row{job: job, due: t.UnixNano(), attempt: 1}})
		}
		buf := appendRecords(nil, rs)
		err := s.retryOp(ctx, hookSince, len(rs), func() error {
			return s.query(ctx, s.bq.sinceOf, func(rows *sql.Rows) error {
				var job string
				var since int64
				if err := rows.Scan(&job, &since); err != nil {
					return err
				}
				got[job] = time.Unix(0, since)
				return nil
			}, string(buf))
		})
		if err != nil {
			return nil, fmt.Errorf("sqlstore: recording since when %d jobs are scheduled: %w", len(jobs), err)
		}
	}
	return got, nil
}

// Note records each of rs, the finished record of a slot that did not run
// (Missed, or Skipped by the overlap policy), unless its slot has a record
// already or pruning passed it, in a statement per thousand records.
func (s *Store) Note(ctx context.Context, rs []schedule.Record) error {
	s.mustBeMade()
	reqs := make([]*request, 0, min(len(rs), maxBatch))
	for chunk := range slices.Chunk(rs, maxBatch) {
		reqs = reqs[:0]
		for _, r := range chunk {
			w, err := toRow(r)
			if err != nil {
				return err
			}
			reqs = append(reqs, &request{w: w})
		}
		sortRequests(reqs)
		buf := appendRecords(nil, reqs)
		if err := s.retryOp(ctx, hookNote, len(reqs), func() error {
			_, err := s.exec(ctx, s.bq.note, string(buf))
			return err
		}); err != nil {
			return fmt.Errorf("sqlstore: noting %d records: %w", len(rs), err)
		}
	}
	return nil
}

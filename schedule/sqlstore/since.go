package sqlstore

import (
	"context"
	"fmt"
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
	err := s.retry(ctx, func() error { return s.queryRow(ctx, s.q.since, job, t.UnixNano()).Scan(&since) })
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlstore: recording since when %s is scheduled: %w", job, err)
	}
	return time.Unix(0, since), nil
}

var _ schedule.SinceStore = (*Store)(nil)

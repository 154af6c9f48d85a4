package cron

import (
	"context"
	"errors"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// handover returns the Store of a job that a Table makes at since: s,
// except that when s has no record of the job, Last reports one due at
// since. A job starts from its last record, applying its misfire policy
// to the slots after it, and catches up nothing without one; but a job
// that replaces another starts only once that one has stopped, and a slot
// that fell due meanwhile was neither's. So the job of a task that never
// ran yet takes the slots after the Apply that made it as missed, as it
// does those after a real record. The result is a LeaseStore if s is one.
func handover(s schedule.Store, since time.Time) schedule.Store {
	h := handoverStore{Store: s, since: since.Round(0)}
	if ls, ok := s.(schedule.LeaseStore); ok {
		return handoverLeaseStore{h, ls}
	}
	return h
}

type handoverStore struct {
	schedule.Store
	since time.Time
}

func (s handoverStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	r, err := s.Store.Last(ctx, job)
	if errors.Is(err, schedule.ErrNoRecord) {
		return schedule.Record{Job: job, Due: s.since, Status: schedule.Skipped}, nil
	}
	return r, err
}

// CheckJob is the Store's, if it checks job names.
func (s handoverStore) CheckJob(name string) error {
	if c, ok := s.Store.(schedule.JobChecker); ok {
		return c.CheckJob(name)
	}
	return nil
}

// Unwrap returns the Store the jobs of the Table share: the jobs on its
// handovers share its look for expired claims.
func (s handoverStore) Unwrap() schedule.Store { return s.Store }

// RunLimit is the Store's, if it has one: the Table's jobs share it.
func (s handoverStore) RunLimit() *schedule.RunLimit {
	if l, ok := s.Store.(interface{ RunLimit() *schedule.RunLimit }); ok {
		return l.RunLimit()
	}
	return nil
}

type handoverLeaseStore struct {
	handoverStore
	lease schedule.LeaseStore
}

func (s handoverLeaseStore) Lease() time.Duration { return s.lease.Lease() }

func (s handoverLeaseStore) Renew(ctx context.Context, r schedule.Record) error {
	return s.lease.Renew(ctx, r)
}

func (s handoverLeaseStore) Reclaim(ctx context.Context, job, node string) (schedule.Record, error) {
	return s.lease.Reclaim(ctx, job, node)
}

// LastOf reads the last records of many jobs in one call if the Store can,
// and one by one if not, with the handover's record for those that have
// none.
func (s handoverStore) LastOf(ctx context.Context, jobs []string) (map[string]schedule.Record, error) {
	m := map[string]schedule.Record{}
	if lr, ok := s.Store.(schedule.LastReader); ok {
		var err error
		if m, err = lr.LastOf(ctx, jobs); err != nil {
			return nil, err
		}
	} else {
		for _, j := range jobs {
			r, err := s.Store.Last(ctx, j)
			switch {
			case err == nil:
				m[j] = r
			case !errors.Is(err, schedule.ErrNoRecord):
				return nil, err
			}
		}
	}
	for _, j := range jobs {
		if _, ok := m[j]; !ok {
			m[j] = schedule.Record{Job: j, Due: s.since, Status: schedule.Skipped}
		}
	}
	return m, nil
}

// ClaimQueued is the Store's, if it queues claims; otherwise it is Claim,
// and the lease began no earlier than the call.
func (s handoverLeaseStore) ClaimQueued(ctx context.Context, r schedule.Record) (time.Time, error) {
	if q, ok := s.lease.(schedule.QueuedStore); ok {
		return q.ClaimQueued(ctx, r)
	}
	now := time.Now()
	return now, s.Store.Claim(ctx, r)
}

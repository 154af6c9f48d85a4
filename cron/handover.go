package cron

import (
	"context"
	"errors"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// handover returns the Store of t's jobs: t.store, except that when it has
// no record of a task's job, Last reports one due at the time since which
// the task has been scheduled (compiled.since: its Created,
// or when t first loaded it). A job starts from its last record, applying
// its misfire policy to the slots after it; so a task that has not run
// yet owes the slots due since it was defined, as schedule.WithSince
// says, without a config of its own for each job: a million jobs share a
// few (schedule.Preset). That covers a job that replaces another, which
// starts only once that one has stopped: a slot that fell due meanwhile
// was neither's, and is owed. On a schedule.SharedStore, the time is
// recorded there, and the earliest recorded taken, so that it survives a
// restart. The result is a SharedStore if t.store is one, and an
// AgainStore if it is one.
func handover(t *Table) schedule.Store {
	h := handoverStore{Store: t.store, t: t}
	if ss, ok := t.store.(schedule.SharedStore); ok {
		if as, ok := ss.(schedule.AgainStore); ok {
			return handoverAgainStore{handoverSharedStore{h, ss}, as}
		}
		return handoverSharedStore{h, ss}
	}
	return h
}

type handoverStore struct {
	schedule.Store
	t *Table
}

func (s handoverStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	r, err := s.Store.Last(ctx, job)
	c := s.t.definitions(job)[0]
	switch {
	case c == nil:
	case err == nil:
		if f := c.floor(); f.After(r.Due) {
			return standIn(job, f), nil
		}
	case errors.Is(err, schedule.ErrNoRecord):
		return s.since(ctx, job, c.since())
	}
	return r, err
}

// since returns the record that stands for no record of job, a task
// scheduled since at.
func (s handoverStore) since(ctx context.Context, job string, at time.Time) (schedule.Record, error) {
	if ss, ok := durableSince(s.Store); ok {
		var err error
		if at, err = ss.Since(ctx, job, at); err != nil {
			return schedule.Record{}, err
		}
	}
	return standIn(job, at), nil
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

// handoverSharedStore is the handover of a SharedStore: the jobs of the
// Table share it as any other SharedStore.
type handoverSharedStore struct {
	handoverStore
	shared schedule.SharedStore
}

func (s handoverSharedStore) Lease() time.Duration { return s.shared.Lease() }

func (s handoverSharedStore) ClaimRun(ctx context.Context, r schedule.Record, c schedule.Concurrency) (time.Time, error) {
	return s.shared.ClaimRun(ctx, r, c)
}

func (s handoverSharedStore) Renew(ctx context.Context, r schedule.Record) error {
	return s.shared.Renew(ctx, r)
}

func (s handoverSharedStore) Release(ctx context.Context, r schedule.Record) error {
	return s.shared.Release(ctx, r)
}

func (s handoverSharedStore) Reclaim(ctx context.Context, job, node string, c schedule.Concurrency) (schedule.Record, error) {
	return s.shared.Reclaim(ctx, job, node, c)
}

func (s handoverSharedStore) Expired(ctx context.Context, limit int) ([]string, error) {
	return s.shared.Expired(ctx, limit)
}

func (s handoverSharedStore) Retry(ctx context.Context, r schedule.Record) error {
	return s.shared.Retry(ctx, r)
}

func (s handoverSharedStore) Note(ctx context.Context, rs []schedule.Record) error {
	return s.shared.Note(ctx, rs)
}

func (s handoverSharedStore) Since(ctx context.Context, job string, t time.Time) (time.Time, error) {
	return s.shared.Since(ctx, job, t)
}

func (s handoverSharedStore) SinceOf(ctx context.Context, jobs map[string]time.Time) (map[string]time.Time, error) {
	return s.shared.SinceOf(ctx, jobs)
}

var _ schedule.SharedStore = handoverSharedStore{}

// handoverAgainStore is the handover of an AgainStore: a backfill of a
// task may run its slots again (schedule.RunAgain).
type handoverAgainStore struct {
	handoverSharedStore
	again schedule.AgainStore
}

func (s handoverAgainStore) ClaimAgain(ctx context.Context, r schedule.Record, c schedule.Concurrency, before time.Time) (schedule.Record, error) {
	return s.again.ClaimAgain(ctx, r, c, before)
}

var _ schedule.AgainStore = handoverAgainStore{}

// LastOf reads the last records of many jobs in one call if the Store can,
// and one by one if not, with the handover's record for those that have
// none.
func (s handoverStore) LastOf(ctx context.Context, jobs []string) (map[string]schedule.Record, error) {
	m, err := schedule.LastOf(ctx, s.Store, jobs)
	if err != nil {
		return nil, err
	}
	// The definitions of all the jobs, in one look: the records that
	// came from the store may be below a definition's floor; the jobs
	// with none owe the slots since theirs.
	ats := map[string]time.Time{}
	for i, c := range s.t.definitions(jobs...) {
		job := jobs[i]
		switch r, ok := m[job]; {
		case c == nil:
		case ok:
			if f := c.floor(); f.After(r.Due) {
				m[job] = standIn(job, f)
			}
		default:
			ats[job] = c.since().Round(0)
		}
	}
	if ss, ok := durableSince(s.Store); ok && len(ats) > 0 {
		// The earliest times recorded, in one call for all the jobs.
		got, err := ss.SinceOf(ctx, ats)
		if err != nil {
			return nil, err
		}
		for job, at := range got {
			if _, ok := ats[job]; ok && !at.IsZero() {
				ats[job] = at
			}
		}
	}
	for job, at := range ats {
		m[job] = standIn(job, at)
	}
	return m, nil
}

// durableSince returns s as a SharedStore whose times of since when each
// job has been scheduled outlive the process, if it is one. A
// MemoryStore's times die with the process, as the Table's own do:
// keeping one a task there would only cost its memory (about 100 bytes a
// task, a tenth of a million tasks' heap).
func durableSince(s schedule.Store) (schedule.SharedStore, bool) {
	if _, ok := s.(*schedule.MemoryStore); ok {
		return nil, false
	}
	ss, ok := s.(schedule.SharedStore)
	return ss, ok
}

// standIn returns the record that stands for the last one of job, a task
// that owes the slots after at.
func standIn(job string, at time.Time) schedule.Record {
	return schedule.Record{Job: job, Due: at.Round(0), Status: schedule.Skipped}
}

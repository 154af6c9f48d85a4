package schedule

import (
	"context"
	"time"
)

// Since records t as the time job has been scheduled since, unless an
// earlier one is recorded, and returns the earliest recorded.
func (m *MemoryStore) Since(_ context.Context, job string, t time.Time) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sinceLocked(job, t), nil
}

// SinceOf is Since for each job of jobs.
func (m *MemoryStore) SinceOf(_ context.Context, jobs map[string]time.Time) (map[string]time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	got := make(map[string]time.Time, len(jobs))
	for job, t := range jobs {
		got[job] = m.sinceLocked(job, t)
	}
	return got, nil
}

func (m *MemoryStore) sinceLocked(job string, t time.Time) time.Time {
	if m.since == nil {
		m.since = make(map[string]time.Time)
	}
	if s, ok := m.since[job]; ok && !t.Before(s) {
		return s
	}
	m.since[job] = t
	return t
}

// Note records each of rs, as Claim does, unless its slot has a record
// already or is older than every record held of a full job.
func (m *MemoryStore) Note(ctx context.Context, rs []Record) error {
	for _, r := range rs {
		_ = m.Claim(ctx, r) // ErrClaimed: the slot keeps its record
	}
	return nil
}

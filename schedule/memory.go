package schedule

import (
	"context"
	"slices"
	"sync"
	"time"
)

// A MemoryStore is a SharedStore that keeps records in memory, for the
// Jobs of one process that share it: they run each slot once between them,
// their overlap policy holds for all of them together, and a Job that
// stops hands its runs over to the others. Its claims have no lease (Lease
// is 0): they live and die with the process. It keeps the newest records
// of each job, by Due; a Claim for a slot older than all of them, once it
// keeps as many as it may, fails with ErrClaimed, since its record may
// have been dropped.
//
// A MemoryStore is safe for concurrent use. Its zero value is not usable:
// make one with NewMemoryStore.
type MemoryStore struct {
	keep int
	mu   sync.Mutex
	jobs map[string][]Record // oldest Due first; the newest keep are kept, up to 2·keep held
	// since holds when each job has been scheduled since (Since), made at
	// the first call.
	since map[string]time.Time
	// open holds the claims of each job that are Running or Released: the
	// runs in flight, and those to take over. Made at the first claim.
	open map[string][]openClaim
}

// NewMemoryStore returns a MemoryStore that keeps the newest keep records
// of each job. It panics if keep < 1.
func NewMemoryStore(keep int) *MemoryStore {
	if keep < 1 {
		panic("schedule: NewMemoryStore with keep < 1")
	}
	return &MemoryStore{keep: keep, jobs: make(map[string][]Record)}
}

// find returns where a record due at due is or would go in rs. The newest
// record, the usual one, is looked at first.
func find(rs []Record, due time.Time) (int, bool) {
	if n := len(rs); n == 0 || rs[n-1].Due.Before(due) {
		return n, false
	} else if rs[n-1].Due.Equal(due) {
		return n - 1, true
	}
	return slices.BinarySearchFunc(rs, due, func(r Record, t time.Time) int { return r.Due.Compare(t) })
}

// Claim records r, unless (r.Job, r.Due) has a record already or r.Due is
// older than every record held of a full job: then it returns ErrClaimed.
// A record that Claim makes is not a run in flight, whatever its Status:
// those are made by ClaimRun, for the Jobs sharing m.
func (m *MemoryStore) Claim(_ context.Context, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.insertLocked(r)
}

// insertLocked inserts r, unless its slot has a record or is older than
// every record held of a full job. The caller holds m.mu.
func (m *MemoryStore) insertLocked(r Record) error {
	rs := m.jobs[r.Job]
	i, found := find(rs, r.Due)
	if found || (i == 0 && len(rs) >= m.keep) {
		return ErrClaimed
	}
	if len(rs) == 2*m.keep {
		// Drop the oldest keep at once: each claim moves one record on
		// average, where dropping one at a time moved keep.
		n := copy(rs, rs[m.keep:])
		clear(rs[n:])
		rs, i = rs[:n], i-m.keep
		if i < 0 {
			return ErrClaimed
		}
	}
	if i == len(rs) {
		rs = append(rs, r)
	} else {
		rs = slices.Insert(rs, i, r)
	}
	m.jobs[r.Job] = rs
	return nil
}

// claimRun is ClaimRun for the Running record of r, a claim that started
// at start on node, made without a Record on the caller's stack: a job's
// runner claims on the stack its Func then runs on (see Job.run). stop
// cancels the run, should a newer one replace it. A slot after every
// record held, the usual claim, is recorded here; others go through
// claimSlow.
func (m *MemoryStore) claimRun(r *Run, start, planned time.Time, node string, c Concurrency, stop func(error)) error {
	m.mu.Lock()
	if rs := m.jobs[r.Job]; len(rs) > 0 && rs[len(rs)-1].Due.Before(r.Due) {
		if err := m.admitLocked(r.Job, c, true); err != nil {
			m.mu.Unlock()
			return err
		}
		if len(rs) == 2*m.keep { // as insertLocked does
			n := copy(rs, rs[m.keep:])
			clear(rs[n:])
			rs = rs[:n]
		}
		rs = append(rs, Record{})
		rec := &rs[len(rs)-1]
		rec.Job, rec.Due, rec.Reason, rec.Status = r.Job, r.Due, r.Reason, Running
		rec.Start, rec.Node, rec.Attempt, rec.Planned = start, node, 1, planned
		m.jobs[r.Job] = rs
		m.openLocked(r.Job, openClaim{due: r.Due, node: node, attempt: 1, reason: r.Reason, stop: stop})
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	return m.claimSlow(r, start, planned, node, c, stop)
}

//go:noinline
func (m *MemoryStore) claimSlow(r *Run, start, planned time.Time, node string, c Concurrency, stop func(error)) error {
	rec := Record{Job: r.Job, Due: r.Due, Reason: r.Reason, Status: Running, Start: start, Node: node, Attempt: 1, Planned: planned}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.claimRunLocked(rec, c, stop)
}

// claimRunLocked is ClaimRun. The caller holds m.mu.
func (m *MemoryStore) claimRunLocked(r Record, c Concurrency, stop func(error)) error {
	rs := m.jobs[r.Job]
	if i, found := find(rs, r.Due); found || (i == 0 && len(rs) >= m.keep) {
		return ErrClaimed
	}
	if err := m.admitLocked(r.Job, c, true); err != nil {
		return err
	}
	if err := m.insertLocked(r); err != nil {
		return err
	}
	m.openLocked(r.Job, openClaim{due: r.Due, node: r.Node, attempt: r.Attempt, reason: r.Reason, stop: stop})
	return nil
}

// finishRun is Finish for the outcome of r, claimed with claimRun on
// node, made without a Record on the caller's stack.
func (m *MemoryStore) finishRun(r *Run, node string, end time.Time, status Status, msg string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.jobs[r.Job]
	i, found := find(rs, r.Due)
	if !found {
		m.closeLocked(r.Job, r.Due, node, r.Attempt)
		return ErrNoRecord
	}
	rec := &rs[i]
	if rec.Attempt > r.Attempt {
		return ErrLeaseLost
	}
	rec.End, rec.Status, rec.Err = end, status, msg
	m.closeLocked(r.Job, r.Due, node, r.Attempt)
	return nil
}

// Finish replaces the record of (r.Job, r.Due) with r. It returns
// ErrNoRecord if there is no such record (it may have been dropped), and
// ErrLeaseLost if the record is of a later attempt than r's (a Retry
// claimed it, or another Job took it over).
func (m *MemoryStore) Finish(_ context.Context, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.jobs[r.Job]
	i, found := find(rs, r.Due)
	if !found {
		m.closeLocked(r.Job, r.Due, r.Node, r.Attempt)
		return ErrNoRecord
	}
	if rs[i].Attempt > r.Attempt {
		return ErrLeaseLost
	}
	rs[i] = r
	if r.Status != Running {
		m.closeLocked(r.Job, r.Due, r.Node, r.Attempt)
	}
	return nil
}

// Retry records r, a failed attempt, and claims the slot's next attempt
// for r.Node: a MemoryStore keeps one record per slot, which becomes the
// Running record of attempt r.Attempt+1, started now. It returns
// ErrLeaseLost if the record is not r.Node's running attempt r.Attempt,
// and ErrNoRecord if there is none (it may have been dropped).
func (m *MemoryStore) Retry(_ context.Context, r Record) error {
	return m.retry(r.Job, r.Due, r.Node, r.Attempt, time.Now().Round(0))
}

// retryRun is Retry for the failed attempt of r, claimed with claimRun or
// retryRun on node, whose next attempt starts at start, made without a
// Record on the caller's stack.
func (m *MemoryStore) retryRun(r *Run, start time.Time, node string) error {
	return m.retry(r.Job, r.Due, node, r.Attempt, start)
}

func (m *MemoryStore) retry(job string, due time.Time, node string, attempt int, start time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.jobs[job]
	i, found := find(rs, due)
	if !found {
		return ErrNoRecord
	}
	rec := &rs[i]
	if rec.Node != node || rec.Attempt != attempt || rec.Status != Running {
		return ErrLeaseLost
	}
	rec.Status, rec.Start, rec.End, rec.Err, rec.Attempt = Running, start, time.Time{}, "", attempt+1
	if o := m.findOpenLocked(job, due); o != nil {
		o.attempt = attempt + 1
	}
	return nil
}

// Last returns the record of job with the latest Due, or ErrNoRecord.
func (m *MemoryStore) Last(_ context.Context, job string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.jobs[job]
	if len(rs) == 0 {
		return Record{}, ErrNoRecord
	}
	return rs[len(rs)-1], nil
}

// History returns up to limit records of job, newest Due first.
func (m *MemoryStore) History(_ context.Context, job string, limit int) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := m.jobs[job]
	n := min(max(limit, 0), len(rs), m.keep)
	h := make([]Record, n)
	for i := range h {
		h[i] = rs[len(rs)-1-i]
	}
	return h, nil
}

var _ SharedStore = (*MemoryStore)(nil)

package schedule

import (
	"context"
	"time"
)

// An openClaim is a claim of a MemoryStore that is Running or Released.
type openClaim struct {
	due      time.Time
	node     string
	attempt  int
	reason   Reason
	released bool        // Released: to take over, no longer in flight
	asked    bool        // a ClaimRun with Concurrency.Replace asked the run to end
	stop     func(error) // cancels the run in this process, if its Job said how (stopOf); nil once called
}

// stopKey is the key of the value a Job puts in the context of its claim
// on a store without a lease: the function that cancels the run, which the
// store calls when a newer run replaces it, in place of Renew's answer.
type stopKey struct{}

// stopOf returns the function in ctx that cancels the run claimed, or nil.
func stopOf(ctx context.Context) func(error) {
	f, _ := ctx.Value(stopKey{}).(func(error))
	return f
}

// Lease returns 0: a MemoryStore's claims never expire.
func (m *MemoryStore) Lease() time.Duration { return 0 }

// openLocked adds o to the open claims of job. The caller holds m.mu.
func (m *MemoryStore) openLocked(job string, o openClaim) {
	if m.open == nil {
		m.open = make(map[string][]openClaim)
	}
	m.open[job] = append(m.open[job], o)
}

// findOpenLocked returns the open claim of job at due, or nil: a pointer
// into m.open, valid until the caller lets go of m.mu. The caller holds
// m.mu.
func (m *MemoryStore) findOpenLocked(job string, due time.Time) *openClaim {
	os := m.open[job]
	for i := range os {
		if os[i].due.Equal(due) {
			return &os[i]
		}
	}
	return nil
}

// closeLocked removes the open claim of job at due of node at attempt, if
// there is one. The caller holds m.mu.
func (m *MemoryStore) closeLocked(job string, due time.Time, node string, attempt int) {
	os := m.open[job]
	for i := range os {
		if o := &os[i]; o.due.Equal(due) && o.node == node && o.attempt == attempt {
			os[i] = os[len(os)-1]
			os[len(os)-1] = openClaim{}
			m.open[job] = os[:len(os)-1] // kept, empty, for the job's next claim
			return
		}
	}
}

// admitLocked returns ErrBusy if job has c.Max runs in flight, having
// asked them to end if c.Replace says so, and nil otherwise. A Released
// claim, waiting to be taken over, is in flight to a claim of a new slot
// (queued), not to its takeover. The caller holds m.mu.
func (m *MemoryStore) admitLocked(job string, c Concurrency, queued bool) error {
	if c.Max <= 0 {
		return nil
	}
	n := 0
	os := m.open[job]
	for i := range os {
		if !os[i].released || queued {
			n++
		}
	}
	if n < c.Max {
		return nil
	}
	if c.Replace {
		for i := range os {
			o := &os[i]
			if o.released || o.reason == Recovered || o.asked {
				continue
			}
			o.asked = true
			if f := o.stop; f != nil {
				o.stop = nil
				f(ErrReplaced) // a context's cancel: it calls nothing of the store's
			}
		}
	}
	return ErrBusy
}

// ClaimRun claims the slot of r, as Claim does, if the job has fewer than
// c.Max runs in flight; see SharedStore. A Job of this process on m whose
// run a newer one replaces is told at once.
func (m *MemoryStore) ClaimRun(ctx context.Context, r Record, c Concurrency) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return time.Now(), m.claimRunLocked(r, c, stopOf(ctx))
}

// Renew returns nil if r is a run in flight claimed by r.Node at
// r.Attempt, ErrReplaced if a newer run asked it to end, and ErrLeaseLost
// otherwise. A MemoryStore has no lease to extend.
func (m *MemoryStore) Renew(_ context.Context, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.findOpenLocked(r.Job, r.Due)
	switch {
	case o == nil || o.released || o.node != r.Node || o.attempt != r.Attempt:
		return ErrLeaseLost
	case o.asked:
		return ErrReplaced
	}
	return nil
}

// Release records r Released, for another Job of the process sharing m to
// take its slot over; see SharedStore.
func (m *MemoryStore) Release(_ context.Context, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.findOpenLocked(r.Job, r.Due)
	if o == nil || o.released || o.node != r.Node || o.attempt != r.Attempt {
		return ErrLeaseLost
	}
	rs := m.jobs[r.Job]
	i, found := find(rs, r.Due)
	if !found {
		m.closeLocked(r.Job, r.Due, r.Node, r.Attempt) // dropped: nothing is left to hand over
		return ErrNoRecord
	}
	r.Status = Released
	rs[i] = r
	o.released, o.stop = true, nil
	return nil
}

// Reclaim takes over, for node, the oldest Released claim of job; see
// SharedStore. A MemoryStore's Running claims never expire.
func (m *MemoryStore) Reclaim(_ context.Context, job, node string, c Concurrency) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var o *openClaim
	os := m.open[job]
	for i := range os {
		if x := &os[i]; x.released && (o == nil || x.due.Before(o.due)) {
			o = x
		}
	}
	if o == nil {
		return Record{}, ErrNoRecord
	}
	if err := m.admitLocked(job, Concurrency{Max: c.Max}, false); err != nil {
		return Record{}, err
	}
	rs := m.jobs[job]
	i, found := find(rs, o.due)
	if !found {
		m.closeLocked(job, o.due, o.node, o.attempt) // o is not used after
		return Record{}, ErrNoRecord
	}
	rec := &rs[i]
	rec.Node, rec.Attempt, rec.Reason, rec.Status = node, rec.Attempt+1, Recovered, Running
	rec.Start, rec.End, rec.Err = time.Now().Round(0), time.Time{}, ""
	o.node, o.attempt, o.reason, o.released, o.asked = node, rec.Attempt, Recovered, false, false
	return *rec, nil
}

// Expired returns the names of up to limit jobs that have a Released
// claim.
func (m *MemoryStore) Expired(_ context.Context, limit int) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for job, os := range m.open {
		if len(names) >= limit {
			break
		}
		for i := range os {
			if os[i].released {
				names = append(names, job)
				break
			}
		}
	}
	return names, nil
}

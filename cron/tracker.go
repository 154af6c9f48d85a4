package cron

import (
	"context"
	"sync"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// A tracker wraps a Store to count the runs in flight of each job: from
// the claim of a slot (or the takeover of an expired one) to its Finish.
// A Table waits on it for a removed task's run to return.
type tracker struct {
	schedule.Store

	mu     sync.Mutex
	flying map[string]int
	idle   map[string]chan struct{} // closed when the job's count drops to zero
}

func track(s schedule.Store) *tracker {
	return &tracker{Store: s, flying: map[string]int{}, idle: map[string]chan struct{}{}}
}

// jobStore returns the store to give the jobs: the tracker, as a
// LeaseStore if the store it wraps is one.
func (t *tracker) jobStore() schedule.Store {
	if ls, ok := t.Store.(schedule.LeaseStore); ok {
		return leaseTracker{t, ls}
	}
	return t
}

func (t *tracker) enter(job string) {
	t.mu.Lock()
	t.flying[job]++
	t.mu.Unlock()
}

func (t *tracker) exit(job string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.flying[job] <= 0 {
		return
	}
	t.flying[job]--
	if t.flying[job] == 0 {
		delete(t.flying, job)
		if ch := t.idle[job]; ch != nil {
			close(ch)
			delete(t.idle, job)
		}
	}
}

// wait waits until job has no run in flight, or ctx is done.
func (t *tracker) wait(ctx context.Context, job string) error {
	t.mu.Lock()
	if t.flying[job] == 0 {
		t.mu.Unlock()
		return nil
	}
	ch := t.idle[job]
	if ch == nil {
		ch = make(chan struct{})
		t.idle[job] = ch
	}
	t.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *tracker) Claim(ctx context.Context, r schedule.Record) error {
	t.enter(r.Job)
	err := t.Store.Claim(ctx, r)
	if err != nil {
		t.exit(r.Job)
	}
	return err
}

func (t *tracker) Finish(ctx context.Context, r schedule.Record) error {
	defer t.exit(r.Job)
	return t.Store.Finish(ctx, r)
}

// A leaseTracker is a tracker of a LeaseStore.
type leaseTracker struct {
	*tracker
	ls schedule.LeaseStore
}

func (l leaseTracker) Lease() time.Duration { return l.ls.Lease() }

func (l leaseTracker) Renew(ctx context.Context, r schedule.Record) error { return l.ls.Renew(ctx, r) }

func (l leaseTracker) Reclaim(ctx context.Context, job, node string) (schedule.Record, error) {
	r, err := l.ls.Reclaim(ctx, job, node)
	if err == nil {
		l.enter(job)
	}
	return r, err
}

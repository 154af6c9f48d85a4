package cron

import (
	"context"
	"sync"
)

// A tracker counts the runs in flight of each job: the calls of its Func
// that have not returned. A Table waits on it for a removed task's run to
// return.
//
// It counts calls, not claims in the Store: a job leaves some claims
// unfinished on purpose (a run that gave up its lease, a claim taken over
// while the job was busy, paused or stopped), and a count of claims would
// then never drop. A call always returns, or its goroutine exits, and
// exit is deferred.
type tracker struct {
	mu     sync.Mutex
	flying map[string]int
	idle   map[string]chan struct{} // closed when the job's count drops to zero
}

func newTracker() *tracker {
	return &tracker{flying: map[string]int{}, idle: map[string]chan struct{}{}}
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

// counts returns the runs in flight of each of jobs.
func (t *tracker) counts(jobs []string) []int {
	n := make([]int, len(jobs))
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.flying) == 0 {
		return n
	}
	for i, j := range jobs {
		n[i] = t.flying[j]
	}
	return n
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

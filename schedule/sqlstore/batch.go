package sqlstore

import (
	"context"
	"sync"
	"time"
)

// The Store coalesces the calls of many jobs into few statements, as a
// database coalesces commits (group commit): a call that finds fewer than
// the Store's lanes of statements in flight sends its own at once, on its
// own goroutine, alone in its batch if nothing else waits; calls that
// arrive while every lane is busy queue, and the goroutine whose statement
// ends takes the next batch from the queues and hands it to the first of
// its callers, which sends it. No goroutine of the Store's own runs, and a
// lone call on an idle Store costs what it did before batching: one
// statement of its own.
//
// Batches are taken by priority: renewals first, since a lease that is not
// renewed lets another node run the slot again; then finishes, which end
// leases; then claims, which make new ones; then pruning. A call waits in its queue without a deadline: only its
// statement, once sent, is bounded (by a lease for the writes). A call
// whose context ends while it waits leaves the queue without a trace.

// An op is the kind of a call, and its priority: the lower, the sooner.
type op uint8

const (
	opRenew op = iota
	opFinish
	opClaim
	opPrune
	nOps
)

// A request is a call waiting for its batch.
type request struct {
	op     op
	w      row         // the record; for opPrune, only w.job
	wake   chan *batch // a batch for the caller to send, or nil once done; nil for a call no one waits for
	queued bool        // in its queue, not yet in a batch; guarded by the batcher's mu
	gone   bool        // withdrawn while queued; guarded by the batcher's mu

	m  int64 // claim: the runs of its job in flight it allows, 0 for no limit (schedule.Concurrency.Max)
	rp bool  // claim: if busy, ask the runs in flight to end (schedule.Concurrency.Replace)

	// Set by the batch's statement, read once wake says done.
	err      error
	ok       bool      // claim: won; finish, renew: matched its claim
	busy     bool      // claim: not won, its job's runs in flight being at m
	replaced bool      // renew: a claim asked the run to end
	pruned   bool      // claim: won, then withdrawn, as pruning had passed its slot
	sent     time.Time // when the statement was sent
}

// A batch is the requests of one op sent in one statement.
type batch struct {
	op   op
	reqs []*request
}

// A batcher queues the calls of a Store and runs them in batches.
type batcher struct {
	exec  func(*batch) // sends a batch's statement and sets its requests' results
	lanes int          // statements in flight at most
	max   int          // requests per statement at most

	mu     sync.Mutex
	queues [nOps][]*request
	flying int // statements in flight, or about to be sent
}

// do carries out r, which must have been made by newRequest, in a batch,
// and returns once its result is set. If ctx ends while r is still queued,
// do returns ctx.Err(), and r was not sent; once r is in a batch, do waits
// for that batch whatever ctx does, since its statement may commit.
func (b *batcher) do(ctx context.Context, r *request) error {
	b.mu.Lock()
	r.queued = true
	b.queues[r.op] = append(b.queues[r.op], r)
	var lead *batch
	if b.flying < b.lanes {
		b.flying++
		lead = b.takeLocked()
	}
	b.mu.Unlock()
	done := ctx.Done()
	for {
		if lead != nil {
			b.run(lead)
			lead = nil
		}
		select {
		case next := <-r.wake:
			if next == nil {
				return nil
			}
			lead = next
		case <-done:
			if b.withdraw(r) {
				return ctx.Err()
			}
			done = nil // in a batch already: its result will come
		}
	}
}

// post queues r, a request no one waits for (wake is nil), and sends it at
// once if a lane is free.
func (b *batcher) post(r *request) {
	b.mu.Lock()
	r.queued = true
	b.queues[r.op] = append(b.queues[r.op], r)
	var lead *batch
	if b.flying < b.lanes {
		b.flying++
		lead = b.takeLocked()
	}
	b.mu.Unlock()
	if lead != nil {
		go b.run(lead) // the caller does not wait for it
	}
}

// newRequest returns a request of op for w that a caller waits for.
func newRequest(o op, w row) *request {
	return &request{op: o, w: w, wake: make(chan *batch, 1)}
}

// withdraw takes r out of its queue, and reports false if it was taken
// into a batch already.
func (b *batcher) withdraw(r *request) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.queued {
		r.queued, r.gone = false, true
	}
	return r.gone
}

// takeLocked takes the next batch: up to max requests of the most urgent
// op that has any. It returns nil if every queue is empty; then the caller
// gives its lane up. The caller holds b.mu.
func (b *batcher) takeLocked() *batch {
	for o := range nOps {
		q := b.queues[o]
		var reqs []*request
		i := 0
		for ; i < len(q) && len(reqs) < b.max; i++ {
			if !q[i].gone {
				q[i].queued = false
				reqs = append(reqs, q[i])
			}
		}
		clear(q[:i])
		if i == len(q) {
			b.queues[o] = q[:0]
		} else {
			b.queues[o] = q[i:]
		}
		if len(reqs) > 0 {
			return &batch{op: o, reqs: reqs}
		}
	}
	return nil
}

// run sends bt, wakes its callers, and passes the lane on: to the first
// caller of the next batch, who sends it, or, if no one waits for that
// batch, runs it here.
func (b *batcher) run(bt *batch) {
	for bt != nil {
		b.exec(bt)
		for _, r := range bt.reqs {
			if r.wake != nil {
				r.wake <- nil
			}
		}
		b.mu.Lock()
		bt = b.takeLocked()
		if bt == nil {
			b.flying--
		}
		b.mu.Unlock()
		if bt != nil && bt.reqs[0].wake != nil {
			bt.reqs[0].wake <- bt
			return
		}
	}
}

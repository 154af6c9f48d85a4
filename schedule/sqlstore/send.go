package sqlstore

import (
	"context"
	"database/sql"
	"time"
)

// send is the Store's batcher's exec: it sends the statement of bt and sets
// the result of each of its requests. A batch of one request sends the
// statement of a single call, as a Store did before batching: a lone call
// costs no more. Each statement is bounded by a lease, from the moment it
// is sent: waiting in the queue does not count.
func (s *Store) send(bt *batch) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.lease)
	defer cancel()
	sent := time.Now()
	for _, r := range bt.reqs {
		r.sent = sent
	}
	s.stats.add(bt)
	if len(bt.reqs) > 1 && bt.op != opPrune {
		sortRequests(bt.reqs)
	}
	var err error
	switch bt.op {
	case opClaim:
		err = s.sendClaims(ctx, bt.reqs)
	case opFinish:
		err = s.sendMatched(ctx, bt.reqs, s.q.finish, s.bq.finish, false)
	case opRenew:
		err = s.sendMatched(ctx, bt.reqs, s.q.renew, s.bq.renew, true)
	case opPrune:
		err = s.sendPrune(ctx, bt.reqs)
	}
	if err != nil {
		for _, r := range bt.reqs {
			r.err, r.ok = err, false
		}
	}
}

// sendClaims claims the slots of rs, setting ok on those it won: the first
// request of each slot that has no record yet. On PostgreSQL a claim that
// raced a pruning of its slot is withdrawn (see checkPruned).
func (s *Store) sendClaims(ctx context.Context, rs []*request) error {
	if len(rs) == 1 {
		w := rs[0].w
		n, err := s.exec(ctx, s.q.claim, w.job, w.due, w.reason, w.status, w.start, w.end, w.node, w.err, w.attempt,
			s.opts.lease.Microseconds())
		if err != nil {
			return err
		}
		rs[0].ok = n > 0
	} else {
		won := map[slotKey]bool{}
		err := s.retry(ctx, func() error {
			clear(won)
			return s.query(ctx, s.bq.claim, func(sc *sql.Rows) error {
				var k slotKey
				if err := sc.Scan(&k.job, &k.due); err != nil {
					return err
				}
				won[k] = true
				return nil
			}, string(appendRecords(nil, rs)), s.opts.lease.Microseconds())
		})
		if err != nil {
			return err
		}
		for _, r := range rs {
			k := slotKey{r.w.job, r.w.due}
			r.ok = won[k]
			delete(won, k) // a second request of the slot lost it to the first
		}
	}
	if s.dialect == PostgreSQL {
		return s.checkPrunedBatch(ctx, rs)
	}
	return nil
}

// checkPrunedBatch is checkPruned for the claims of rs that were won: one
// read of the watermarks for all of them.
func (s *Store) checkPrunedBatch(ctx context.Context, rs []*request) error {
	var won []*request
	for _, r := range rs {
		if r.ok {
			won = append(won, r)
		}
	}
	if len(won) == 0 {
		return nil
	}
	if len(won) == 1 {
		return s.checkPrunedOne(ctx, won[0])
	}
	passed := map[slotKey]bool{}
	err := s.query(ctx, s.bq.pruned, func(sc *sql.Rows) error {
		var k slotKey
		if err := sc.Scan(&k.job, &k.due); err != nil {
			return err
		}
		passed[k] = true
		return nil
	}, string(appendRecords(nil, won)))
	if err != nil {
		// The claims stand unchecked: their callers, told they failed, do
		// not run them; the next Claim of each slot through s adopts it
		// (Claim remembers it as unsure), or its lease expires, so no slot
		// is lost.
		for _, r := range won {
			r.ok, r.err = false, err
		}
		return nil
	}
	for _, r := range won {
		if !passed[slotKey{r.w.job, r.w.due}] {
			continue
		}
		w := r.w
		if _, err := s.exec(ctx, s.q.unclaim, w.job, w.due, w.node, w.attempt, w.status); err != nil {
			r.err = err
		}
		r.ok, r.pruned = false, true
	}
	return nil
}

// checkPrunedOne is checkPrunedBatch for one claim, in the statement of a
// single call.
func (s *Store) checkPrunedOne(ctx context.Context, r *request) error {
	w := r.w
	var k int
	if err := s.queryRow(ctx, s.q.pruned, w.job, w.due).Scan(&k); err != nil {
		r.ok, r.err = false, err
		return nil
	}
	if k == 0 {
		return nil
	}
	if _, err := s.exec(ctx, s.q.unclaim, w.job, w.due, w.node, w.attempt, w.status); err != nil {
		r.err = err
	}
	r.ok, r.pruned = false, true
	return nil
}

// sendMatched runs a statement that updates the claims (node, attempt) of
// the records of rs, one (single) or all of them (many), and sets ok on
// those it matched. lease says whether the statement takes the lease as
// its last parameter.
func (s *Store) sendMatched(ctx context.Context, rs []*request, single, many string, lease bool) error {
	if len(rs) == 1 {
		w := rs[0].w
		var n int64
		var err error
		if lease {
			n, err = s.exec(ctx, single, w.job, w.due, w.node, w.attempt, s.opts.lease.Microseconds())
		} else {
			n, err = s.exec(ctx, single, w.job, w.due, w.node, w.attempt, w.reason, w.status, w.start, w.end, w.err)
		}
		rs[0].ok = n > 0
		return err
	}
	matched := map[slotKey]bool{}
	args := []any{string(appendRecords(nil, rs))}
	if lease {
		args = append(args, s.opts.lease.Microseconds())
	}
	err := s.retry(ctx, func() error {
		clear(matched)
		return s.query(ctx, many, func(sc *sql.Rows) error {
			var k slotKey
			if err := sc.Scan(&k.job, &k.due); err != nil {
				return err
			}
			matched[k] = true
			return nil
		}, args...)
	})
	if err != nil {
		return err
	}
	for _, r := range rs {
		r.ok = matched[slotKey{r.w.job, r.w.due}]
	}
	return nil
}

// sendPrune prunes the jobs of rs in two statements, whatever their
// number: the watermarks, then the records.
func (s *Store) sendPrune(ctx context.Context, rs []*request) error {
	jobs := string(appendJobs(nil, rs))
	keepOK, keepOther := s.opts.succeeded, s.opts.failed
	if _, err := s.exec(ctx, s.bq.pruneWater, jobs, keepOK, keepOther); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.bq.pruneDel, jobs, keepOK, keepOther)
	return err
}

// query runs a statement that returns rows, passing each to f.
func (s *Store) query(ctx context.Context, query string, f func(*sql.Rows) error, args ...any) error {
	rows, err := s.queryRows(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

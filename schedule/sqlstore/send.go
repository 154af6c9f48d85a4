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
		err = s.sendRenewals(ctx, bt.reqs)
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
// request of each slot that has no record yet, and whose job has fewer
// runs in flight than its m allows; busy on those it did not win for that
// reason alone. On PostgreSQL a claim that raced a pruning of its slot is
// withdrawn (see checkPruned).
func (s *Store) sendClaims(ctx context.Context, rs []*request) error {
	if len(rs) == 1 && rs[0].m == 0 {
		w := rs[0].w
		n, err := s.exec(ctx, s.q.claim, w.job, w.due, w.reason, w.status, w.start, w.end, w.node, w.err, w.attempt,
			s.opts.lease.Microseconds())
		if err != nil {
			return err
		}
		rs[0].ok = n > 0
	} else if err := s.sendClaimRuns(ctx, rs); err != nil {
		return err
	}
	if s.dialect == PostgreSQL {
		return s.checkPrunedBatch(ctx, rs)
	}
	return nil
}

// Outcomes of a claim in a batch.
const (
	claimWon   = 0
	claimTaken = 1 // the slot has a record
	claimBusy  = 2 // the job's runs in flight are at the claim's m
)

// sendClaimRuns claims the slots of rs in one statement, counting the runs
// in flight of the jobs whose requests set m: on PostgreSQL one call of
// {t}_claim_run, which also tells the claims it did not win apart and asks
// the runs in flight to end for those that say rp; on SQLite, whose one
// writer makes the insert atomic, the insert, then a read of which slots
// not won have a record, then, if need be, the asking.
func (s *Store) sendClaimRuns(ctx context.Context, rs []*request) error {
	outcome := map[slotKey]int{}
	lease := s.opts.lease.Microseconds()
	if s.dialect == PostgreSQL {
		err := s.query(ctx, s.bq.claimRun, func(sc *sql.Rows) error {
			var k slotKey
			var o int
			if err := sc.Scan(&k.job, &k.due, &o); err != nil {
				return err
			}
			if old, ok := outcome[k]; !ok || o < old {
				outcome[k] = o
			}
			return nil
		}, string(appendClaims(nil, rs)), lease)
		if err != nil {
			return err
		}
	} else {
		err := s.retry(ctx, func() error {
			clear(outcome)
			return s.query(ctx, s.bq.claimRun, func(sc *sql.Rows) error {
				var k slotKey
				if err := sc.Scan(&k.job, &k.due); err != nil {
					return err
				}
				outcome[k] = claimWon
				return nil
			}, string(appendClaims(nil, rs)), lease)
		})
		if err != nil {
			return err
		}
		if err := s.classify(ctx, rs, outcome); err != nil {
			return err
		}
	}
	var ask []*request
	for _, r := range rs {
		k := slotKey{r.w.job, r.w.due}
		switch o, ok := outcome[k]; {
		case !ok:
			// Never reported: as lost (a second request of the slot, on
			// SQLite, is classified with the first).
		case o == claimWon:
			r.ok = true
			outcome[k] = claimTaken // a second request of the slot lost it to the first
		case o == claimBusy:
			r.busy = true
			if r.rp {
				ask = append(ask, r)
			}
		}
	}
	if len(ask) > 0 && s.dialect == SQLite {
		// Asked after the claims: a run in flight that ends meanwhile is
		// no longer Running, and is not asked.
		if _, err := s.exec(ctx, s.bq.ask, string(appendRecords(nil, ask))); err != nil {
			return err
		}
	}
	return nil
}

// classify reads which of the slots of rs that outcome does not have as
// won have a record (claimTaken); the others are busy.
func (s *Store) classify(ctx context.Context, rs []*request, outcome map[slotKey]int) error {
	var lost []*request
	for _, r := range rs {
		k := slotKey{r.w.job, r.w.due}
		if _, ok := outcome[k]; !ok {
			lost = append(lost, r)
			outcome[k] = claimBusy
		}
	}
	if len(lost) == 0 {
		return nil
	}
	return s.retry(ctx, func() error {
		return s.query(ctx, s.bq.taken, func(sc *sql.Rows) error {
			var k slotKey
			if err := sc.Scan(&k.job, &k.due); err != nil {
				return err
			}
			outcome[k] = claimTaken
			return nil
		}, string(appendRecords(nil, lost)))
	})
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

// sendRenewals extends the leases of the running claims (node, attempt)
// of the records of rs, and sets ok on those it matched, and replaced on
// those a claim asked to end.
func (s *Store) sendRenewals(ctx context.Context, rs []*request) error {
	lease := s.opts.lease.Microseconds()
	if len(rs) == 1 {
		w := rs[0].w
		var asked int64
		err := s.retry(ctx, func() error {
			return s.queryRow(ctx, s.q.renew, w.job, w.due, w.node, w.attempt, lease).Scan(&asked)
		})
		if err == sql.ErrNoRows {
			return nil
		}
		rs[0].ok, rs[0].replaced = err == nil, asked != 0
		return err
	}
	matched := map[slotKey]bool{}
	err := s.retry(ctx, func() error {
		clear(matched)
		return s.query(ctx, s.bq.renew, func(sc *sql.Rows) error {
			var k slotKey
			var asked int64
			if err := sc.Scan(&k.job, &k.due, &asked); err != nil {
				return err
			}
			matched[k] = asked != 0
			return nil
		}, string(appendRecords(nil, rs)), lease)
	})
	if err != nil {
		return err
	}
	for _, r := range rs {
		r.replaced, r.ok = matched[slotKey{r.w.job, r.w.due}]
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

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
// is sent: waiting in the queue does not count. A statement that takes
// more than a quarter of a lease is logged (slowStatement).
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
	if took := time.Since(sent); took > s.opts.lease/4 {
		s.slowStatement(bt, took, err)
	}
	if s.opts.hook != nil {
		s.done(opNames[bt.op], len(bt.reqs), sent, err)
	}
	if err != nil {
		for _, r := range bt.reqs {
			r.err, r.ok = err, false
		}
	}
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
	keepOK, keepOther, cutoff, retained := s.opts.succeeded, s.opts.failed, s.cutoff(), s.opts.retained
	if _, err := s.exec(ctx, s.bq.pruneWater, jobs, keepOK, keepOther, cutoff, retained); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.bq.pruneDel, jobs, keepOK, keepOther, cutoff, retained)
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

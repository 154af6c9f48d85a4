package sqlstore

import (
	"context"
	"database/sql"
)

// sendClaims claims the slots of rs, setting ok on those it won: the first
// request of each slot that has no record yet, and whose job has fewer
// runs in flight than its m allows; busy on those it did not win for that
// reason alone. On PostgreSQL a claim that raced a pruning of its slot is
// withdrawn (see checkPruned).
func (s *Store) sendClaims(ctx context.Context, rs []*request) error {
	if len(rs) > 1 || rs[0].m > 0 {
		return s.sendClaimRuns(ctx, rs)
	}
	r := rs[0]
	w := r.w
	n, err := s.exec(ctx, s.q.claim, w.job, w.due, w.reason, w.status, w.start, w.end, w.node, w.err, w.attempt,
		s.opts.lease.Microseconds(), w.planned)
	if err != nil {
		return err
	}
	r.ok = n > 0
	if !r.ok || s.dialect != PostgreSQL {
		return nil
	}
	var k int
	if err := s.queryRow(ctx, s.q.pruned, w.job, w.due).Scan(&k); err != nil {
		r.ok, r.err = false, err
		return nil
	}
	if k > 0 {
		s.withdraw(ctx, r)
	}
	return nil
}

// sendClaimRuns claims the slots of rs, keeping to the runs in flight of
// the jobs whose requests set m, in two statements or so, whatever the
// size of the batch: the inserts, each committed at once; a look at the
// slots, which tells the claims not won apart (taken or busy) where the
// inserts did not and, on PostgreSQL, finds the claims won that a pruning
// raced; and, if any were asked to, the asking of busy jobs' runs in
// flight to end.
//
// Some claims under m 1 are made again: one that found its job's lane
// held by a run whose lease expired, once the lane is cleared, and, on
// PostgreSQL, one held back behind an earlier slot of its job in the
// batch. Each round settles at least the earliest of each job's. The
// claims of the first round are committed: a round after it that fails
// fails only the requests it carried.
func (s *Store) sendClaimRuns(ctx context.Context, rs []*request) error {
	stale, later, err := s.claimAndLook(ctx, rs)
	if err != nil {
		return err
	}
	for round := 0; len(stale)+len(later) > 0 && round < len(rs); round++ {
		again := append(later, stale...)
		if len(stale) > 0 {
			if _, err = s.exec(ctx, s.bq.unlane, string(appendRecords(nil, stale))); err == nil {
				stale, later, err = s.claimAndLook(ctx, again)
			}
		} else {
			stale, later, err = s.claimAndLook(ctx, again)
		}
		if err != nil {
			for _, r := range again {
				r.ok, r.busy, r.err = false, false, err
			}
			break
		}
	}
	var ask []*request
	for _, r := range rs {
		if r.busy && r.rp {
			ask = append(ask, r)
		}
	}
	if len(ask) > 0 {
		// Asked after the claims: a run in flight that ends meanwhile is
		// no longer Running, and is not asked. A failure leaves them
		// unasked; their claims, busy, are made again.
		_, _ = s.exec(ctx, s.bq.ask, string(appendRecords(nil, ask)))
	}
	return nil
}

// Outcomes of a claim under m 1 on PostgreSQL (claimLanePostgresSQL).
const (
	laneWon   = 0
	laneTaken = 1 // the slot has a record, or pruning passed it: not returned
	laneHeld  = 2 // by a run in flight
	laneStale = 3 // held by a run whose lease expired
	laneLater = 4 // held back behind an earlier slot of its job in the batch
)

// claimAndLook inserts the claims of rs, those under m 0 or 1 with
// claimLane, those under a higher m with counted, then looks at the slots
// of rs, and sets ok, busy and pruned on each request. It returns the
// requests under m 1 worth claiming again: stale, once the lanes of
// expired runs are cleared (those whose job's lane such a run holds);
// later, those held back behind an earlier slot of their job on
// PostgreSQL. Both are busy until claimed again.
func (s *Store) claimAndLook(ctx context.Context, rs []*request) (stale, later []*request, err error) {
	var lanes, counted []*request
	for _, r := range rs {
		r.ok, r.busy = false, false
		if r.m > 1 || (r.m == 1 && testMutant == mutantNoClaimLock) {
			counted = append(counted, r)
		} else {
			lanes = append(lanes, r)
		}
	}
	won := map[slotKey]bool{}
	known := map[slotKey]int{} // on PostgreSQL, the outcomes of lane claims not won
	lease := s.opts.lease.Microseconds()
	if len(lanes) > 0 {
		claims := string(appendClaims(nil, lanes))
		if s.dialect == PostgreSQL {
			err = s.claimLanes(ctx, claims, lease, won, known)
			for _, r := range lanes {
				k := slotKey{r.w.job, r.w.due}
				if _, ok := known[k]; !ok && !won[k] {
					known[k] = laneTaken
				}
			}
		} else {
			err = s.retry(ctx, func() error { return s.query(ctx, s.bq.claimLane, scanWon(won), claims, lease) })
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if len(counted) > 0 {
		claims := string(appendClaims(nil, counted))
		if err := s.retry(ctx, func() error { return s.query(ctx, s.bq.counted, scanWon(won), claims, lease) }); err != nil {
			return nil, nil, err
		}
	}
	staleLane := map[slotKey]bool{}
	if err := s.look(ctx, rs, won, known, staleLane); err != nil {
		return nil, nil, err
	}
	for _, r := range rs {
		k := slotKey{r.w.job, r.w.due}
		switch o, ok := known[k]; {
		case !ok:
			if r.busy && r.m == 1 && staleLane[k] {
				stale = append(stale, r) // SQLite's look tells
			}
		case o == laneTaken:
		case o == laneStale:
			r.busy = true
			stale = append(stale, r)
		case o == laneLater:
			r.busy = true
			later = append(later, r)
		default:
			r.busy = true
		}
	}
	return stale, later, nil
}

// claimLanes sends claimLanePostgresSQL with claims, noting the slots won
// and the outcomes of the others. A statement that conflicts with a lane
// taken since its snapshot is sent again, up to three times in all: each
// time, the lane is seen held.
func (s *Store) claimLanes(ctx context.Context, claims string, lease int64, won map[slotKey]bool, known map[slotKey]int) error {
	var err error
	for range 3 {
		clear(won)
		clear(known)
		err = s.query(ctx, s.bq.claimLane, func(sc *sql.Rows) error {
			var k slotKey
			var o int
			if err := sc.Scan(&k.job, &k.due, &o); err != nil {
				return err
			}
			if o == laneWon {
				won[k] = true
			} else {
				known[k] = o
			}
			return nil
		}, claims, lease)
		if !isUniqueViolation(err) {
			return err
		}
	}
	return err
}

// scanWon returns a scanner of the slots a claim statement returns, which
// notes them won.
func scanWon(won map[slotKey]bool) func(*sql.Rows) error {
	return func(sc *sql.Rows) error {
		var k slotKey
		if err := sc.Scan(&k.job, &k.due); err != nil {
			return err
		}
		won[k] = true
		return nil
	}
}

// look settles the requests of rs, given the slots won and, on
// PostgreSQL, the outcomes known of lane claims not won: a won slot goes
// to its first request, unless, on PostgreSQL, pruning passed it (the
// claim is withdrawn); a request not won whose outcome is not known is
// busy if its slot has no record and pruning has not passed it, and its m
// is a limit; stale notes those whose job's lane a run with an expired
// lease holds. One statement, for the claims won on PostgreSQL (SQLite's
// check pruning as they insert) and those not won whose outcome is not
// known under a limit; none if there are neither.
func (s *Store) look(ctx context.Context, rs []*request, won map[slotKey]bool, known map[slotKey]int, stale map[slotKey]bool) error {
	var claimed, lost []*request
	for _, r := range rs {
		k := slotKey{r.w.job, r.w.due}
		_, ok := known[k]
		switch {
		case won[k]:
			if s.dialect == PostgreSQL {
				claimed = append(claimed, r)
			}
		case r.m > 0 && !ok:
			lost = append(lost, r)
		}
	}
	type fate struct{ recorded, pruned, stale bool }
	fates := map[slotKey]fate{}
	if len(claimed) > 0 || len(lost) > 0 {
		args := []any{string(appendRecords(nil, lost))}
		if s.dialect == PostgreSQL {
			args = []any{string(appendRecords(nil, claimed)), args[0]}
		}
		err := s.retry(ctx, func() error {
			return s.query(ctx, s.bq.look, func(sc *sql.Rows) error {
				var k slotKey
				var f fate
				if err := sc.Scan(&k.job, &k.due, &f.recorded, &f.pruned, &f.stale); err != nil {
					return err
				}
				fates[k] = f
				if f.stale {
					stale[k] = true
				}
				return nil
			}, args...)
		})
		if err != nil {
			// Claims won stand unchecked: their callers, told they
			// failed, do not run them; the next Claim of each slot
			// through s adopts it (Claim remembers it as unsure), or its
			// lease expires, so no slot is lost.
			return err
		}
	}
	first := map[slotKey]bool{}
	for _, r := range rs {
		k := slotKey{r.w.job, r.w.due}
		f, looked := fates[k]
		switch {
		case won[k] && f.pruned:
			delete(won, k)
			s.withdraw(ctx, r)
		case won[k]:
			r.ok = true
			delete(won, k)
			first[k] = true
		case first[k]:
			// A second request of the slot lost it to the first.
		default:
			r.busy = r.m > 0 && looked && !f.recorded && !f.pruned
		}
	}
	return nil
}

// withdraw deletes the claim of r, won as pruning passed its slot, and
// marks r pruned.
func (s *Store) withdraw(ctx context.Context, r *request) {
	w := r.w
	if _, err := s.exec(ctx, s.q.unclaim, w.job, w.due, w.node, w.attempt, w.status); err != nil {
		r.err = err
	}
	r.ok, r.pruned = false, true
}

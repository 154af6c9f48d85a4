package schedule

import (
	"context"
	"errors"
	"time"
)

// begin claims the slot of p, unless a SharedStore handed it over claimed,
// and reports whether the caller is to run it (claimed). It reports ok false
// if the claim failed (not ErrClaimed): the slot is owed, and was
// reported Skipped unless retry says that it was before, when its claim
// first failed. cancel cancels the run's context, ctx.
//
// A claim that fails is tried again, after a growing pause, while the slot
// is worth running (worthRetrying): a store that is slow or busy for a
// moment delays the run, and only one that fails for longer makes an
// outage. Each try first catches up what an outage left owed, so that the
// owed slots still run before this one.
//
// On a SharedStore, a claim the store refuses because the job's runs in
// flight on other nodes are at its limit (ErrBusy) is Skipped under
// OverlapSkip and OverlapAllow, and waits under OverlapBufferOne,
// OverlapBufferAll and OverlapReplace, and for a Backfill's slot, until
// the job is free, claiming
// again after a growing pause, until the claim succeeds, another node
// claims the slot, or a newer slot supersedes it (the run's context ends;
// never under OverlapBufferAll, whose newer slots wait behind it). The
// claim of a missed slot (Reason CatchUp) waits under every policy: the
// slots a Misfire policy runs are owed, and replicas that catch up
// together take turns, as the catch-up of one runs its slots one after
// another; under OverlapBufferOne and OverlapReplace a newer slot still
// supersedes it. A run that waits so is not in flight to a claim offered
// for takeover (freeLocked).
//
// begin returns before the Func runs, so that the Func runs on a stack
// that holds none of its frames: most Funcs then run without growing
// their goroutine's first stack.
func (j *Job) begin(ctx context.Context, cancel context.CancelCauseFunc, x *active, p *pending, retry bool) (claimed, ok bool) {
	if h := p.claim; h != nil {
		p.start = time.Now().Round(0)
		p.run.Reason, p.run.Attempt = Recovered, h.rec.Attempt
		return true, true
	}
	if j.cfg.lease == nil && j.cfg.shared != nil {
		j.enlistLate(x)
	}
	for pause, wait := time.Duration(0), time.Duration(0); ; {
		// A job on a Store of its own never owes a slot: its Last never
		// fails, and its claims fail only under MisfireRunAll's limit.
		if p.run.Reason == Scheduled && j.cfg.store != nil && !j.catchUp(ctx, x, &p.run) {
			return false, true
		}
		err := j.claim(ctx, cancel, x, p)
		j.heard(ctx, x.store, err)
		if wait > 0 && !errors.Is(err, ErrBusy) {
			j.waiting(x, p, false)
		}
		switch {
		case err == nil:
			return true, true
		case errors.Is(err, ErrClaimed) && p.run.Reason != Manual:
			if j.cfg.trace != nil {
				j.claimLost(p)
			}
			if p.run.Reason == Backfill {
				j.fillClaimed(ctx, p.run.Due, err)
			}
			return false, true // the slot is another replica's, which records it
		case errors.Is(err, ErrBusy):
			if j.cfg.shared != nil && j.cfg.lease == nil {
				// A store without a lease is looked at only when asked: a
				// claim handed over may be what makes the job busy.
				kick(j.cfg.shared)
			}
			if p.inline {
				// A catch-up: the slots owed wait for the next one that
				// finds the job free.
				x.owe(j, &p.run)
				return false, false
			}
			if o := j.cfg.overlap; o == OverlapBufferOne || o == OverlapReplace || o == OverlapBufferAll || p.run.Reason == CatchUp || p.run.Reason == Backfill {
				if wait == 0 {
					j.waiting(x, p, true)
				}
				if wait = j.busyPause(wait); sleep(ctx, wait) && j.live() {
					continue
				}
				j.waiting(x, p, false)
			}
			if p.run.Reason == Backfill {
				j.fillClaimed(ctx, p.run.Due, err)
			}
			j.busySkipped(ctx, &p.run)
			return false, true
		case !errors.Is(err, ErrClaimed) && ctx.Err() == nil:
			if pause = retryPause(pause); j.worthRetrying(&p.run, pause) && sleep(ctx, pause) && j.live() {
				continue
			}
			// A claim that works again does not end the outage: the
			// slots whose claims failed are still owed (recoverOutage).
			x.owe(j, &p.run)
			fallthrough
		default:
			if p.run.Reason == Backfill {
				j.fillClaimed(ctx, p.run.Due, err)
			}
			if !retry {
				// A Manual run's Due is its own: another one's claim is
				// not its run.
				j.claimSkipped(ctx, &p.run, err)
			}
			return false, false
		}
	}
}

// busyPause returns the pause after pause before a claim that found the
// job busy on other nodes is made again: from firstRetry, doubling up to a
// second, and never more than a quarter of the store's lease.
func (j *Job) busyPause(pause time.Duration) time.Duration {
	limit := time.Second
	if ls := j.cfg.lease; ls != nil {
		limit = min(limit, max(ls.Lease()/4, firstRetry))
	}
	return min(max(2*pause, firstRetry), limit)
}

// live reports whether the job may start runs: started, not paused.
func (j *Job) live() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state == jobStarted && !j.paused()
}

// waiting marks the flight of p as waiting for the job's runs in flight on
// other nodes to end, or no longer. A flight that waits leaves the job
// free for a claim to take over (freeLocked): one offered meanwhile is
// taken over now.
func (j *Job) waiting(x *active, p *pending, on bool) {
	j.mu.Lock()
	for i := range x.runs {
		if x.runs[i].due.Equal(p.run.Due) {
			x.runs[i].waiting = on
		}
	}
	if on && x.look && !x.reclaiming && j.freeLocked(x) && j.state == jobStarted && !j.paused() {
		j.takeOverLocked(x)
	}
	j.mu.Unlock()
}

// busySkipped reports the slot of r Skipped, its claim having found the
// job's runs in flight at the limit on other nodes, or its wait for them
// to end ended by ctx (a newer slot superseded it, or the job stopped).
//
//go:noinline
func (j *Job) busySkipped(ctx context.Context, r *Run) {
	why := ErrBusy
	if cause := context.Cause(ctx); cause != nil {
		why = cause
	}
	j.observe([]Record{j.record(*r, Skipped, why)})
}

// claim claims the slot of p in the job's store, setting p.start, and
// returns the store's error. cancel cancels the run, should a newer one
// on another Job sharing a store without a lease replace it.
//
//go:noinline
func (j *Job) claim(ctx context.Context, cancel context.CancelCauseFunc, x *active, p *pending) error {
	p.start = time.Now().Round(0)
	p.planned = j.plannedOf(&p.run)
	var err error
	if o := x.own; o != nil {
		err = o.claim(p.run.Due)
	} else if m, ok := x.store.(*MemoryStore); ok {
		err = m.claimRun(&p.run, p.start, p.planned, j.cfg.nodeName(), j.cfg.concurrency(), cancel)
	} else {
		err = j.claimIn(ctx, cancel, x.store, p)
	}
	switch {
	case err == nil:
		p.run.Attempt = 1
	case p.run.Reason == Backfill && errors.Is(err, ErrClaimed):
		err = j.claimAgain(ctx, cancel, x, p)
	}
	return err
}

// claimIn claims the slot of p, a claim that started at p.start, in s.
// On a SharedStore, p.start becomes the time the claim was sent: its lease
// began then.
//
//go:noinline
func (j *Job) claimIn(ctx context.Context, cancel context.CancelCauseFunc, s Store, p *pending) error {
	r := &p.run
	rec := Record{Job: r.Job, Due: r.Due, Reason: r.Reason, Status: Running,
		Start: p.start, Node: j.cfg.nodeName(), Attempt: 1, Planned: p.planned}
	ss := j.cfg.shared
	if ss == nil {
		return s.Claim(ctx, rec)
	}
	if j.cfg.lease == nil {
		// No Renew will tell the run it was replaced: the store calls
		// cancel instead.
		ctx = context.WithValue(ctx, stopKey{}, func(err error) { cancel(err) })
	}
	sent, err := ss.ClaimRun(ctx, rec, j.cfg.concurrency())
	if err == nil && sent.After(p.start) {
		p.start = sent.Round(0)
	}
	return err
}

// Claims that fail are tried again after a pause that starts at
// firstRetry and doubles up to maxRetry.
const (
	firstRetry = 50 * time.Millisecond
	maxRetry   = 5 * time.Second
)

// retryPause returns the pause after pause.
func retryPause(pause time.Duration) time.Duration {
	return min(max(2*pause, firstRetry), maxRetry)
}

// worthRetrying reports whether the slot of r is still worth claiming
// after a further pause (see WithClaimRetry): by default, a failed claim
// is tried again while its slot has the first three quarters of its
// period, up to the next slot, to go, so that the next slot finds the job
// free; under MisfireSkip, only within the grace period, after which the
// slot is missed. WithClaimRetry's bound and the grace period count from
// a Scheduled slot's planned start (WithJitter). A Manual run is tried within the grace period; a
// catch-up of an outage's owed slots stops at its first failure
// (recoverOutage), and a Backfill at its first (Job.Backfill).
func (j *Job) worthRetrying(r *Run, pause time.Duration) bool {
	at := time.Now().Add(pause)
	if r.Reason == CatchUp || r.Reason == Backfill {
		return false
	}
	from, n := r.Due, time.Time{} // a Scheduled slot's planned start (WithJitter), and its next slot
	if r.Reason == Scheduled {
		j.mu.Lock()
		from, n = j.plannedLocked(j.sched, r.Due), next(j.sched, r.Due)
		j.mu.Unlock()
	}
	if d := j.cfg.retry; d >= 0 {
		return at.Before(from.Add(d))
	}
	limit := from.Add(j.cfg.grace)
	if j.cfg.misfire != MisfireSkip && !n.IsZero() {
		limit = r.Due.Add(n.Sub(r.Due) / 4 * 3) // after the planned start, which is in the first half
	}
	return at.Before(limit)
}

// sleep waits for d, and reports false if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// claimSkipped reports the slot of r Skipped, its claim having failed with
// err.
//
//go:noinline
func (j *Job) claimSkipped(ctx context.Context, r *Run, err error) {
	s := j.record(*r, Skipped, nil)
	if cause := context.Cause(ctx); cause != nil {
		s.Err = cause.Error()
	} else {
		s.Err = "schedule: claim: " + err.Error()
	}
	j.observe([]Record{s})
}

package schedule

import (
	"context"
	"errors"
	"time"
)

// begin claims the slot of p, unless a LeaseStore handed it over claimed,
// and reports whether the caller is to run it (claimed). It reports ok false
// if the claim failed (not ErrClaimed): the slot is owed, and was
// reported Skipped unless retry says that it was before, when its claim
// first failed.
//
// A claim that fails is tried again, after a growing pause, while the slot
// is worth running (worthRetrying): a store that is slow or busy for a
// moment delays the run, and only one that fails for longer makes an
// outage. Each try first catches up what an outage left owed, so that the
// owed slots still run before this one.
//
// begin returns before the Func runs, so that the Func runs on a stack
// that holds none of its frames: most Funcs then run without growing
// their goroutine's first stack.
func (j *Job) begin(ctx context.Context, x *active, p *pending, retry bool) (claimed, ok bool) {
	if h := p.claim; h != nil {
		p.start = time.Now().Round(0)
		p.run.Reason, p.run.Attempt = Recovered, h.rec.Attempt
		return true, true
	}
	for pause := time.Duration(0); ; {
		// A job on a Store of its own never owes a slot: its Last never
		// fails, and its claims fail only under MisfireRunAll's limit.
		if p.run.Reason == Scheduled && j.cfg.store != nil && !j.catchUp(ctx, x, &p.run) {
			return false, true
		}
		switch err := j.claim(ctx, x, p); {
		case err == nil:
			return true, true
		case errors.Is(err, ErrClaimed) && p.run.Reason != Manual:
			return false, true // the slot is another replica's, which records it
		case !errors.Is(err, ErrClaimed) && ctx.Err() == nil:
			if pause = retryPause(pause); j.worthRetrying(&p.run, pause) && sleep(ctx, pause) {
				continue
			}
			// A claim that works again does not end the outage: the
			// slots whose claims failed are still owed (recoverOutage).
			x.owe(j, &p.run)
			fallthrough
		default:
			if !retry {
				// A Manual run's Due is its own: another one's claim is
				// not its run.
				j.claimSkipped(ctx, &p.run, err)
			}
			return false, false
		}
	}
}

// claim claims the slot of p in the job's store, setting p.start, and
// returns the store's error.
//
//go:noinline
func (j *Job) claim(ctx context.Context, x *active, p *pending) error {
	p.start = time.Now().Round(0)
	var err error
	if o := x.own; o != nil {
		err = o.claim(p.run.Due)
	} else if m, ok := x.store.(*MemoryStore); ok {
		err = m.claimRun(&p.run, p.start, j.cfg.nodeName())
	} else {
		err = j.claimIn(ctx, x.store, p)
	}
	if err == nil {
		p.run.Attempt = 1
	}
	return err
}

// claimIn claims the slot of p, a claim that started at p.start, in s.
// On a QueuedStore, p.start becomes the time the claim left the store's
// queue: its lease began then.
//
//go:noinline
func (j *Job) claimIn(ctx context.Context, s Store, p *pending) error {
	r := &p.run
	rec := Record{Job: r.Job, Due: r.Due, Reason: r.Reason, Status: Running,
		Start: p.start, Node: j.cfg.nodeName(), Attempt: 1}
	if q, ok := s.(QueuedStore); ok {
		sent, err := q.ClaimQueued(ctx, rec)
		if err == nil && sent.After(p.start) {
			p.start = sent.Round(0)
		}
		return err
	}
	return s.Claim(ctx, rec)
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
// slot is missed. A Manual run is tried within the grace period; a
// catch-up of an outage's owed slots stops at its first failure
// (recoverOutage).
func (j *Job) worthRetrying(r *Run, pause time.Duration) bool {
	at := time.Now().Add(pause)
	if r.Reason == CatchUp {
		return false
	}
	if d := j.cfg.retry; d >= 0 {
		return at.Before(r.Due.Add(d))
	}
	limit := r.Due.Add(j.cfg.grace)
	if r.Reason == Scheduled && j.cfg.misfire != MisfireSkip {
		j.mu.Lock()
		n := next(j.sched, r.Due)
		j.mu.Unlock()
		if !n.IsZero() {
			limit = r.Due.Add(n.Sub(r.Due) / 4 * 3)
		}
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

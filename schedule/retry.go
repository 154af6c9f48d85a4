package schedule

import (
	"context"
	"errors"
	"slices"
	"time"
)

// WithRetry runs a slot again when its run fails (its Func returned an
// error, panicked or timed out): up to attempts runs of the slot in all,
// counted by Run.Attempt, the first retry backoff after the failure, each
// next one after twice the pause before it, up to an hour. A retry is a run
// of the same slot, with the same Due and Reason and the next Run.Attempt;
// the slot's outcome is its last attempt's. On a SharedStore, the job
// records each failed attempt and claims the next in one call (Retry), made
// when the retry's pause is over, so that the slot's record shows the
// attempt in progress, and a write of an earlier attempt is refused, as
// after a takeover; during the pause the record shows the failed attempt
// still Running, with its lease renewed. A Retry that returns ErrLeaseLost
// ends the retries, and the job writes nothing more of the slot, no longer
// its own; any other error ends them too, and the failed attempt's outcome
// is recorded with Finish, its Err saying why. On any other Store, the
// retries keep the first claim, and the slot's record, written once at the
// end, shows the last attempt. A Recovered run, whose Attempt counts the
// runs of its slot on other nodes, has as many fewer left.
//
// Each attempt's outcome reaches the Observer: a failed attempt that is
// retried as it fails, while the slot's run is still in flight. A retry
// waiting for its pause counts as a run in flight (to the overlap policy,
// Pause, Stop and a RunLimit), and holds its runner's goroutine: Stop and
// Pause end the wait, and the slot keeps the outcome of its last attempt,
// as does a job stopped or paused when the attempt fails, unless the
// Stop or a Shutdown hands its runs over (see Job.Shutdown; Stop on a
// LeaseStore): the slot, with attempts left, is then Released, for
// another node to retry it. A run that was
// cancelled (Stop, OverlapReplace, a lost lease) is not retried. attempts
// below 2 means no retry; a negative backoff means zero.
func WithRetry(attempts int, backoff time.Duration) Option {
	return optionFunc(func(c *config) {
		c.attempts = max(attempts, 1)
		if c.attempts == 1 {
			c.attempts = 0
		}
		c.backoff = max(backoff, 0)
	})
}

// maxRetryPause bounds the pause before a retry.
const maxRetryPause = time.Hour

// retryPause returns the pause before the retry of a run whose attempt
// failed: backoff after the first attempt, doubling with each attempt
// after it, up to maxRetryPause.
func (c *config) retryPause(attempt int) time.Duration {
	d := c.backoff
	for i := 1; i < attempt && d > 0 && d < maxRetryPause; i++ {
		d *= 2
	}
	return min(d, maxRetryPause)
}

// A retryWait is a retry waiting for its pause: Pause ends it with cancel.
type retryWait struct {
	cancel context.CancelCauseFunc
}

// retry follows an attempt of the run of p that failed at end with msg,
// while the run has attempts left and its context is live. It passes the
// attempt's Record to the Observer, waits for the pause, and claims the
// next attempt. It reports again if the next attempt is to run. Otherwise
// the slot's outcome is this attempt's, which the Observer has: write says
// whether the store is to be told, with msg (it is not if the slot is no
// longer this node's, or its lease was given up and is left to expire).
//
//go:noinline
func (j *Job) retry(ctx context.Context, x *active, p *pending, renew *renewal, end time.Time, msg string) (again, write bool, _ string) {
	j.reportFailed(x, p, end, msg)
	if !j.awaitRetry(ctx, x, j.cfg.retryPause(p.run.Attempt)) {
		return false, !errors.Is(context.Cause(ctx), ErrLeaseNotRenewed), msg
	}
	switch err := j.claimNext(x, p, renew, end, msg); {
	case err == nil:
		return true, true, msg
	case errors.Is(err, ErrLeaseLost):
		return false, false, msg // the slot is another node's, whose record it is
	default:
		return false, true, joinErr(msg, "schedule: retry: "+err.Error())
	}
}

// reportFailed passes the Record of the run of p, whose attempt failed at
// end with msg and is to be retried, to the Observer, in turn with the
// outcomes of the job's other runs (see reportEnded).
func (j *Job) reportFailed(x *active, p *pending, end time.Time, msg string) {
	f := j.cfg.observer
	if f == nil {
		return
	}
	j.reportInTurn(x, f, p, end, Failed, msg)
}

// reportInTurn passes the Record of the run of p, ended at end with
// status and msg, to the Observer f, in turn with the outcomes of the
// job's other runs under every policy but OverlapAllow (see reportEnded):
// an attempt to be retried, and a run handed inline (a catch-up), which
// reports where it ends.
func (j *Job) reportInTurn(x *active, f func(Record), p *pending, end time.Time, status Status, msg string) {
	if j.cfg.overlap == OverlapAllow {
		j.report(f, p, end, status, msg)
		return
	}
	j.mu.Lock()
	t := x.takeTurnLocked()
	j.mu.Unlock()
	j.awaitTurn(x, t)
	defer func() {
		j.mu.Lock()
		x.passTurnLocked()
		j.mu.Unlock()
	}()
	j.report(f, p, end, status, msg)
}

// awaitRetry waits for d before the next attempt of a run whose context is
// ctx, and reports whether the attempt is to start: not if ctx ended, or
// the job was stopped or paused, before d had passed. The wait is in x's
// retries meanwhile, where Pause finds it.
func (j *Job) awaitRetry(ctx context.Context, x *active, d time.Duration) bool {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &retryWait{cancel: cancel}
	j.mu.Lock()
	if j.state != jobStarted || j.paused() {
		j.mu.Unlock()
		return false
	}
	r := x.rareLocked()
	r.retries = append(r.retries, w)
	j.mu.Unlock()
	ok := d == 0 || sleep(wctx, d)
	j.mu.Lock()
	if i := slices.Index(r.retries, w); i >= 0 {
		r.retries = slices.Delete(r.retries, i, i+1)
	}
	x.tidyRareLocked()
	// Under the lock, as Pause and Stop change the job: either they found
	// the wait and ended it, or the attempt starts before them, a run in
	// flight that they let go on.
	ok = ok && wctx.Err() == nil && j.state == jobStarted && !j.paused()
	j.mu.Unlock()
	return ok
}

// endRetriesLocked ends the retries waiting for their pause, with why.
// The caller holds j.mu.
func (x *active) endRetriesLocked(why error) {
	if x.r == nil {
		return
	}
	for _, w := range x.r.retries {
		w.cancel(why)
	}
}

// claimNext claims the attempt of the run of p that follows the one that
// failed at end with msg, setting p.start and p.run.Attempt. On a
// SharedStore, Retry records the failed attempt and claims the next, and
// renew, if not nil, renews the new claim from then on; on any other
// store, the first claim holds, and so does what renew renews.
func (j *Job) claimNext(x *active, p *pending, renew *renewal, end time.Time, msg string) error {
	start := time.Now().Round(0)
	var err error
	retried := false // the store claimed the next attempt
	switch m, ok := x.store.(*MemoryStore); {
	case x.own != nil:
	case ok && p.claim == nil:
		err = m.retryRun(&p.run, start, j.cfg.nodeName())
		retried = err == nil
	default:
		rs := j.cfg.shared
		if rs == nil {
			break
		}
		rec := j.claimed(p)
		rec.End, rec.Status, rec.Err = end, Failed, msg
		if renew != nil {
			renew.moving(true)
		}
		// Not the run's context: Retry records an outcome, as Finish
		// does, and a Stop that cut it short could not tell which
		// attempt the store holds.
		err = rs.Retry(context.Background(), rec)
		retried = err == nil
		if renew != nil && !retried {
			renew.moving(false)
		}
	}
	if err != nil {
		return err
	}
	p.start, p.run.Attempt = start, p.run.Attempt+1
	if renew != nil && retried {
		renew.retried(j.claimed(p), start)
	}
	return nil
}

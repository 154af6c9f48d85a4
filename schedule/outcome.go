package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// claimed returns the Record of the claim of p's slot, at its current
// attempt.
func (j *Job) claimed(p *pending) Record {
	if h := p.claim; h != nil {
		rec := h.rec
		rec.Reason, rec.Start, rec.Attempt = Recovered, p.start, p.run.Attempt
		return rec
	}
	r := &p.run
	return Record{Job: r.Job, Due: r.Due, Reason: r.Reason, Status: Running,
		Start: p.start, Node: j.cfg.nodeName(), Attempt: r.Attempt, Planned: p.planned}
}

// finish records the outcome of the run of p, whose Func has returned,
// and passes it to the Observer. The outcome is what ctx said when the
// Func returned, and runErr, the error of the Func's own context then: a
// Stop or a replacement after that does not make a finished run Canceled.
// Only a lease given up since decides otherwise. renew, if not nil, renews
// the run's lease.
//
// An attempt that failed, of a run with attempts left (WithRetry), is
// retried instead: finish reports again once the next attempt is claimed,
// for the caller to run it, and returns renew, which renews its lease.
// (Returned, not kept by the caller across the call: the runner's frame
// stays as small as without retries.) The job's Trace, if any, learns of
// each attempt's outcome first.
//
//go:noinline
func (j *Job) finish(ctx context.Context, x *active, p *pending, renew *renewal, runErr, err error) (next *renewal, again bool) {
	if testHookReturned != nil {
		testHookReturned()
	}
	// The run was cancelled if its Func's context was when the Func
	// returned (runErr); ctx may have been cancelled since, by a Stop.
	var cause error
	if runErr != nil && runErr != context.DeadlineExceeded {
		cause = context.Cause(ctx)
	}
	// A lease given up since, even after the Func returned, decides: the
	// slot is taken over and run again, so this run is not its outcome.
	if lost := context.Cause(ctx); errors.Is(lost, ErrLeaseNotRenewed) {
		cause = lost
	}
	end := time.Now().Round(0)
	status, msg := outcome(cause, runErr, j.cfg.timeout, err)
	if status == Canceled && j.handsOver(cause) {
		// Cut short by a stopping node: the slot is handed over, unless
		// the Func says, returning nil, that it did its work.
		if err != nil {
			status = Released
		} else {
			status, msg = Succeeded, ""
		}
	}
	// A run that gave up its lease leaves the claim to expire, so that the
	// slot is taken over and run again; any other outcome is recorded,
	// while the lease is still renewed: a Renew that hangs does not make
	// a run that ended in time lose its outcome, nor a Finish that waits
	// let the lease expire. A renewal that comes after the Finish is
	// refused by the store (the claim is no longer running), and changes
	// nothing.
	write, report := !errors.Is(cause, ErrLeaseNotRenewed), true
	if status == Failed && p.run.Attempt < j.cfg.attempts && ctx.Err() != nil && write &&
		(j.handsOver(context.Cause(ctx)) || j.shuttingDown()) {
		// Stopped or shut down after the attempt failed, before its
		// record: the slot, with attempts left, is handed over, as below.
		status = Released
	}
	if status == Failed && p.run.Attempt < j.cfg.attempts && ctx.Err() == nil {
		var again bool
		if again, write, msg = j.retryAttempt(ctx, x, p, renew, end, msg); again {
			return renew, true
		}
		report = false // the Observer has this attempt's outcome
		if ctx.Err() != nil && j.handsOver(context.Cause(ctx)) || write && j.shuttingDown() {
			// Stopped during the retry's pause, or shut down when the
			// attempt failed: the slot, with attempts left, is handed
			// over, for a node that runs on to retry it.
			status = Released
		}
	}
	var ferr error
	if write {
		switch m, ok := x.store.(*MemoryStore); {
		case x.own != nil:
			// A job without a Store keeps no outcome: its Observer has it.
		case status == Released:
			ferr = j.release(p, end, msg)
		case ok && p.claim == nil:
			ferr = m.finishRun(&p.run, j.cfg.nodeName(), end, status, msg)
		default:
			ferr = j.finishIn(x.store, p, end, status, msg)
		}
		if ferr != nil {
			msg = joinErr(msg, "schedule: finish: "+ferr.Error())
		}
	}
	if renew != nil {
		j.stopRenewal(x, renew)
	}
	if write {
		// A Finish or a Release that fails leaves the claim Running, to be
		// taken over once its lease expires and run again: it counts in
		// the store's outage as a failed claim does. (After the renewal's
		// stop: a Trace's StoreFailed that calls runtime.Goexit leaves no
		// lease renewed.)
		j.heard(context.Background(), x.store, ferr)
	}
	if j.cfg.pauseOn > 0 && write {
		j.counted(x, p, status, msg)
	}
	if j.cfg.trace != nil {
		if report {
			j.traceEnd(p, end, status, msg)
		}
		p.ended = nil // the Trace's: the Observer's is made below
	}
	if f := j.cfg.observer; f != nil && report {
		if p.inline {
			j.reportInTurn(x, f, p, end, status, msg)
		} else {
			p.ended = &ended{status: status, end: end, msg: msg}
		}
	}
	return nil, false
}

// retryAttempt tells the job's Trace, if any, that the attempt of p failed
// at end with msg, and has it retried (retry). Should the Trace's hook or
// the Observer call runtime.Goexit meanwhile, the run's lease is given up,
// so that the slot is taken over, or, on a SharedStore without leases,
// whose claims never expire, the run is recorded Failed, as when the Func
// calls it.
//
//go:noinline
func (j *Job) retryAttempt(ctx context.Context, x *active, p *pending, renew *renewal, end time.Time, msg string) (again, write bool, m string) {
	returned := false
	defer func() {
		switch {
		case returned:
		case renew != nil:
			j.stopRenewal(x, renew)
		case j.cfg.shared != nil && j.cfg.lease == nil:
			j.goexited(x, p)
		}
	}()
	if j.cfg.trace != nil {
		j.traceEnd(p, end, Failed, msg)
	}
	again, write, m = j.retry(ctx, x, p, renew, end, msg)
	returned = true
	return again, write, m
}

// finishIn records in s the outcome of the run of p, which ended at end.
//
//go:noinline
func (j *Job) finishIn(s Store, p *pending, end time.Time, status Status, msg string) error {
	rec := j.claimed(p)
	rec.End, rec.Status, rec.Err = end, status, msg
	// The runner made the run's context from context.Background: it has
	// no values for Finish to keep.
	return s.Finish(context.Background(), rec)
}

// handsOver reports whether a run whose context ended with cause is
// handed over rather than Canceled: cut short by Shutdown, on a
// SharedStore, or by Stop, on a SharedStore with a lease.
func (j *Job) handsOver(cause error) bool {
	switch {
	case testMutant == mutantNoRelease:
		return false
	case errors.Is(cause, errShutdown):
		return j.cfg.shared != nil
	case errors.Is(cause, errStopped):
		j.mu.Lock()
		cancel := j.flags&jobCancel != 0
		j.mu.Unlock()
		return j.cfg.lease != nil && !cancel
	}
	return false
}

// shuttingDown reports whether Shutdown ended the job, on a SharedStore
// that can hand its runs over.
func (j *Job) shuttingDown() bool {
	if j.cfg.shared == nil || testMutant == mutantNoRelease {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.flags&jobShutdown != 0 && j.flags&jobCancel == 0
}

// release records the run of p, cut short at end, Released in the job's
// SharedStore, for a node to take its slot over, and has the jobs of this
// process on that store look for it at once. A store that fails leaves the
// claim Running: it is taken over once its lease expires.
//
//go:noinline
func (j *Job) release(p *pending, end time.Time, msg string) error {
	rec := j.claimed(p)
	rec.End, rec.Status, rec.Err = end, Released, msg
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	err := j.cfg.shared.Release(ctx, rec)
	if err == nil {
		kick(j.cfg.shared)
	}
	return err
}

// releaseTimeout bounds a Release.
const releaseTimeout = 10 * time.Second

// report passes the Record of the run of p, which ended at end, to the
// Observer f.
//
//go:noinline
func (j *Job) report(f func(Record), p *pending, end time.Time, status Status, msg string) {
	rec := j.claimed(p)
	rec.End, rec.Status, rec.Err = end, status, msg
	f(rec)
}

// reportEnded passes the outcome of the run of p to the Observer, and
// then accounts for the report's end, even if the Observer panics or
// calls runtime.Goexit. Under every policy but OverlapAllow, where runs
// follow one another, their outcomes reach the Observer one at a time and
// in order: a run that a RunNow from the Observer started, or the next
// slot's, or a Backfill's, runs at once, but its outcome waits for the
// Observer's call before it to return. ticket is the turn the runner took
// (takeTurnLocked) as the run ended.
func (j *Job) reportEnded(x *active, p *pending, ticket uint64) {
	ordered := j.cfg.overlap != OverlapAllow
	if ordered {
		j.awaitTurn(x, ticket)
	}
	defer func() {
		j.mu.Lock()
		x.reports--
		if ordered {
			x.passTurnLocked()
		}
		j.quietLocked()
		j.mu.Unlock()
	}()
	j.report(j.cfg.observer, p, p.ended.end, p.ended.status, p.ended.msg)
}

// takeTurnLocked returns the ticket of an outcome to pass to the
// Observer in turn: the outcomes of the job's runs, under every policy but
// OverlapAllow, are passed in the order their tickets were taken. The
// ticket must be served: awaitTurn, then passTurnLocked. The caller holds
// j.mu.
func (x *active) takeTurnLocked() uint64 {
	t := x.ticket
	x.ticket++
	return t
}

// awaitTurn waits until the outcome of ticket t may reach the Observer:
// every outcome of an earlier ticket has. It waits on a channel, not a
// mutex: in a testing/synctest bubble a wait on a mutex would stop the
// bubble's clock.
func (j *Job) awaitTurn(x *active, t uint64) {
	for {
		j.mu.Lock()
		if x.served == t {
			j.mu.Unlock()
			return
		}
		if x.turn == nil {
			x.turn = make(chan struct{})
		}
		turn := x.turn
		j.mu.Unlock()
		<-turn
	}
}

// passTurnLocked serves the next ticket, waking the runners waiting for
// theirs. The caller holds j.mu.
func (x *active) passTurnLocked() {
	x.served++
	if x.turn != nil {
		close(x.turn)
		x.turn = nil
	}
}

// outcome returns the status of a run and its error message, from the
// cause of the run's cancellation, if it was cancelled, and the error of
// its context, read when the Func returned.
func outcome(cause, runErr error, timeout time.Duration, err error) (Status, string) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if cause != nil && runErr != context.DeadlineExceeded {
		return Canceled, joinErr(cause.Error(), msg)
	}
	if runErr == context.DeadlineExceeded {
		if errors.Is(err, context.DeadlineExceeded) {
			msg = "" // the Func passed on its context's error
		}
		return Failed, joinErr(fmt.Sprintf("schedule: run timed out after %v: %v", timeout, context.DeadlineExceeded), msg)
	}
	if err != nil {
		return Failed, msg
	}
	return Succeeded, ""
}

func joinErr(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || b == a:
		return a
	}
	return a + ": " + b
}

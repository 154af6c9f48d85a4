package schedule

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// runner runs the pending runs of w (its first, then its batch), then
// those of the queue, one after another, and exits when there are none
// left.
func (j *Job) runner(w *work) {
	x := j.x       // set before any runner starts, never changed
	var cur uint64 // the id of the flight in progress, if any
	normal := false
	defer func() {
		if normal {
			return
		}
		// The Func, or the Observer or a Trace's hook while the run was
		// finished, called runtime.Goexit: give up the runner's place, so
		// that the job goes on and Stop does not wait for it forever.
		// (run and finish gave the run's lease up.)
		j.mu.Lock()
		x.land(cur)
		if cur != 0 && w.p.run.Reason == Backfill {
			j.fillRanLocked(&w.p)
		}
		j.exitLocked(x)
		j.mu.Unlock()
	}()
	p := &w.p
	for {
		ctx, cancel, id := j.take(x, w)
		if id == 0 {
			normal = true
			return
		}
		cur = id
		if claimed, _ := j.begin(ctx, cancel, x, p, false); claimed {
			renew, runErr, err := j.run(ctx, cancel, x, p, nil)
			for {
				var again bool // WithRetry: the next attempt is claimed
				renew, again = j.finish(ctx, x, p, renew, runErr, err)
				if !again {
					break
				}
				renew, runErr, err = j.run(ctx, cancel, x, p, renew)
			}
		}
		cancel(nil)
		j.mu.Lock()
		x.land(cur)
		cur = 0
		if p.run.Reason == Backfill {
			j.fillRanLocked(p)
		}
		if p.ended == nil {
			j.mu.Unlock()
			continue
		}
		// The run no longer counts as in flight when the Observer learns
		// of it, so that a RunNow from the Observer (a retry of a failed
		// run) finds the job free. A runner with nothing left to run
		// leaves first; one with more runs queued keeps the job busy.
		leaving := len(w.batch) == 0 && len(x.queue) == 0
		x.reports++
		ticket := x.takeTurnLocked()
		if leaving {
			normal = true
			j.exitLocked(x)
		}
		j.mu.Unlock()
		j.reportEnded(x, p, ticket)
		if leaving {
			return
		}
	}
}

// take moves the next pending run to start, from w or else the queue,
// into w.p, and returns its context and flight id. Runs the job may
// not start (it is stopped or paused) it drops, reporting them. With none
// left it accounts for the runner's exit and returns id 0.
func (j *Job) take(x *active, w *work) (context.Context, context.CancelCauseFunc, uint64) {
	p := &w.p
	for {
		j.mu.Lock()
		switch {
		case !w.taken && !p.run.Due.IsZero():
		case len(w.batch) > 0:
			*p = w.batch[0]
			w.batch = w.batch[1:]
		case len(x.queue) == 1:
			*p = x.queue[0]
			x.queue[0] = pending{}
			x.queue = x.queue[:0] // keeps the array for the next run
		case len(x.queue) > 1:
			*p = x.queue[0]
			x.queue[0] = pending{}
			x.queue = x.queue[1:]
		default:
			j.exitLocked(x)
			j.mu.Unlock()
			return nil, nil, 0
		}
		w.taken = true
		if j.state != jobStarted || j.paused() {
			if p.claim != nil {
				// Not finished: its lease expires, and a replica takes
				// it over again.
				j.mu.Unlock()
				continue
			}
			j.dropTakenLocked(p)
			continue
		}
		ctx, cancel := context.WithCancelCause(runParent{j})
		x.flights++
		id := x.flights
		x.runs = append(x.runs, flight{id: id, due: p.run.Due, cancel: cancel, recovered: p.claim != nil})
		j.mu.Unlock()
		return ctx, cancel, id
	}
}

// dropTakenLocked reports p Skipped, as a run of a job stopped or paused.
// The caller holds j.mu, which it unlocks.
//
//go:noinline
func (j *Job) dropTakenLocked(p *pending) {
	r := j.drop(*p, j.refusal())
	j.mu.Unlock()
	j.observe([]Record{r})
}

// land removes the flight id from the runs in flight, if it is there.
// The caller holds the job's lock.
func (x *active) land(id uint64) {
	if i := slices.IndexFunc(x.runs, func(f flight) bool { return f.id == id }); i >= 0 {
		x.runs = slices.Delete(x.runs, i, i+1)
	}
}

// exitLocked accounts for a runner that exits, wakes the job's Backfill,
// which waits for the job to be free, and makes the look for expired
// claims that found the job busy, if it is free now. The caller holds
// j.mu.
func (j *Job) exitLocked(x *active) {
	x.runners--
	j.quietLocked()
	j.fillWakeLocked()
	if x.look && !x.reclaiming && j.freeLocked(x) && j.state == jobStarted && !j.paused() {
		j.takeOverLocked(x)
	}
}

// freeLocked reports whether a claim taken over would start at once: no
// run in flight, or under OverlapAllow fewer than WithMaxParallel. A run
// whose claim waits for the job's runs on other nodes to end is not in
// flight: the claim taken over may be what it waits for, which would
// otherwise wait for it in turn. The caller holds j.mu.
func (j *Job) freeLocked(x *active) bool {
	n := x.runners
	for i := range x.runs {
		if x.runs[i].waiting {
			n--
		}
	}
	return j.roomLocked(n)
}

// idleLocked reports whether the overlap policy would start a run at once,
// counting every runner: one that waits for the job's runs on other nodes
// too. The caller holds j.mu.
func (j *Job) idleLocked(x *active) bool { return j.roomLocked(x.runners) }

// roomLocked reports whether the overlap policy starts a run at once
// beside n runs in flight. The caller holds j.mu.
func (j *Job) roomLocked(n int) bool {
	if c := j.cfg; c.overlap == OverlapAllow {
		return c.maxParallel == 0 || n < c.maxParallel
	}
	return n == 0
}

// quiet reports whether nothing of the job's runs: no runner, and no
// callback of its timer. The caller holds j.mu.
func (j *Job) quiet() bool {
	return j.flags&jobBusy == 0 && (j.x == nil || j.x.runners == 0 && j.x.reports == 0 && j.x.telling == 0 && !j.x.reclaiming)
}

// quietLocked wakes the Stop waiting for the job to be quiet, if it is.
// The caller holds j.mu.
func (j *Job) quietLocked() {
	if x := j.x; x != nil && x.idle != nil && j.quiet() {
		close(x.idle)
		x.idle = nil
	}
}

// wait waits until the job is quiet.
func (j *Job) wait(ctx context.Context) error {
	for {
		j.mu.Lock()
		if j.quiet() {
			j.mu.Unlock()
			return nil
		}
		x := j.active(time.Now().Round(0))
		if x.idle == nil {
			x.idle = make(chan struct{})
		}
		idle := x.idle
		j.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// run runs the Func for the claimed slot of p, under the job's timeout if
// it has one, renewing its lease if the store has leases: with kept, the
// renewal of the attempt before, if it is a retry, or else a new one. ctx
// is the run's context, and cancel cancels it; with a Trace, the Func
// runs under the context its RunStart returns. It returns what the caller
// passes to finish: the run's renewal, if any, the error of the Func's
// context when it returned, and the Func's error, or its panic. A Func
// that calls runtime.Goexit leaves no outcome: its lease is left to
// expire, so that the slot is taken over.
//
// The Func runs right under run and the runner, whose frames are small:
// the steps before and after it are calls of their own, made from the
// runner, so that most Funcs run, and their runs are recorded, without
// growing their goroutine's first stack.
func (j *Job) run(ctx context.Context, cancel context.CancelCauseFunc, x *active, p *pending, kept *renewal) (renew *renewal, runErr, err error) {
	c := call{ctx: ctx, renew: kept}
	if ls := j.cfg.lease; kept == nil && ls != nil && ls.Lease() > 0 {
		c.renew = j.renew(ls, p, cancel)
	}
	// Deferred before the Trace's RunStart, which may call runtime.Goexit
	// too.
	defer j.end(x, p, &c, &renew, &runErr, &err)
	if j.cfg.trace != nil {
		c.ctx = j.traceStart(ctx, p)
	}
	if t := j.cfg.timeout; t > 0 {
		c.ctx, c.cancel = context.WithTimeout(c.ctx, t)
	}
	if ctx.Err() == nil { // not stopped or replaced since the claim
		c.err = j.f(c.ctx, p.run)
	} else {
		c.err = context.Cause(ctx) // the Func did not run: its slot's work is not done
	}
	c.returned = true
	return
}

// A call is a call of the Func, in run.
type call struct {
	ctx      context.Context    // the Func's: the run's, or under it with the job's timeout
	cancel   context.CancelFunc // ctx's, if not the run's
	renew    *renewal           // renews the run's lease, if the store has leases
	err      error              // the Func's
	returned bool               // the Func returned, or was not called
}

// end, deferred by run, sets run's results: it turns a panic of the Func
// into its error. If the Func, or the Trace's RunStart, called
// runtime.Goexit, it gives the lease up instead, for the slot to be taken
// over once it expires; on a SharedStore without a lease, whose claims
// never expire and count as runs in flight, it records the run Failed.
// The Trace's RunEnd, if any, gets the run Failed, last.
func (j *Job) end(x *active, p *pending, c *call, renew **renewal, runErr, err *error) {
	v := recover()
	if !c.returned && v == nil { // runtime.Goexit
		if c.renew != nil {
			j.stopRenewal(x, c.renew)
		}
		if c.cancel != nil {
			c.cancel()
		}
		if j.cfg.shared != nil && j.cfg.lease == nil {
			j.goexited(x, p)
		}
		if j.cfg.trace != nil { // last: its RunEnd may call runtime.Goexit too
			j.traceGoexit(p)
		}
		return
	}
	if v != nil {
		c.err = fmt.Errorf("schedule: panic: %v", v)
	}
	*renew, *runErr, *err = c.renew, c.ctx.Err(), c.err
	if c.cancel != nil {
		c.cancel()
	}
}

// goexited records the run of p Failed: its Func called runtime.Goexit.
//
//go:noinline
func (j *Job) goexited(x *active, p *pending) {
	end := time.Now().Round(0)
	if m, ok := x.store.(*MemoryStore); ok && p.claim == nil {
		_ = m.finishRun(&p.run, j.cfg.nodeName(), end, Failed, msgGoexit)
		return
	}
	_ = j.finishIn(x.store, p, end, Failed, msgGoexit)
}

// msgGoexit is the Err of a run whose Func called runtime.Goexit.
const msgGoexit = "schedule: the Func called runtime.Goexit"

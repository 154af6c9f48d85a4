package circulation

import (
	"context"
	"time"
)

// This file is the running side of a Trigger: what happens on the goroutine
// of a timer callback that owns the running bit, from the first iteration to
// the last, and how Suspend reaches the context of the iteration in flight.

// start is a timer callback for version v, due at due (Unix nanoseconds,
// or 0 if not recorded): it either runs the Func, leaves a reservation for
// the run in flight, or finds itself stale. It reports false if it was
// stale.
func (t *Trigger) start(v uint32, due int64) bool {
	for {
		s := t.state.Load()
		n, e := enter(s, v)
		if e == entryStale {
			return false
		}
		if e == entryDeferred && !reserved(s) {
			if o := t.obs(); o != nil {
				o.noteReserve(due)
			}
		}
		if t.state.CompareAndSwap(s, n) {
			if e == entryRun {
				t.loop(due)
			}
			return true
		}
	}
}

// loop runs the Func, then again for as long as runs were reserved
// meanwhile, and arms the next timer if the last run asked for one and was
// not superseded. The caller holds the running bit; loop gives it up on
// every way out, including a panic or runtime.Goexit in the Func.
func (t *Trigger) loop(due int64) {
	normal := false
	defer func() {
		if !normal {
			t.abort()
		}
	}()
	for {
		next, ok := t.iterate(due)
		s, x, at := t.finish(ok)
		if x == exitAgain {
			due = at
			continue
		}
		// The running bit is given up: from here on, abort would take it
		// from whoever holds it now.
		normal = true
		if testHookLoopEnd != nil {
			testHookLoopEnd()
		}
		switch x {
		case exitArm:
			t.rearm(version(s), next)
		case exitCompete:
			t.reassert(dueAt(next))
		}
		return
	}
}

// iterate runs the Func once with a fresh context, or, with
// WithMinInterval, asks to run again when the interval is over if the last
// run started too recently: that counts as a run that returned (wait, true)
// without calling the Func, so that every call made meanwhile is handled as
// during a run.
func (t *Trigger) iterate(due int64) (next time.Duration, ok bool) {
	if e := t.ext; e != nil {
		if wait, soon := t.tooSoon(e); soon {
			return wait, true
		}
		if e.obs != nil {
			return t.observed(e.obs, due)
		}
	}
	ctx, c := t.runContext()
	t.begin(c)
	defer t.end(c)
	if t.onPanic != nil {
		defer func() {
			if r := recover(); r != nil {
				next, ok = 0, false
				t.onPanic(r)
			}
		}()
	}
	return t.f(ctx)
}

// tooSoon reports whether the run about to start must wait for
// WithMinInterval, and how long; if it need not, it records its start. Only
// the goroutine holding the running bit calls it.
func (t *Trigger) tooSoon(e *extra) (time.Duration, bool) {
	if e.minInterval <= 0 {
		return 0, false
	}
	now := time.Now()
	if wait := e.lastStart.Add(e.minInterval).Sub(now); !e.lastStart.IsZero() && wait > 0 && !closed(t.state.Load()) {
		return wait, true
	}
	e.lastStart = now
	return 0, false
}

// runContext returns a fresh context for a run, and its cancelContext.
func (t *Trigger) runContext() (context.Context, *cancelContext) {
	if t.ext != nil && t.ext.parent != nil {
		p := &parentedContext{parent: t.ext.parent}
		return p, &p.cancelContext
	}
	c := new(cancelContext)
	return c, c
}

// observed is the rest of iterate for a Trigger with WithStats or
// WithObserver: it counts the run, and reports its start and its end. The
// events are reported from frames of their own, and what they need is kept
// in one small record, so that the Func's frames sit as little deeper as
// they can on the run's goroutine, whose stack would otherwise grow.
func (t *Trigger) observed(o *observer, due int64) (time.Duration, bool) {
	r := observedRun{o: o, run: o.runs.Add(1), due: due}
	if o.f != nil {
		r.start = o.started(r.run, due)
	}
	t.call(&r)
	if r.returned && o.f != nil { // else the panic's unwinding reported it
		s := t.state.Load()
		o.ended(&r, superseded(s) || closed(s), nil)
	}
	return r.next, r.ok
}

// An observedRun is what observed, call and unwound share of a run.
type observedRun struct {
	o        *observer
	run      uint64
	due      int64
	start    time.Time
	next     time.Duration
	ok       bool
	returned bool // the Func returned: it neither panicked nor called runtime.Goexit
}

// call is iterate's call of the Func for an observed run. If the Func
// panics or calls runtime.Goexit, its deferred call counts the panic and
// reports the run's end.
func (t *Trigger) call(r *observedRun) {
	ctx, c := t.runContext()
	t.begin(c)
	defer t.end(c)
	defer t.unwound(r)
	r.next, r.ok = t.f(ctx)
	r.returned = true
}

// unwound is call's deferred call, and the one that recovers a panic of
// the Func for the panic handler: it counts the panic, reports the run's
// end, then hands the panic to the handler, as iterate does without an
// observer.
func (t *Trigger) unwound(r *observedRun) {
	if r.returned {
		return
	}
	r.o.panics.Add(1)
	r.next, r.ok = 0, false
	var p any
	if t.onPanic != nil {
		p = recover() // nil for runtime.Goexit, which goes on
	}
	if r.o.f != nil {
		s := t.state.Load()
		r.o.ended(r, superseded(s) || closed(s), p)
	}
	if p != nil {
		t.onPanic(p)
	}
}

// started reports the start of run, due at due, and returns its start.
func (o *observer) started(run uint64, due int64) time.Time {
	start := time.Now()
	o.f(TriggerEvent{Kind: RunStarted, Run: run, Due: unixNano(due), Start: start})
	return start
}

// ended reports the end of run r, which panicked with p if it did not
// return.
func (o *observer) ended(r *observedRun, superseded bool, p any) {
	o.f(TriggerEvent{
		Kind: RunEnded, Run: r.run, Due: unixNano(r.due), Start: r.start, Duration: time.Since(r.start),
		Next: r.next, Again: r.ok, Superseded: superseded, Panicked: !r.returned, Panic: p,
	})
}

// finish publishes the end of an iteration (see finish in state.go). With
// an observer, it also returns when the reservation it takes, if any, was
// made: read after the state that shows the reservation, whose writer
// stored the time before publishing it.
func (t *Trigger) finish(ok bool) (uint32, exit, int64) {
	o := t.obs()
	for {
		s := t.state.Load()
		var at int64
		if o != nil && reserved(s) {
			at = o.reservedAt.Load()
		}
		n, x := finish(s, ok)
		if t.state.CompareAndSwap(s, n) {
			return n, x, at
		}
	}
}

// abort gives up the running bit while the Func panics or exits the
// goroutine (see abort in state.go).
func (t *Trigger) abort() {
	for {
		s := t.state.Load()
		n, x := abort(s)
		if t.state.CompareAndSwap(s, n) {
			if x == exitArm {
				t.rearm(version(n), 0)
			}
			return
		}
	}
}

// rearm is arm on the running goroutine, for the next run the Func asked
// for or for a fire made during a run that panicked. A Scheduler that
// panics there (a stopped wheel.Wheel does) has armed nothing, and no caller
// of the Trigger is on this goroutine to receive the panic: the Trigger
// rests, as if the arming had been superseded, and the panic goes to the
// panic handler if there is one.
func (t *Trigger) rearm(v uint32, d time.Duration) {
	defer func() {
		if r := recover(); r != nil && t.onPanic != nil {
			t.onPanic(r)
		}
	}()
	t.arm(v, d)
}

// begin publishes the context of the iteration that is about to begin, and
// cancels it at once if a Suspend has come since the iteration took the
// running bit. The store of cur comes before the load of the state, and a
// Suspend's compare-and-swap comes before its load of cur (see cancelRun):
// Go's atomics are sequentially consistent, so at least one of the two sees
// the other's write, and the context is cancelled either here or there.
func (t *Trigger) begin(ctx *cancelContext) {
	if testHookBegin != nil {
		testHookBegin()
	}
	t.cur.Store(ctx)
	if canceled(t.state.Load()) {
		ctx.cancel(context.Canceled)
	}
}

// end withdraws the context published by begin and cancels it, as a
// request's context is cancelled when its handler returns. It comes before
// the compare-and-swap of finish or abort that clears the canceled bit.
func (t *Trigger) end(ctx *cancelContext) {
	t.cur.Store(nil)
	ctx.cancel(context.Canceled)
}

// cancelRun is called by a Suspend that published while a run was in flight:
// it cancels the context of that run. The canceled bit, still set, says that
// a Suspend has come since the iteration published in cur began: the bit is
// cleared only by the running goroutine, as an iteration begins or the
// loop ends, and cur is withdrawn (end) before either. An iteration that
// began after this Suspend is cancelled only if another Suspend set the bit
// again, which it would do itself; an iteration that has ended was
// cancelled by end, so cancelling it again changes nothing.
func (t *Trigger) cancelRun() {
	if c := t.cur.Load(); c != nil && canceled(t.state.Load()) {
		c.cancel(context.Canceled)
	}
}

var _ context.Context = (*cancelContext)(nil)

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
		s, x := t.finish(ok)
		if x == exitAgain {
			if o := t.obs(); o != nil {
				due = o.reservedAt.Load()
			}
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
	if e := t.ext; e != nil && e.minInterval > 0 {
		now := time.Now()
		if wait := e.lastStart.Add(e.minInterval).Sub(now); !e.lastStart.IsZero() && wait > 0 && !closed(t.state.Load()) {
			return wait, true
		}
		e.lastStart = now
	}
	var ctx context.Context
	var c *cancelContext
	if t.ext != nil && t.ext.parent != nil {
		p := &parentedContext{parent: t.ext.parent}
		ctx, c = p, &p.cancelContext
	} else {
		c = new(cancelContext)
		ctx = c
	}
	t.begin(c)
	if o := t.obs(); o != nil {
		return t.observed(o, ctx, c, due)
	}
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

// observed is the rest of iterate for a Trigger with WithStats or
// WithObserver: it counts the run, and reports its start and its end.
func (t *Trigger) observed(o *observer, ctx context.Context, c *cancelContext, due int64) (next time.Duration, ok bool) {
	defer t.end(c)
	ev := TriggerEvent{Run: o.runs.Add(1), Due: unixNano(due)}
	if o.f != nil {
		ev.Kind, ev.Start = RunStarted, time.Now()
		o.f(ev)
	}
	returned := false
	defer func() {
		var r any
		if !returned {
			o.panics.Add(1)
			next, ok = 0, false
			if t.onPanic != nil {
				r = recover() // nil for runtime.Goexit, which goes on
			}
		}
		if o.f != nil {
			ev.Kind, ev.Duration = RunEnded, time.Since(ev.Start)
			ev.Next, ev.Again = next, ok
			ev.Superseded = superseded(t.state.Load()) || closed(t.state.Load())
			ev.Panicked, ev.Panic = !returned, r
			o.f(ev)
		}
		if r != nil {
			t.onPanic(r)
		}
	}()
	next, ok = t.f(ctx)
	returned = true
	return next, ok
}

// finish publishes the end of an iteration (see finish in state.go).
func (t *Trigger) finish(ok bool) (uint32, exit) {
	for {
		s := t.state.Load()
		n, x := finish(s, ok)
		if t.state.CompareAndSwap(s, n) {
			return n, x
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

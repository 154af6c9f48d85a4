package circulation

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Func runs one iteration of a Trigger's task. It returns the delay before
// the next iteration and true, or false to stop circulating until the next
// Fire. A negative delay means zero.
//
// ctx is cancelled when the Trigger is suspended, stopped or closed while
// the iteration runs (Shutdown does not cancel it); Func should then return
// soon, and its result is ignored. ctx is also cancelled when the iteration
// returns, like a request's. With WithContext, ctx carries that context's
// values and deadline.
type Func func(ctx context.Context) (next time.Duration, ok bool)

// A Trigger runs a Func on a Scheduler, again and again, whenever it is
// fired and whenever the Func asks to run again, but never twice at once.
//
// Every call of Fire, FireAfter and Suspend supersedes all earlier ones: the
// latest call always wins. FireWithin is the one exception: it keeps a
// sooner arming, so that among FireWithin calls the earliest time wins. A
// fire made while the Func runs is not lost and not run concurrently: the
// run completes, and one more run follows at the later of its end and the
// fire's due time; any number of fires during one run coalesce into that
// one more run, timed by the latest.
//
// Close and Shutdown end a Trigger for good: every later Fire, FireAfter
// and FireWithin does nothing. Close cancels what is pending and in flight;
// Shutdown runs it first.
//
// A Trigger must be created with Bind; the zero value is not usable. Its
// methods are safe for concurrent use, including from inside the Func, and
// none of them blocks except Stop, Close and Shutdown. Fire, FireAfter,
// FireWithin and Suspend take no lock: they publish one compare-and-swap on
// a packed uint32 (see state.go).
type Trigger struct {
	state   atomic.Uint32 // reserved | running | canceled | superseded | closed | within | version; see state.go
	waiters atomic.Int32  // goroutines in Stop waiting for live to reach zero

	// ext is read on the Fire path (for an observer), so it sits in the
	// state's cache line.
	ext *extra // nil without WithMinInterval, WithContext, WithStats and WithObserver

	pending atomic.Pointer[shot] // the timer of the latest arming, if any (see settle)
	spare   atomic.Pointer[shot] // a recycled shot ready to be armed again (see shot)
	live    atomic.Int64         // shots armed whose callback has neither finished nor been cancelled

	f       Func
	sched   Scheduler
	onPanic func(recovered any)

	// cur is the context of the iteration in flight, stored by the goroutine
	// running f as the iteration begins and withdrawn as it ends; a Suspend
	// that finds a run in flight loads it to cancel it (see cancelRun).
	cur atomic.Pointer[cancelContext]

	idleMu sync.Mutex
	idle   chan struct{} // closed when live reaches zero while someone waits in Stop

	// timed says that armings record their due time for FireWithin to
	// compare (shot.due, shotTimed), at the cost of reading the clock: set
	// by the first FireWithin, and never cleared.
	timed atomic.Bool

	recycle bool // shots are reused: sched is RuntimeScheduler, whose Stop is exact
}

// Bind returns a Trigger that runs f on s. The Trigger starts idle: nothing
// runs until the first Fire or FireAfter. A nil s means RuntimeScheduler.
// Bind panics if f is nil.
func Bind(s Scheduler, f Func, opts ...Option) *Trigger {
	if f == nil {
		panic("circulation: nil Func")
	}
	o := options{}
	for _, opt := range opts {
		opt.apply(&o)
	}
	t := &Trigger{f: f, sched: s, onPanic: o.onPanic}
	switch s.(type) {
	case nil:
		t.sched, t.recycle = RuntimeScheduler{}, true
	case RuntimeScheduler, *RuntimeScheduler:
		t.recycle = true
	}
	if o.minInterval > 0 || o.ctx != nil || o.stats {
		t.ext = &extra{minInterval: o.minInterval, parent: o.ctx}
	}
	if o.stats {
		t.ext.obs = &observer{f: o.observe}
	}
	if o.ctx != nil {
		if o.ctx.Err() != nil {
			t.state.Store(closedBit)
		} else if o.ctx.Done() != nil {
			t.ext.unparent = context.AfterFunc(o.ctx, t.close)
		}
	}
	return t
}

// extra holds what only some Triggers need, so that the others do not pay
// for it in memory.
type extra struct {
	obs         *observer // WithStats and WithObserver, or nil
	minInterval time.Duration
	parent      context.Context // of the runs' contexts, or nil
	unparent    func() bool     // stops the close at parent's end, or nil

	// lastStart is when the latest run started, for minInterval. Only the
	// goroutine holding the running bit touches it.
	lastStart time.Time
}

// Fire is shorthand for FireAfter(0).
//
// A Fire while the Func runs needs no timer: it reserves one more run, which
// starts on the same goroutine as soon as the Func returns.
func (t *Trigger) Fire() { t.FireAfter(0) }

// FireAfter arranges for the Func to run once after d, superseding every
// earlier Fire, FireAfter, FireWithin and Suspend: a pending earlier arming
// is cancelled and its timer stopped, whether it was due sooner or later. A
// negative d means zero. On a closed Trigger it does nothing. If the
// Scheduler's AfterFunc panics, FireAfter panics with the same value, having
// superseded the earlier armings all the same.
//
// If the Func is running when the run falls due, that run completes first and
// the next one starts right after it. The result of the run in flight is then
// ignored: after FireAfter, the next run is the one FireAfter arranged.
func (t *Trigger) FireAfter(d time.Duration) {
	if d < 0 {
		d = 0
	}
	// The observer's calls are behind a check of ext each, out of line,
	// so that a Trigger without one runs the Fire path it always had.
	for {
		s := t.state.Load()
		if closed(s) {
			return
		}
		if d == 0 && running(s) {
			if t.ext != nil && !reserved(s) {
				t.observeReserve(0)
			}
			n := reserve(s)
			if t.state.CompareAndSwap(s, n) {
				t.disarm()
				if t.ext != nil {
					t.observeFire(s, fireJoinedRun)
				}
				return
			}
			continue
		}
		if d == 0 {
			switch t.coalesce(s) {
			case coalesced:
				if t.ext != nil {
					t.observeFire(s, fireJoinedArming)
				}
				return
			case retry:
				continue
			}
		}
		n := advance(s)
		if t.state.CompareAndSwap(s, n) {
			if t.ext != nil {
				t.observeFire(s, fireArmed)
			}
			t.arm(version(n), d)
			return
		}
	}
}

// Suspend supersedes every earlier Fire, FireAfter and FireWithin: nothing
// runs until the next one. A pending timer is stopped. If the Func is running,
// its context is cancelled and its result will be ignored, but Suspend does
// not wait for it to return: Stop does.
func (t *Trigger) Suspend() {
	for {
		s := t.state.Load()
		n := suspend(s)
		if t.state.CompareAndSwap(s, n) {
			if o := t.obs(); o != nil {
				o.dropped(s)
			}
			t.disarm()
			if running(s) {
				if testHookSuspend != nil {
					testHookSuspend()
				}
				t.cancelRun()
			}
			return
		}
	}
}

// Stop suspends the Trigger, then waits until no run is in flight and no
// timer of the Trigger's is pending or executing. It returns nil then, or
// ctx.Err() if ctx is done first: with a ctx that is never done, such as
// context.Background(), it always returns nil. If the Trigger is fired while
// Stop waits, Stop waits for that run too.
//
// A stopped Trigger holds no goroutine and no timer, and it can be fired
// again: Stop does not prevent later calls of Fire; Close does. Stop must
// not be called from inside the Func, or from the panic handler, with a
// context that outlives it: it would wait for itself. (The Func's own
// context is cancelled by the Suspend, so Stop(ctx) with it returns at
// once.)
func (t *Trigger) Stop(ctx context.Context) error {
	t.Suspend()
	return t.wait(ctx)
}

// Close closes the Trigger and waits as Stop does: the pending arming is
// cancelled, the run in flight has its context cancelled and its answer
// ignored, and every later Fire, FireAfter and FireWithin does nothing.
// Close may be called more than once, and after Shutdown, whose flush it
// cancels. Called from inside the Func with the Func's own context, it
// closes the Trigger and returns nil without waiting for the run in flight,
// which is its caller.
func (t *Trigger) Close(ctx context.Context) error {
	t.close()
	if t.inside(ctx) {
		return nil
	}
	return t.wait(ctx)
}

// Shutdown closes the Trigger to later fires, as Close does, but lets what
// was already arranged happen once, at once: a pending arming runs now
// rather than at its due time, a run reserved by a Fire runs when the run
// in flight returns, and the run in flight is not cancelled. The answers of
// those runs are ignored: nothing runs after them. Shutdown then waits for
// them, and returns nil, or ctx.Err() if ctx is done first. It is the
// flush of a write-behind cache on shutdown.
//
// An arming made while Shutdown closes the Trigger runs too, at once or at
// its due time. Called from inside the Func with the Func's own context,
// Shutdown returns nil without waiting for the run in flight, which is its
// caller; a run it lets happen follows.
func (t *Trigger) Shutdown(ctx context.Context) error {
	for {
		s := t.state.Load()
		if t.flush(s) {
			break
		}
	}
	// A re-targeted arming's early callback may have handed its shot back
	// between flush's look at the slot and its compare-and-swap, and seen
	// the Trigger still open: look again, now that it is closed.
	t.hurry(version(t.state.Load()))
	t.detach()
	if t.inside(ctx) {
		return nil
	}
	return t.wait(ctx)
}

// flush publishes shutdown(s) if the state is still s, and arms or
// reserves the run it hurries. It reports whether it published.
func (t *Trigger) flush(s uint32) bool {
	p := t.pending.Load()
	hurry := p != nil && p.version.Load() == version(s) && p.flags.Load()&(shotClaimed|shotDead|shotNow) == 0
	o := t.obs()
	if o != nil && hurry && running(s) && !reserved(s) {
		o.noteReserve(0)
	}
	n := shutdown(s, hurry)
	if testHookFlush != nil {
		testHookFlush()
	}
	if !t.state.CompareAndSwap(s, n) {
		return false
	}
	if o != nil && hurry {
		// The hurried arming is replaced by one due now, or by a
		// reservation made now: its run is not superseded. Only this
		// goroutine kills it: the Trigger is closed, so no later Fire,
		// FireAfter or FireWithin arms anything to supersede it.
		o.hurried.Store(p)
	}
	if hurry {
		if running(s) {
			t.disarm()
		} else {
			t.arm(version(n), 0)
		}
	}
	return true
}

// close is Close without the wait, and what the end of WithContext's
// context does.
func (t *Trigger) close() {
	for {
		s := t.state.Load()
		if t.state.CompareAndSwap(s, closeNow(s)) {
			if o := t.obs(); o != nil {
				o.dropped(s)
			}
			t.disarm()
			if running(s) {
				t.cancelRun()
			}
			break
		}
	}
	t.detach()
}

// detach stops watching WithContext's context, once the Trigger is closed.
func (t *Trigger) detach() {
	if t.ext != nil && t.ext.unparent != nil {
		t.ext.unparent()
	}
}

// inside reports whether ctx is the context of the run in flight: the
// caller is the Func, which a wait would wait for.
func (t *Trigger) inside(ctx context.Context) bool {
	var c *cancelContext
	switch x := ctx.(type) {
	case *cancelContext:
		c = x
	case *parentedContext:
		c = &x.cancelContext
	default:
		return false
	}
	return c == t.cur.Load()
}

// wait waits until no run is in flight and no timer of the Trigger's is
// pending or executing, or until ctx is done.
func (t *Trigger) wait(ctx context.Context) error {
	t.waiters.Add(1)
	defer t.waiters.Add(-1)
	for {
		t.idleMu.Lock()
		// The load of live comes after waiters.Add above; retire decrements
		// live before it loads waiters. Go's atomics are sequentially
		// consistent, so either retire sees a waiter and closes idle, or
		// this load sees zero.
		if t.live.Load() == 0 {
			t.idleMu.Unlock()
			return nil
		}
		if t.idle == nil {
			t.idle = make(chan struct{})
		}
		idle := t.idle
		t.idleMu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

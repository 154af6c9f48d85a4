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
// ctx is cancelled when the Trigger is suspended or stopped while the
// iteration runs; Func should then return soon. Its result is ignored.
type Func func(ctx context.Context) (next time.Duration, ok bool)

// A Trigger runs a Func on a Scheduler, again and again, whenever it is
// fired and whenever the Func asks to run again, but never twice at once.
//
// Every call of Fire, FireAfter and Suspend supersedes all earlier ones: the
// latest call always wins. A fire made while the Func runs is not lost and
// not run concurrently: the run completes, and one more run follows at the
// later of its end and the fire's due time; any number of fires during one
// run coalesce into that one more run, timed by the latest.
//
// A Trigger must be created with Bind; the zero value is not usable. Its
// methods are safe for concurrent use, including from inside the Func, and
// none of them blocks except Stop. Fire, FireAfter and Suspend take no lock:
// they publish one compare-and-swap on a packed uint32 (see state.go).
type Trigger struct {
	state   atomic.Uint32        // reserved | running | version; see state.go
	pending atomic.Pointer[shot] // the timer of the latest arming, if any (see settle)
	spare   atomic.Pointer[shot] // a recycled shot ready to be armed again (see shot)
	live    atomic.Int64         // shots armed whose callback has neither finished nor been cancelled
	waiters atomic.Int32         // goroutines in Stop waiting for live to reach zero

	f       Func
	sched   Scheduler
	recycle bool // shots are reused: sched is RuntimeScheduler, whose Stop is exact
	onPanic func(recovered any)

	// runMu guards the context of the iteration in flight. It is taken once
	// at the start and once at the end of an iteration, and by Suspend only
	// when it finds an iteration in flight: never by Fire.
	runMu   sync.Mutex
	cur     run    // the iteration in flight, written by the goroutine running f
	late    uint32 // version of a Suspend that found the running bit set but cur empty
	hasLate bool

	idleMu sync.Mutex
	idle   chan struct{} // closed when live reaches zero while someone waits in Stop
}

// run is the iteration in flight: the version it runs for and the cancel
// function of its context.
type run struct {
	version uint32
	cancel  context.CancelFunc
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
	return t
}

// Fire is shorthand for FireAfter(0).
//
// A Fire while the Func runs needs no timer: it reserves one more run, which
// starts on the same goroutine as soon as the Func returns.
func (t *Trigger) Fire() { t.FireAfter(0) }

// FireAfter arranges for the Func to run once after d, superseding every
// earlier Fire, FireAfter and Suspend: a pending earlier arming is cancelled
// and its timer stopped, whether it was due sooner or later. A negative d
// means zero.
//
// If the Func is running when the run falls due, that run completes first and
// the next one starts right after it. The result of the run in flight is then
// ignored: after FireAfter, the next run is the one FireAfter arranged.
func (t *Trigger) FireAfter(d time.Duration) {
	if d < 0 {
		d = 0
	}
	for {
		s := t.state.Load()
		if d == 0 && running(s) {
			n := reserve(s)
			if t.state.CompareAndSwap(s, n) {
				t.disarm(version(n))
				return
			}
			continue
		}
		if d == 0 {
			switch t.coalesce(s) {
			case coalesced:
				return
			case retry:
				continue
			}
		}
		n := advance(s)
		if t.state.CompareAndSwap(s, n) {
			t.arm(version(n), d)
			return
		}
	}
}

type coalescing uint8

// testHookCoalesce, if set by a test, runs in coalesce between the first look
// at the pending shot and the compare-and-swap that validates it.
var testHookCoalesce func()

const (
	notCoalesced coalescing = iota // arm a timer as usual
	coalesced                      // the pending arming will run the Func after this call
	retry                          // the state changed meanwhile: start over
)

// coalesce lets a Fire on an idle Trigger ride on a pending arming with no
// delay whose callback has not started yet: that callback will start the
// Func after this call, which is all the Fire asks for, so arming another
// timer to supersede it would change nothing but the cost. s is the state the
// caller loaded, not running.
//
// The pending shot is not ours, so it is only inspected, through atomic
// fields. A compare-and-swap of s with itself then proves that nothing
// happened to the state between that load and now; it cannot tell whether a
// run started and finished in between (the state would be s again), so the
// shot is checked again after it: still unclaimed means its callback has not
// even begun, and will find the version unchanged unless a later call
// supersedes both.
func (t *Trigger) coalesce(s uint32) coalescing {
	v := version(s)
	due := func(p *shot) bool {
		return p.version.Load() == v && p.flags.Load()&(shotNow|shotClaimed|shotDead) == shotNow
	}
	p := t.pending.Load()
	if p == nil || !due(p) {
		return notCoalesced
	}
	if testHookCoalesce != nil {
		testHookCoalesce()
	}
	if !t.state.CompareAndSwap(s, s) {
		return retry
	}
	if !due(p) {
		return notCoalesced
	}
	return coalesced
}

// Suspend supersedes every earlier Fire and FireAfter: nothing runs until the
// next Fire or FireAfter. A pending timer is stopped. If the Func is running,
// its context is cancelled and its result will be ignored, but Suspend does
// not wait for it to return: Stop does.
func (t *Trigger) Suspend() {
	for {
		s := t.state.Load()
		n := advance(s)
		if t.state.CompareAndSwap(s, n) {
			t.disarm(version(n))
			if running(s) {
				t.cancelBefore(version(n))
			}
			return
		}
	}
}

// Stop suspends the Trigger, then waits until no run is in flight and no
// timer of the Trigger's is pending or executing. It returns nil then, or
// ctx.Err() if ctx is done first. If the Trigger is fired while Stop waits,
// Stop waits for that run too.
//
// A stopped Trigger holds no goroutine and no timer, and it can be fired
// again. Stop must not be called from inside the Func with a context that
// outlives it: it would wait for itself. (The Func's own context is cancelled
// by the Suspend, so Stop(ctx) with it returns at once.)
func (t *Trigger) Stop(ctx context.Context) error {
	t.Suspend()
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

// arm starts a timer for version v and makes it the pending one.
func (t *Trigger) arm(v uint32, d time.Duration) {
	if d < 0 {
		d = 0
	}
	sh := t.newShot(v, d)
	t.live.Add(1)
	if sh.timer != nil {
		// A recycled shot: its *time.Timer was stopped or has fired and
		// its callback has returned, so Reset arms it afresh without
		// allocating.
		sh.timer.(*time.Timer).Reset(d)
	} else {
		sh.timer = t.sched.AfterFunc(d, sh.fire)
	}
	t.settle(sh)
	// A Suspend or a reserving Fire that advanced the version after v has
	// already cleared the slot, before settle put sh there: clear it
	// again so that no superseded timer outlives its purpose.
	if c := version(t.state.Load()); c != v {
		t.disarm(c)
	}
}

// settle puts sh in the pending slot, keeping whichever of the shots it meets
// there is newest and killing the others.
//
// The slot is only ever changed with Swap, never with CompareAndSwap: each
// Swap hands the displaced shot to exactly one goroutine, which then owns it
// and must either put it back or kill it. Ownership is never shared, so a
// recycled shot can never be mistaken for its earlier incarnation (no ABA).
func (t *Trigger) settle(sh *shot) {
	for sh != nil {
		v := sh.version.Load() // read while we own sh: once in the slot it may be killed and recycled
		old := t.pending.Swap(sh)
		if old == nil {
			return
		}
		if !newer(old.version.Load(), v) {
			t.kill(old)
			return
		}
		// A newer arming got there first: put it back, and own what
		// comes out (sh itself, unless yet another goroutine got in).
		sh = old
	}
}

// disarm empties the pending slot of any shot armed before v.
func (t *Trigger) disarm(v uint32) {
	old := t.pending.Swap(nil)
	if old == nil {
		return
	}
	if newer(v, old.version.Load()) {
		t.kill(old)
		return
	}
	t.settle(old) // armed at v or later: it stays
}

// cancelBefore cancels the context of the iteration in flight if it runs for
// a version older than v (the version of a Suspend).
func (t *Trigger) cancelBefore(v uint32) {
	t.runMu.Lock()
	defer t.runMu.Unlock()
	if t.cur.cancel == nil {
		// The running bit is set but the iteration has not published its
		// context yet, or is between two iterations: begin cancels it.
		t.late, t.hasLate = v, true
		return
	}
	if newer(v, t.cur.version) {
		t.cur.cancel()
	}
}

// begin publishes the context of an iteration that runs for version v.
func (t *Trigger) begin(v uint32, cancel context.CancelFunc) {
	t.runMu.Lock()
	defer t.runMu.Unlock()
	t.cur = run{version: v, cancel: cancel}
	if t.hasLate && newer(t.late, v) {
		cancel()
	}
	t.hasLate = false
}

// end withdraws the context published by begin and releases it.
func (t *Trigger) end(cancel context.CancelFunc) {
	t.runMu.Lock()
	t.cur = run{}
	t.runMu.Unlock()
	cancel()
}

// start is a timer callback for version v: it either runs the Func, leaves
// a reservation for the run in flight, or finds itself stale.
func (t *Trigger) start(v uint32) {
	for {
		s := t.state.Load()
		n, e := enter(s, v)
		if e == entryStale {
			return
		}
		if t.state.CompareAndSwap(s, n) {
			if e == entryRun {
				t.loop(v)
			}
			return
		}
	}
}

// loop runs the Func for version v, then again for as long as runs were
// reserved meanwhile, and arms the next timer if the last run asked for one.
// The caller holds the running bit; loop gives it up on every way out,
// including a panic or runtime.Goexit in the Func.
func (t *Trigger) loop(v uint32) {
	normal := false
	defer func() {
		if !normal {
			t.abort()
		}
	}()
	for {
		next, ok := t.iterate(v)
		s, x := t.finish(v, ok)
		if x == exitAgain {
			v = version(s)
			continue
		}
		if x == exitArm {
			t.arm(version(s), next)
		}
		break
	}
	normal = true
}

// iterate runs the Func once with a fresh context.
func (t *Trigger) iterate(v uint32) (next time.Duration, ok bool) {
	ctx, cancel := context.WithCancel(context.Background())
	t.begin(v, cancel)
	defer t.end(cancel)
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

// finish publishes the end of an iteration (see finish in state.go).
func (t *Trigger) finish(v uint32, ok bool) (uint32, exit) {
	for {
		s := t.state.Load()
		n, x := finish(s, v, ok)
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
				t.arm(version(n), 0)
			}
			return
		}
	}
}

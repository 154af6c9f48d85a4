package circulation

import (
	"math"
	"sync/atomic"
	"time"
)

// A shot is one arming of a Trigger: a timer that, when it fires, starts the
// Func for the version the shot was armed with.
//
// Two parties hold a shot: its owner (the goroutine that armed it, then the
// Trigger's pending slot, then the goroutine that takes it out of the slot to
// kill it) and its timer (the callback, from the moment it is armed until it
// returns or the timer is stopped). refs counts them; the last to let go
// recycles the shot.
//
// Recycling is for Triggers on RuntimeScheduler only: time.Timer.Stop
// reporting true guarantees that the callback never runs, and a stopped or
// fired *time.Timer can be armed again with Reset, without allocating. An
// arbitrary Scheduler might still run a callback it said it had stopped.
// A recycled shot goes to its own Trigger's spare slot, never to a pool
// shared between Triggers: a timer belongs to the clock it was created on
// (a testing/synctest bubble has its own), so a Trigger reuses only the
// timers it created.
type shot struct {
	t       *Trigger      // set when the shot is made, never changed
	version atomic.Uint32 // written by newShot; read by the callback, settle, disarm and coalesce
	flags   atomic.Uint32
	refs    atomic.Int32
	due     atomic.Int64 // Unix nanoseconds, when Trigger.timed or observed; zero: unknown. Written by newShot and retarget; read by FireWithin, Next and the observer
	timer   Timer        // written by arm before the shot reaches the slot; read by its owner
	at      int64        // when the arming is due on the monotonic clock (monoNow), for a delay on RuntimeScheduler; written by arm and, with shotBusy, by retarget; read by a callback that claims a shotLate shot
	timerAt int64        // when the shot's timer comes on the same clock; written and read by arm, and with shotBusy held
	fire    func()       // the callback, sh.run bound once so recycled shots need no new closure
}

const (
	shotClaimed uint32 = 1 << iota // the callback has started, or the timer was stopped: whoever set it accounts for live
	shotDead                       // superseded: a late callback must not start the Func even if the version matches again after wrapping
	shotNow                        // armed with no delay: a Fire may coalesce into it (see coalesce)
	shotGo                         // started as a goroutine, not on its timer: Stop cannot cancel it (see arm)
	shotAgain                      // armed by a reassert: if superseded before it is placed, it does not reassert again (see place)
	shotTimed                      // armed once the Trigger had a FireWithin: its due time is FireWithin's to compare (see keep)
	shotLate                       // re-targeted to a later arming (see retarget): its timer may come before at, and its callback then re-arms it (see delay)
	shotBusy                       // retarget or delay is changing the arming or re-arming the timer: a callback that comes meanwhile claims and leaves the rest to it, and cancel leaves the timer to it
)

// newShot returns a shot for version v, due at due, with the flags extra
// (shotAgain, shotTimed), holding both references.
func (t *Trigger) newShot(v uint32, d time.Duration, due int64, extra uint32) *shot {
	var sh *shot
	if t.recycle {
		sh = t.spare.Swap(nil)
	}
	if sh == nil {
		sh = &shot{t: t}
		sh.fire = sh.run
	}
	sh.version.Store(v)
	sh.due.Store(due)
	switch {
	case d == 0 && t.recycle:
		sh.flags.Store(shotNow | shotGo | extra) // arm starts it as a goroutine
	case d == 0:
		sh.flags.Store(shotNow | extra)
	case extra != 0:
		sh.flags.Store(extra)
	}
	sh.refs.Store(2)
	return sh
}

// claim reports whether the caller is the first to account for the shot's
// timer: the callback on its first call, or the owner after a successful
// Stop. A duplicated or stopped-but-delivered callback claims nothing.
func (sh *shot) claim() bool {
	return sh.flags.Or(shotClaimed)&shotClaimed == 0
}

// run is the shot's timer callback.
func (sh *shot) run() {
	f := sh.flags.Or(shotClaimed) // claim, keeping what was there
	if f&(shotClaimed|shotBusy) != 0 {
		// A duplicated or stopped-but-delivered callback claims nothing;
		// one that comes while retarget or delay holds the shot leaves
		// its claim to them, to take over.
		return
	}
	sh.claimed(f)
}

// claimed is the callback from the moment its claim found the flags f,
// neither claimed nor busy.
func (sh *shot) claimed(f uint32) {
	t := sh.t
	for f&(shotLate|shotDead) == shotLate && !closed(t.state.Load()) {
		// Re-targeted: the timer may have come early. The clock is read
		// only here, so a callback that was never re-targeted pays nothing.
		// On a closed Trigger it runs at once: Shutdown may have found it
		// claimed, and left it to run.
		wait := time.Duration(sh.at - monoNow())
		if wait <= 0 {
			break
		}
		var mine bool
		if f, mine = t.delay(sh, f|shotClaimed, wait); !mine {
			return
		}
	}
	defer t.retire(sh, 1)
	if f&shotDead != 0 {
		return // cancel counted it superseded: it found the shot unclaimed
	}
	if sh.flags.Load()&shotDead != 0 || !t.start(sh.version.Load(), sh.due.Load()) {
		// Superseded after the claim: cancel found it claimed and left
		// it to this callback to count.
		if o := t.obs(); o != nil {
			o.supersede(sh)
		}
	}
}

// kill cancels a superseded shot. The caller owns it.
func (t *Trigger) kill(sh *shot) {
	if t.cancel(sh) {
		t.retire(sh, 2) // the callback will never run: drop its reference too
		return
	}
	t.release(sh, 1)
}

// cancel marks a superseded shot dead and stops its timer. It reports
// whether the callback will never run: the caller, which owns the shot,
// then holds both its references, and the shot still counts in live.
func (t *Trigger) cancel(sh *shot) bool {
	// A claimed shot's callback has started (or its timer was stopped):
	// Stop could only report false, so spare the timer's lock. A shot
	// started as a goroutine has no timer to stop: its callback will find
	// it dead.
	f := sh.flags.Or(shotDead)
	if f&shotDead == 0 && (f&shotClaimed == 0 || f&shotBusy != 0) {
		// The callback has not started, and will find the shot dead (or
		// never run); or delay holds the shot, and its callback will find
		// it dead: this arming will never start the Func.
		if o := t.obs(); o != nil {
			o.supersede(sh)
		}
	}
	// A busy shot's timer is delay's: it stops it, or leaves it to the
	// callback on its way.
	return f&(shotClaimed|shotGo|shotBusy) == 0 && sh.timer.Stop() && sh.claim()
}

// delay re-arms the timer of a re-targeted shot whose callback came wait
// before the shot's due time. f is the shot's flags, with the claim the
// caller holds. The claim is traded for shotBusy while the timer is
// re-armed, and the trade is undone when it is: the timer's next callback
// then claims the shot afresh. delay reports whether the caller is still
// the shot's callback, with the flags it holds (claimed): if the timer came
// back before the trade was undone, its callback left its claim to the
// caller; if the shot was killed meanwhile and delay stopped its timer, no
// callback will come, and the caller retires the shot. The caller's
// reference to the shot keeps it from being recycled until delay returns.
func (t *Trigger) delay(sh *shot, f uint32, wait time.Duration) (uint32, bool) {
	busy := f&^shotClaimed | shotBusy
	if !sh.flags.CompareAndSwap(f, busy) {
		// Killed since the claim: cancel found it claimed, and left the
		// count to its callback.
		if o := t.obs(); o != nil {
			o.supersede(sh)
		}
		return sh.flags.Load(), true
	}
	v := sh.version.Load() // read while busy: the shot is ours
	sh.timerAt = sh.at
	sh.timer.(*time.Timer).Reset(wait)
	if testHookDelay != nil {
		testHookDelay(sh)
	}
	for {
		if sh.flags.CompareAndSwap(busy, busy&^shotBusy) {
			// The timer's next callback takes the shot over. A Shutdown
			// that found it busy, claimed or not, may have left it pending:
			// it runs now, as Shutdown promises.
			if closed(t.state.Load()) {
				t.hurry(v)
			}
			return 0, false
		}
		g := sh.flags.Load()
		if g&shotClaimed != 0 {
			// The timer came back already, and its callback left its
			// claim to us.
			return sh.flags.And(^shotBusy) &^ shotBusy, true
		}
		// Killed meanwhile: cancel found the shot busy, counted it
		// superseded, and left its timer to us.
		if sh.timer.Stop() {
			return g | shotClaimed, true
		}
		// Its callback is on its way: it will find the shot dead, unless
		// it has claimed it meanwhile.
		busy = g
	}
}

// retire accounts for a shot whose timer is done, then drops n references.
func (t *Trigger) retire(sh *shot, n int32) {
	if t.live.Add(-1) == 0 && t.waiters.Load() != 0 {
		t.idleMu.Lock()
		if t.idle != nil {
			close(t.idle)
			t.idle = nil
		}
		t.idleMu.Unlock()
	}
	t.release(sh, n)
}

// release drops n references to sh and recycles it when none is left.
func (t *Trigger) release(sh *shot, n int32) {
	if sh.refs.Add(-n) == 0 && t.recycle {
		sh.flags.Store(0)
		t.spare.Store(sh) // a shot already there is dropped: one spare is enough
	}
}

// arm starts a timer for version v and makes it the pending one.
func (t *Trigger) arm(v uint32, d time.Duration) { t.armFlags(v, d, 0) }

// armFlags is arm for a shot with the extra flag again (shotAgain or 0).
func (t *Trigger) armFlags(v uint32, d time.Duration, again uint32) {
	if d < 0 {
		d = 0
	}
	var due int64
	if t.timed.Load() {
		due = dueAt(d)
		again |= shotTimed
	} else if t.ext != nil && t.ext.obs != nil {
		due = dueAt(d) // for Next and the observer only: FireWithin does not compare it
	}
	var at int64
	if d > 0 && t.recycle {
		if again == 0 {
			// Only a plain arming re-targets another, or is re-targeted:
			// one for FireWithin, or a reassert, spares the clock.
			at = monoAfter(d)
		}
		if t.rearmPending(v, d, at, due, again) {
			return
		}
	}
	sh := t.newShot(v, d, due, again)
	sh.at, sh.timerAt = at, at
	t.live.Add(1)
	if d == 0 && t.recycle {
		// No delay on the runtime's timers: a goroutine of its own is what
		// time.AfterFunc(0, f) would start, without the round trip
		// through the timer heap. The shot keeps its idle timer for a
		// later arming.
		go sh.fire()
	} else if sh.timer != nil {
		// A recycled shot: its *time.Timer was stopped or has fired and
		// its callback has returned, so Reset arms it afresh without
		// allocating.
		sh.timer.(*time.Timer).Reset(d)
	} else {
		t.schedule(sh, d)
	}
	t.place(sh)
}

// rearmPending is arm for a delay on the runtime's timers when a shot is
// pending: it takes the shot out of the slot, and if that shot is stale,
// re-targets it to version v (see retarget), or if its timer stops before
// its callback starts, re-arms the same shot and *time.Timer for v. The
// shot then keeps the place in live the stale arming had. That spares arm a
// shot from the spare slot, two updates of live and the recycling of the
// stale shot, and retarget spares it the timer's lock too. It reports
// whether it armed v, or found that a later call superseded v, so that arm
// has nothing to do. at is v's due time on the monotonic clock.
func (t *Trigger) rearmPending(v uint32, d time.Duration, at, due int64, extra uint32) bool {
	old := t.pending.Swap(nil)
	// An empty slot while a shot is armed: another goroutine has taken it
	// out to re-target it, which takes a few nanoseconds. Waiting for it
	// spares a new shot and a timer of its own.
	for spin := 0; old == nil && spin < 32 && t.live.Load() > 0; spin++ {
		if extra == 0 && version(t.state.Load()) != v {
			break
		}
		if t.pending.Load() != nil {
			old = t.pending.Swap(nil)
		}
	}
	if old == nil {
		if extra == 0 && version(t.state.Load()) != v {
			// Superseded already: the call that did it arms its own.
			if o := t.obs(); o != nil {
				o.counted(due)
			}
			return true
		}
		return false
	}
	if old.version.Load() == version(t.state.Load()) { // read while we own old
		// The current arming's, so v is superseded before it was armed:
		// put it back, and count v's arming superseded.
		t.place(old)
		if o := t.obs(); o != nil {
			o.counted(due)
		}
		return true
	}
	if extra == 0 && t.retarget(old, v, d, at, due) {
		t.place(old)
		return true
	}
	if !t.cancel(old) {
		t.release(old, 1)
		return false
	}
	old.version.Store(v)
	old.due.Store(due)
	old.flags.Store(extra)
	old.at, old.timerAt = at, at
	old.timer.(*time.Timer).Reset(d)
	t.place(old)
	return true
}

// retarget makes the stale shot sh, which the caller owns, the arming of
// version v, due d from now (at on the monotonic clock), if its timer is
// pending and its callback has not started. If the timer comes no later
// than at, it is left alone: the timer's lock is what two goroutines
// superseding each other's armings would otherwise contend on. Its callback
// will find the shot early and re-arm the timer for the rest (see delay).
// If it comes later, it is re-armed for d. shotBusy keeps the callback out
// meanwhile: one that comes leaves its claim, and retarget then re-arms the
// timer it fired. It reports false, having changed nothing, if the shot is
// not one to re-target: an arming with no delay, one for FireWithin, or
// one whose callback has claimed it.
func (t *Trigger) retarget(sh *shot, v uint32, d time.Duration, at, due int64) bool {
	f := sh.flags.Load()
	if f&^shotLate != 0 || !sh.flags.CompareAndSwap(f, f|shotBusy) {
		return false
	}
	if o := t.obs(); o != nil {
		o.supersede(sh) // before its due time is overwritten
	}
	sh.version.Store(v)
	sh.due.Store(due)
	sh.at = at
	if sh.timerAt > at && sh.timer.Stop() {
		// Due sooner than the timer: re-arm it. If Stop fails, the
		// callback is on its way, and will re-arm it if it comes early.
		sh.timer.(*time.Timer).Reset(d)
		sh.timerAt = at
	}
	if !sh.flags.CompareAndSwap(f|shotBusy, shotLate) {
		// The timer came meanwhile, and its callback left its claim to
		// us. Nobody else can reach the shot: it is out of the slot.
		sh.flags.Store(shotLate)
		sh.timerAt = at
		sh.timer.(*time.Timer).Reset(max(time.Duration(at-monoNow()), 0))
	}
	return true
}

// epoch is the origin of the monotonic clock that monoNow reads.
var epoch = time.Now()

// monoNow reads the monotonic clock, in nanoseconds since epoch: one read
// of the runtime's clock, without the wall clock. Inside a testing/synctest
// bubble it reads the bubble's clock, as the bubble's timers do: there it
// is the bubble's time less epoch, negative, and moves only with the
// bubble's time.
func monoNow() int64 { return int64(time.Since(epoch)) }

// monoAfter is monoNow() + d, saturated rather than wrapped.
func monoAfter(d time.Duration) int64 {
	now := monoNow()
	if now > 0 && int64(d) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// schedule hands sh's callback to the Scheduler. If the Scheduler panics
// (a stopped wheel.Wheel does), nothing was armed: the shot is retired, so
// that Stop does not wait for it, the pending shot this arming superseded is
// killed, as placing sh would have, and the panic goes on to the caller.
func (t *Trigger) schedule(sh *shot, d time.Duration) {
	armed := false
	defer func() {
		if !armed {
			t.retire(sh, 2)
			t.disarm()
		}
	}()
	sh.timer = t.sched.AfterFunc(d, sh.fire)
	armed = true
}

// settle puts sh in the pending slot, keeping the shot of the current
// version, the state's, if it meets one there, and killing the others.
//
// Only the current version's shot can ever run the Func: every other shot is
// stale. So the shots are judged by equality with the current version, never
// by ordering two versions, which would go wrong once a stalled arm is half
// the version space behind the calls made meanwhile.
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
		c := version(t.state.Load())
		if old.version.Load() != c || v == c {
			t.kill(old)
			return
		}
		// The current arming's shot got there first: put it back, and own
		// what comes out (sh itself, unless yet another goroutine got in).
		sh = old
	}
}

// place settles sh, then checks the version once it is in the slot: a call
// that superseded sh while it was out of the slot may have found the slot
// empty, and left sh for whoever put it back to kill.
//
// That call could not compare due times with sh either. If it was a
// FireWithin, sh asks again, as a FireWithin for its own due time
// (reassert), so that the sooner of the two is kept; but an arming made by
// a reassert does not ask again, so that two goroutines cannot supersede
// each other's armings for ever. If it was a Shutdown,
// which found no arming to hurry, sh is current on a closed Trigger: it is
// hurried now.
func (t *Trigger) place(sh *shot) {
	f := sh.flags.Load()
	v, due, now := sh.version.Load(), sh.due.Load(), f&shotNow != 0 // read while we own sh
	t.settle(sh)
	s := t.state.Load()
	switch {
	case version(s) != v:
		t.disarm()
		if within(s) && f&(shotTimed|shotAgain) == shotTimed {
			t.reassert(due)
		}
	case closed(s) && !now:
		t.hurry(v)
	}
}

// hurry runs the arming of version v at once on a closed Trigger, unless it
// has started or was superseded meanwhile.
func (t *Trigger) hurry(v uint32) {
	for {
		s := t.state.Load()
		if version(s) != v || t.flush(s) {
			return
		}
	}
}

// disarm empties the pending slot of a shot that is not the current
// version's.
func (t *Trigger) disarm() {
	old := t.pending.Swap(nil)
	if old == nil {
		return
	}
	if old.version.Load() != version(t.state.Load()) { // read while we own old
		t.kill(old)
		return
	}
	// The current arming's: it stays.
	t.place(old)
}

// coalescing is what coalesce found.
type coalescing uint8

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
// fields. Loading s again then proves that nothing happened to the state
// between the two loads (a compare-and-swap of s with itself would prove no
// more, and would take the state's cache line from other Fires). It cannot
// tell whether a run started and finished in between (the state would be s
// again), so the shot is checked again after it: still unclaimed means its
// callback has not even begun, and will find the version unchanged unless a
// later call supersedes both.
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
	if t.state.Load() != s {
		return retry
	}
	if !due(p) {
		return notCoalesced
	}
	return coalesced
}

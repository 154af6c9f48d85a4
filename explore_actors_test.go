package circulation

// The actors of the explorer (see explore_test.go). Each actor is one
// goroutine of trigger.go reduced to its accesses to Trigger.state: a Load is
// one atomic step, and a CompareAndSwap with the value a state.go transition
// computed from that load is the next one, so that every interleaving in
// which another goroutine publishes between the two is explored. What the
// goroutines do with the pending slot, the run context and the live count
// does not touch the state and is left out; slot_explore_test.go checks the
// pending slot.
//
// The phases below follow trigger.go, shot.go and run.go line by line; a
// change to the control flow there must be made here too:
//
//	FireAfter(0)   load; running(s) ? CAS reserve(s) :
//	               coalesce(s): look at the pending shot, due? state still s? due again?
//	               -> return; otherwise CAS advance(s) then arm(v, 0)
//	FireAfter(d>0) load; CAS advance(s) then arm(v, d)
//	Suspend        load; CAS advance(s)
//	shot.run       claim; then start(v):
//	start(v)       load; enter(s, v) stale ? return : CAS, then loop(v) on entryRun
//	loop(v)        begin (f starts); f returns (0, true), (d, true) or (_, false),
//	               or panics; load; CAS finish(s, v, ok): exitAgain -> begin with
//	               version(n), exitArm -> arm(version(n), d), exitIdle -> return
//	abort (panic)  load; CAS abort(s): exitArm -> arm(version(n), 0)
//
// arm hands a new timer to the Scheduler: it becomes a new actor, which may
// take its first step at any later point, as a timer may fire at any time. A
// timer that disarm or settle kills was superseded (slot_explore_test.go
// checks that), so its callback would find itself stale; letting every
// timer fire explores a superset of what the real Trigger does. Likewise,
// coalesce's look at the pending slot is modelled as "the timer of the
// loaded version is unclaimed and armed with no delay", and a Fire that
// finds it so may or may not coalesce, since the shot may be out of the slot
// for a moment.

// transitions is the table of state.go functions the explorer calls. The
// tests use stateGo; the mutation tests replace one entry with a broken
// version to show that the explorer catches the mistake.
type transitions struct {
	advance func(s uint32) uint32
	reserve func(s uint32) uint32
	enter   func(s, v uint32) (uint32, entry)
	finish  func(s, v uint32, ok bool) (uint32, exit)
	abort   func(s uint32) (uint32, exit)
}

// stateGo is the table of the real transitions.
var stateGo = transitions{
	advance: advance,
	reserve: reserve,
	enter:   enter,
	finish:  finish,
	abort:   abort,
}

// exPhase is where an actor is: the step it takes next.
type exPhase uint8

const (
	phDone exPhase = iota

	phFireLoad          // Fire, that is FireAfter(0)
	phFireLook          // coalesce: look at the pending shot (is it due?)
	phFireCoalesceCheck // coalesce: the state is still s
	phFireLookAgain     // coalesce: is it still due?
	phFireCAS           // reserve (running) or advance (not running, not coalesced)
	phFireAfterLoad     // FireAfter(d) with d > 0
	phFireAfterCAS      //
	phSuspendLoad       //
	phSuspendCAS        //
	phClaim             // a timer callback for version v: shot.run's claim
	phStartLoad         // Trigger.start
	phStartCAS          //

	// The phases from phBegin on hold the running bit (Trigger.loop).
	phBegin // about to call f for version v
	phInF   // inside f
	phFinishLoad
	phFinishCAS
	phAbortLoad // f panicked: the deferred abort
	phAbortCAS
)

func (p exPhase) owner() bool { return p >= phBegin }

func (p exPhase) load() bool {
	switch p {
	case phFireLoad, phFireAfterLoad, phSuspendLoad, phStartLoad, phFinishLoad, phAbortLoad:
		return true
	}
	return false
}

// seen reports whether the phase uses the state its actor loaded.
func (p exPhase) seen() bool {
	switch p {
	case phFireLook, phFireCoalesceCheck, phFireLookAgain,
		phFireCAS, phFireAfterCAS, phSuspendCAS, phStartCAS, phFinishCAS, phAbortCAS:
		return true
	}
	return false
}

// exActor is one goroutine. Fields that mean nothing in its phase are zero,
// so that equivalent worlds compare equal.
type exActor struct {
	ph   exPhase
	ok   bool   // phFinish*: what f returned
	sup  bool   // owner: a Fire, FireAfter or Suspend published since its iteration's version was taken
	now  bool   // timer: armed with no delay (shotNow), so a Fire may coalesce into it
	v    uint32 // timer: its version; owner: the iteration's version
	seen uint32 // the state the actor's last Load returned, while it uses it
}

// choices is the number of ways the actor's next step can go: f may return
// false, return true with no delay or with one (while the budget lasts), or
// panic (likewise); a Fire that finds a due shot may or may not find it in
// the pending slot, where other goroutines move shots in and out.
func (x *explorer) choices(w *exWorld, i int) int {
	switch a := &w.actors[i]; a.ph {
	case phDone:
		return 0
	case phInF:
		return 4
	case phFireLook:
		if x.due(w, version(a.seen)) {
			return 2
		}
	}
	return 1
}

// f's outcomes, the choices of phInF.
const (
	fFalse    = iota // f returns (_, false)
	fTrueNow         // f returns (0, true): asks to run again at once
	fTrueThen        // f returns (d, true) with d > 0
	fPanic           // f panics (abort instead of finish)
)

// due reports whether the timer of version v is pending, unclaimed and armed
// with no delay: coalesce's due(p) for the pending shot p. A superseded
// shot (shotDead) has an older version, so it is never the one asked about.
func (x *explorer) due(w *exWorld, v uint32) bool {
	for i := range w.actors[:w.n] {
		if a := &w.actors[i]; a.ph == phClaim && a.now && a.v == v {
			return true
		}
	}
	return false
}

// step lets actor i take its next atomic step, taking choice c where there
// is one. It reports false if the step is not possible (a choice whose
// budget is spent). A violation found by the step itself is recorded with
// x.failf.
func (x *explorer) step(w *exWorld, i, c int) bool {
	a := &w.actors[i]
	switch a.ph {
	case phFireLoad:
		a.seen = w.s
		if running(a.seen) {
			a.ph = phFireCAS // reserve
		} else {
			a.ph = phFireLook
		}
		return true
	case phFireAfterLoad, phSuspendLoad, phStartLoad, phFinishLoad, phAbortLoad:
		a.seen = w.s
		a.ph++ // the CAS phase
		return true
	}
	switch a.ph {
	case phFireLook:
		if c == 0 && x.due(w, version(a.seen)) {
			a.ph = phFireCoalesceCheck
		} else {
			a.ph = phFireCAS // notCoalesced: advance
		}

	case phFireCoalesceCheck:
		s := a.seen
		if w.s != s || x.flow == "coalesce retries for ever" { // retry
			a.ph, a.seen = phFireLoad, 0
			return true
		}
		// Nothing happened to the state since the load: this Fire rides
		// on the pending arming, if its callback has still not claimed it.
		x.published(w, armFire, version(s))
		a.ph, a.seen = phFireLookAgain, s
		if x.flow == "coalesce does not look again after its check" {
			x.done(a)
		}

	case phFireLookAgain:
		if x.due(w, version(a.seen)) {
			x.done(a) // coalesced
		} else {
			a.ph = phFireCAS // notCoalesced: advance from the same load
		}

	case phFireCAS:
		if running(a.seen) {
			x.publish(w, a, x.t.reserve(a.seen), phFireLoad, armFire)
		} else if n := x.t.advance(a.seen); x.publish(w, a, n, phFireLoad, armFire) {
			x.arm(w, version(n), true)
		}

	case phFireAfterCAS:
		if n := x.t.advance(a.seen); x.publish(w, a, n, phFireAfterLoad, armFire) {
			x.arm(w, version(n), false)
		}

	case phSuspendCAS:
		x.publish(w, a, x.t.advance(a.seen), phSuspendLoad, armSuspend)

	case phClaim:
		a.ph, a.now = phStartLoad, false

	case phStartCAS:
		n, e := x.t.enter(a.seen, a.v)
		if e == entryStale {
			x.done(a)
			return true
		}
		if !x.cas(w, a, n, phStartLoad) {
			return true
		}
		if e != entryRun {
			x.done(a)
			return true
		}
		a.ph, a.sup = phBegin, false

	case phBegin:
		x.begin(w, a)
		a.ph = phInF

	case phInF:
		switch c {
		case fFalse:
			a.ph = phFinishLoad
		case fTrueNow, fTrueThen:
			if w.okLeft == 0 {
				return false
			}
			w.okLeft--
			a.ph, a.ok, a.now = phFinishLoad, true, c == fTrueNow
		case fPanic:
			if w.panicLeft == 0 {
				return false
			}
			w.panicLeft--
			a.ph = phAbortLoad
		}

	case phFinishCAS:
		n, e := x.t.finish(a.seen, a.v, a.ok)
		if !x.cas(w, a, n, phFinishLoad) {
			return true
		}
		switch e {
		case exitAgain:
			a.ph, a.v, a.ok, a.now, a.sup = phBegin, version(n), false, false, false
		case exitArm:
			switch {
			case !a.ok:
				x.failf("the run of v=%#x was rescheduled although f returned false", a.v)
			case a.sup:
				x.failf("the run of v=%#x was superseded, yet its result armed a timer", a.v)
			}
			now := a.now
			x.done(a)
			x.arm(w, version(n), now)
		default:
			x.done(a)
		}

	case phAbortCAS:
		n, e := x.t.abort(a.seen)
		if !x.cas(w, a, n, phAbortLoad) {
			return true
		}
		x.done(a)
		if e == exitArm {
			x.arm(w, version(n), true)
		}
	}
	return true
}

// cas publishes n if the state is still what the actor loaded; otherwise
// the actor goes back to retry, to load afresh.
func (x *explorer) cas(w *exWorld, a *exActor, n uint32, retry exPhase) bool {
	if w.s != a.seen {
		a.ph, a.seen = retry, 0
		return false
	}
	w.s = n
	a.seen = 0
	return true
}

// publish is the CompareAndSwap of a Fire, FireAfter or Suspend: it
// publishes n, which ends the actor's call, or sends it back to retry.
func (x *explorer) publish(w *exWorld, a *exActor, n uint32, retry exPhase, k armKind) bool {
	if !x.cas(w, a, n, retry) {
		return false
	}
	x.done(a)
	x.published(w, k, version(n))
	return true
}

func (x *explorer) done(a *exActor) { *a = exActor{} }

// arm is Trigger.arm: a new timer for version v, with no delay or with one,
// which becomes a new actor.
func (x *explorer) arm(w *exWorld, v uint32, now bool) {
	if int(w.n) == len(w.actors) {
		panic("explorer: too many actors; raise exMaxActors")
	}
	w.actors[w.n] = exActor{ph: phClaim, v: v, now: now}
	w.n++
}

// published records that a Fire, FireAfter or Suspend published version v
// (or, for a coalesced Fire, rode on it): it is now the latest, and every
// run in flight is superseded.
func (x *explorer) published(w *exWorld, k armKind, v uint32) {
	w.last, w.lastV, w.served = k, v, false
	for i := range w.actors[:w.n] {
		if w.actors[i].ph.owner() {
			w.actors[i].sup = true
		}
	}
}

// begin is the moment f is called for a.v: checks that depend on it.
func (x *explorer) begin(w *exWorld, a *exActor) {
	off := x.off(a.v)
	switch {
	case w.ran && off <= x.off(w.lastRun):
		x.failf("f starts for v=%#x after a run for v=%#x: a version ran twice or out of order", a.v, w.lastRun)
	case w.last == armSuspend && off >= x.off(w.lastV):
		x.failf("f starts for v=%#x after Suspend published v=%#x", a.v, w.lastV)
	}
	if w.last == armFire && off >= x.off(w.lastV) {
		w.served = true
	}
	w.ran, w.lastRun = true, a.v
}

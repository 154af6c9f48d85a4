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
// The phases below follow trigger.go line by line; a change to the control
// flow there must be made here too:
//
//	FireAfter(0)   load; running(s) ? CAS reserve(s) : CAS advance(s) then arm
//	FireAfter(d>0) load; CAS advance(s) then arm
//	Suspend        load; CAS advance(s)
//	start(v)       load; enter(s, v) stale ? return : CAS, then loop(v) on entryRun
//	loop(v)        begin (f starts); f returns ok or !ok, or panics;
//	               load; CAS finish(s, v, ok): exitAgain -> begin with version(n),
//	               exitArm -> arm(version(n)), exitIdle -> return
//	abort (panic)  load; CAS abort(s): exitArm -> arm(version(n))
//
// arm hands a new timer to the Scheduler: it becomes a new start actor,
// which may take its first step at any later point, as a timer may fire at
// any time. A timer that disarm or settle kills was superseded, so its
// callback would find itself stale; letting every timer fire explores a
// superset of what the real Trigger does.

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

// exPhase is where an actor is: the step it takes next. Every Load phase is
// immediately followed by its CAS phase.
type exPhase uint8

const (
	phDone exPhase = iota

	phFireLoad // Fire, that is FireAfter(0)
	phFireCAS
	phFireAfterLoad // FireAfter(d) with d > 0
	phFireAfterCAS
	phSuspendLoad
	phSuspendCAS
	phStartLoad // a timer callback for version v (Trigger.start)
	phStartCAS

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

func (p exPhase) cas() bool {
	switch p {
	case phFireCAS, phFireAfterCAS, phSuspendCAS, phStartCAS, phFinishCAS, phAbortCAS:
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
	v    uint32 // start: the timer's version; owner: the iteration's version
	seen uint32 // CAS phases: the state the preceding Load returned
}

// choices is the number of ways the actor's next step can go: f may return
// false, return true (while the budget lasts) or panic (likewise).
func (x *explorer) choices(w *exWorld, i int) int {
	switch w.actors[i].ph {
	case phDone:
		return 0
	case phInF:
		return 3
	}
	return 1
}

// f's outcomes, the choices of phInF.
const (
	fFalse = iota // f returns (_, false)
	fTrue         // f returns (d, true): asks to run again
	fPanic        // f panics (abort instead of finish)
)

// step lets actor i take its next atomic step, taking choice c at phInF.
// It reports false if the step is not possible (a choice whose budget is
// spent). A violation found by the step itself is recorded in w.bad.
func (x *explorer) step(w *exWorld, i, c int) bool {
	a := &w.actors[i]
	if a.ph.load() {
		a.seen = w.s
		a.ph++
		return true
	}
	switch a.ph {
	case phFireCAS:
		if running(a.seen) {
			n := x.t.reserve(a.seen)
			if !x.cas(w, a, n, phFireLoad) {
				return true
			}
			x.done(a)
			x.published(w, armFire, version(n))
			return true
		}
		fallthrough
	case phFireAfterCAS:
		retry := phFireLoad
		if a.ph == phFireAfterCAS {
			retry = phFireAfterLoad
		}
		n := x.t.advance(a.seen)
		if !x.cas(w, a, n, retry) {
			return true
		}
		x.done(a)
		x.published(w, armFire, version(n))
		x.arm(w, version(n))

	case phSuspendCAS:
		n := x.t.advance(a.seen)
		if !x.cas(w, a, n, phSuspendLoad) {
			return true
		}
		x.done(a)
		x.published(w, armSuspend, version(n))

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
		case fTrue:
			if w.okLeft == 0 {
				return false
			}
			w.okLeft--
			a.ph, a.ok = phFinishLoad, true
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
			a.ph, a.v, a.ok, a.sup = phBegin, version(n), false, false
		case exitArm:
			switch {
			case !a.ok:
				x.failf("the run of v=%#x was rescheduled although f returned false", a.v)
			case a.sup:
				x.failf("the run of v=%#x was superseded, yet its result armed a timer", a.v)
			}
			x.done(a)
			x.arm(w, version(n))
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
			x.arm(w, version(n))
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

func (x *explorer) done(a *exActor) { *a = exActor{} }

// arm is Trigger.arm: a new timer for version v, which becomes a new actor.
func (x *explorer) arm(w *exWorld, v uint32) {
	if int(w.n) == len(w.actors) {
		panic("explorer: too many actors; raise exMaxActors")
	}
	w.actors[w.n] = exActor{ph: phStartLoad, v: v}
	w.n++
}

// published records that a Fire, FireAfter or Suspend published version v:
// it is now the latest, and every run in flight is superseded.
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

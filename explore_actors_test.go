package circulation

// The actors of the explorer (see explore_test.go). Each actor is one
// goroutine of trigger.go reduced to its accesses to Trigger.state and to
// the context of the run in flight (Trigger.cur): a Load is one atomic step,
// and a CompareAndSwap with the value a state.go transition computed from
// that load is the next one, so that every interleaving in which another
// goroutine publishes between the two is explored. What the goroutines do
// with the pending slot and the live count does not touch the state and is
// left out; slot_explore_test.go checks the pending slot.
//
// The phases below follow trigger.go, shot.go and run.go line by line; a
// change to the control flow there must be made here too:
//
//	FireAfter(0)   load; running(s) ? CAS reserve(s) :
//	               coalesce(s): look at the pending shot, due? state still s? due again?
//	               -> return; otherwise CAS advance(s) then arm(v, 0)
//	FireAfter(d>0) load; CAS advance(s) then arm(v, d)
//	Suspend        load; CAS suspend(s); if running(s): cancelRun: load cur,
//	               load the state, cancel cur if the canceled bit is set
//	storm          many FireAfter(d>0) calls, or many then a Suspend, as one
//	               load and one CAS that moves the version by more than half
//	               the version space, or all the way round (see stormKs)
//	shot.run       claim, and the shotDead check; then start(v):
//	start(v)       load; enter(s, v) stale ? return : CAS, then loop on entryRun
//	loop           begin: store cur, load the state, cancel if the canceled bit
//	               is set (f starts); f returns (0, true), (d, true) or
//	               (_, false), panics, or waits for its context to be
//	               cancelled; end: withdraw cur; load; CAS finish(s, ok):
//	               exitAgain -> begin, exitArm -> arm(version(n), d),
//	               exitIdle -> return
//	abort (panic)  end; load; CAS abort(s): exitArm -> arm(version(n), 0)
//
// arm hands a new timer to the Scheduler: it becomes a new actor, which may
// take its first step at any later point, as a timer may fire at any time. A
// timer that disarm or settle kills was superseded (slot_explore_test.go
// checks that), so its callback would find itself stale; letting every
// timer fire explores a superset of what the real Trigger does. The one
// exception is a storm: it stands for so many calls that the first of them
// has killed every timer armed before it, and their callbacks return at the
// shotDead check, so a storm removes the timers that have not claimed their
// shots. Likewise, coalesce's look at the pending slot is modelled as "the
// timer of the loaded version is unclaimed and armed with no delay", and a
// Fire that finds it so may or may not coalesce, since the shot may be out
// of the slot for a moment.
//
// Versions are tracked as serials, counts of every advance since the
// exploration began, which never wrap: the checks compare serials, and the
// state word holds the serial modulo 1<<26, as the Trigger does.

// transitions is the table of state.go functions the explorer calls. The
// tests use stateGo; the mutation tests replace one entry with a broken
// version to show that the explorer catches the mistake. finish gets the
// version the iteration began with, which the real finish does not need,
// so that a mutant can compare versions as an older protocol did.
type transitions struct {
	advance       func(s uint32) uint32
	suspend       func(s uint32) uint32
	reserve       func(s uint32) uint32
	enter         func(s, v uint32) (uint32, entry)
	finish        func(s, v uint32, ok bool) (uint32, exit)
	abort         func(s uint32) (uint32, exit)
	advanceWithin func(s uint32) uint32
	closeNow      func(s uint32) uint32
	shutdown      func(s uint32, hurry bool) uint32
}

// stateGo is the table of the real transitions.
var stateGo = transitions{
	advance: advance,
	suspend: suspend,
	reserve: reserve,
	enter:   enter,
	finish:  func(s, _ uint32, ok bool) (uint32, exit) { return finish(s, ok) },
	abort:   abort,

	advanceWithin: advanceWithin,
	closeNow:      closeNow,
	shutdown:      shutdown,
}

// stormKs are the numbers of calls a storm publishes: just over half the
// version space, one short of a whole turn, a whole turn (the version comes
// back to where it was), and one more.
var stormKs = [...]uint64{1<<27 + 1, uint64(versionMask), uint64(versionMask) + 1, uint64(versionMask) + 2}

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
	phSuspendCur        // cancelRun: load cur
	phSuspendState      // cancelRun: load the state; cancel what cur held if the canceled bit is set
	phStormLoad         // a storm of FireAfter(d) calls
	phStormCAS          //
	phSStormLoad        // a storm of FireAfter(d) calls, the last one a Suspend
	phSStormCAS         //
	phWithinLoad        // FireWithin, or a reassert (again): closed? again and not within? reserved?
	phWithinLook        // keep: look at the pending shot (current, unclaimed, due no later?)
	phWithinCheck       // keep: the state is still s
	phWithinLookAgain   // keep: is the shot still unclaimed?
	phWithinCAS         // reserve (due passed, running) or advanceWithin
	phCloseLoad         // Close
	phCloseCAS          // closeNow; then cancelRun as Suspend's
	phShutdownLoad      // Shutdown, or the hurry of place() or of Shutdown's second look (again)
	phShutdownCAS       // flush: shutdown(s, hurry), hurry a choice when a current delayed timer is unclaimed
	phSettle            // place() of an arming, after its timer started: settle puts the shot in the pending slot
	phPlace             // place(): load the state; reassert if stale and within, hurry if current on a closed Trigger
	phClaim             // a timer callback: shot.run's claim and shotDead check
	phStartLoad         // Trigger.start
	phStartCAS          //

	// The phases from phBegin on hold the running bit (Trigger.loop).
	phBegin      // begin: store cur, for an iteration of version v
	phBeginCheck // begin: load the state, cancel the context if the canceled bit is set; f starts
	phInF        // inside f
	phWait       // inside f, waiting for its context to be cancelled
	phEnd        // end: withdraw cur
	phFinishLoad
	phFinishCAS
	phAbortEnd // f panicked: the deferred end
	phAbortLoad
	phAbortCAS
)

func (p exPhase) owner() bool { return p >= phBegin }

// inIteration reports whether the phase is between the store of cur and its
// withdrawal: the run's context is the one cur holds.
func (p exPhase) inIteration() bool { return p >= phBeginCheck && p <= phEnd || p == phAbortEnd }

func (p exPhase) load() bool {
	switch p {
	case phFireLoad, phFireAfterLoad, phSuspendLoad, phStormLoad, phSStormLoad, phStartLoad, phFinishLoad, phAbortLoad,
		phWithinLoad, phCloseLoad, phShutdownLoad:
		return true
	}
	return false
}

// seen reports whether the phase uses the state its actor loaded.
func (p exPhase) seen() bool {
	switch p {
	case phFireLook, phFireCoalesceCheck, phFireLookAgain, phFireCAS, phFireAfterCAS, phSuspendCAS,
		phStormCAS, phSStormCAS, phStartCAS, phFinishCAS, phAbortCAS,
		phWithinLook, phWithinCheck, phWithinLookAgain, phWithinCAS, phCloseCAS, phShutdownCAS:
		return true
	}
	return false
}

// exActor is one goroutine. Fields that mean nothing in its phase are zero,
// so that equivalent worlds compare equal.
type exActor struct {
	ph    exPhase
	ok    bool   // phEnd, phFinish*: what f returned
	sup   bool   // owner: a Fire, FireAfter or Suspend published since its iteration began
	susp  bool   // owner: a Suspend published since its iteration began
	can   bool   // owner: its iteration's context is cancelled
	now   bool   // timer, placer: armed with no delay (shotNow), so a Fire may coalesce into it; owner: f asked for no delay
	wsup  bool   // owner: only FireWithin calls published since its iteration began (its answer competes)
	again bool   // phWithin*: a reassert, not a FireWithin; phShutdown*: a hurry (place's, or Shutdown's second look), not Shutdown's flush
	due   uint8  // timer, placer: when the arming is due; phWithin*: the time asked for (see dueNow)
	owe   uint8  // placer, phWithin* with again: 1 + the time the FireWithin whose call this is asked for (see promise)
	sv    uint64 // timer: the serial of its version; owner: the iteration's; phSuspendState: the iteration cur held
	seen  uint32 // the state the actor's last Load returned, while it uses it
}

// choices is the number of ways the actor's next step can go: f may return
// false, return true with no delay or with one (while the budget lasts),
// panic (likewise), or wait for its context; a Fire that finds a due shot
// may or may not find it in the pending slot, where other goroutines move
// shots in and out; a storm moves the version by one of stormKs. A storm
// cannot move while a timer callback is between its shotDead check and its
// enter: see stormBlocked.
func (x *explorer) choices(w *exWorld, i int) int {
	switch a := &w.actors[i]; a.ph {
	case phDone:
		return 0
	case phInF:
		return 5
	case phWait:
		if !a.can {
			return 0
		}
	case phFireLook:
		if x.due(w, version(a.seen)) {
			return 2
		}
	case phStormLoad, phSStormLoad:
		if x.stormBlocked(w) {
			return 0
		}
	case phStormCAS, phSStormCAS:
		if x.stormBlocked(w) {
			return 0
		}
		return len(stormKs)
	case phWithinCAS:
		if running(a.seen) {
			return 2 // advanceWithin, or reserve when the due time has passed
		}
	}
	return 1
}

// pending reports whether the timer of version v is in the pending slot
// and unclaimed (and, if delayed, armed with a delay; if due is not nil,
// due no later than *due): what keep and flush look for there. A shot is
// in the slot from its settle on (phSettle done). That leaves out a shot
// that a disarm of a racing call has taken out of the slot for a moment:
// that disarm puts it back with place, which reasserts or hurries as the
// arming's own place does.
func (x *explorer) pending(w *exWorld, v uint32, delayed bool, due *uint8) bool {
	for i := range w.actors[:w.n] {
		a := &w.actors[i]
		if a.ph != phClaim || uint32(a.sv)&versionMask != v || delayed && a.now || due != nil && x.later(a.due, *due) {
			continue
		}
		for j := range w.actors[:w.n] {
			if b := &w.actors[j]; b.ph == phSettle && b.sv == a.sv {
				return false
			}
		}
		return true
	}
	return false
}

// later reports whether a pending arming due at d is due later than the
// time asked for: keep keeps it only if not.
func (x *explorer) later(d, asked uint8) bool {
	if x.flow == "keep compares due times the wrong way" {
		return d < asked
	}
	return d > asked
}

// f's outcomes, the choices of phInF.
const (
	fFalse    = iota // f returns (_, false)
	fTrueNow         // f returns (0, true): asks to run again at once
	fTrueThen        // f returns (d, true) with d > 0
	fPanic           // f panics (abort instead of finish)
	fWait            // f waits for its context to be cancelled, then returns (_, false)
)

// stormBlocked reports whether a timer callback has passed its shotDead
// check and not yet entered: a storm of 1<<26 calls in that gap would let
// a superseded callback find its version current again. That takes a
// goroutine preempted for exactly a whole turn of calls between two adjacent
// steps; the exploration leaves it out.
func (x *explorer) stormBlocked(w *exWorld) bool {
	for i := range w.actors[:w.n] {
		if ph := w.actors[i].ph; ph == phStartLoad || ph == phStartCAS {
			return true
		}
	}
	return false
}

// due reports whether the timer of version v is pending, unclaimed and
// armed with no delay: coalesce's due(p) for the pending shot p.
func (x *explorer) due(w *exWorld, v uint32) bool {
	for i := range w.actors[:w.n] {
		if a := &w.actors[i]; a.ph == phClaim && a.now && uint32(a.sv)&versionMask == v {
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
		if closed(a.seen) {
			x.done(a) // closed: Fire does nothing
			return true
		}
		if running(a.seen) {
			a.ph = phFireCAS // reserve
		} else {
			a.ph = phFireLook
		}
		return true
	case phFireAfterLoad, phStormLoad, phSStormLoad:
		a.seen = w.s
		if closed(a.seen) && x.flow != "FireAfter ignores the closed bit" {
			x.done(a) // closed: FireAfter does nothing
			return true
		}
		a.ph++ // the CAS phase
		return true
	case phSuspendLoad, phStartLoad, phFinishLoad, phAbortLoad, phCloseLoad:
		a.seen = w.s
		a.ph++ // the CAS phase
		return true
	case phWithinLoad:
		a.seen = w.s
		switch {
		case closed(a.seen), a.again && !within(a.seen) && x.flow != "reassert ignores the within bit",
			running(a.seen) && reserved(a.seen):
			x.done(a)
		default:
			a.ph = phWithinLook
		}
		return true
	case phShutdownLoad:
		a.seen = w.s
		if a.again && version(a.seen) != uint32(a.sv)&versionMask {
			x.done(a) // hurry: the arming was superseded meanwhile
			return true
		}
		a.ph = phShutdownCAS
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
		x.published(w, armFire, w.ser)
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
		} else if x.publish(w, a, x.t.advance(a.seen), phFireLoad, armFire) {
			x.arm(w, true)
		}

	case phFireAfterCAS:
		if x.publish(w, a, x.t.advance(a.seen), phFireAfterLoad, armFire) {
			x.arm(w, false)
		}

	case phSuspendCAS:
		s := a.seen
		if x.publish(w, a, x.t.suspend(s), phSuspendLoad, armSuspend) && running(s) {
			a.ph = phSuspendCur
		}

	case phSuspendCur:
		a.sv = w.cur
		if a.sv == 0 {
			x.done(a)
		} else {
			a.ph = phSuspendState
		}

	case phSuspendState:
		if canceled(w.s) || x.flow == "cancelRun ignores the canceled bit" {
			x.cancel(w, a.sv)
		}
		x.done(a)

	case phStormCAS, phSStormCAS:
		k, s := stormKs[c], a.seen
		if w.s != s {
			a.ph, a.seen = a.ph-1, 0
			return true
		}
		kind, n := armFire, x.advanceBy(s, k)
		if a.ph == phSStormCAS {
			kind, n = armSuspend, x.t.suspend(x.advanceBy(s, k-1)) // the last call is a Suspend
		}
		w.s, w.ser = n, w.ser+k
		x.done(a)
		// The first of the calls killed every timer armed before it
		// whose callback had not claimed it: their callbacks stop at
		// the shotDead check.
		for i := range w.actors[:w.n] {
			if w.actors[i].ph == phClaim {
				x.done(&w.actors[i])
			}
		}
		x.published(w, kind, w.ser)
		switch {
		case kind == armFire:
			x.arm(w, false)
		case running(s):
			*a = exActor{ph: phSuspendCur} // the Suspend goes on to cancelRun
		}

	case phWithinLook:
		if found := x.pending(w, version(a.seen), false, &a.due); found {
			a.ph = phWithinCheck
		} else {
			a.ph = phWithinCAS
		}

	case phWithinCheck:
		if w.s != a.seen {
			a.ph, a.seen = phWithinLoad, 0 // retry
			return true
		}
		// Nothing happened to the state since the load: this FireWithin
		// rides on the pending arming, if its callback has still not
		// claimed it.
		x.publishedBy(w, armFire, w.ser, keepRuns)
		a.ph = phWithinLookAgain
		if x.flow == "keep does not look again after its check" {
			x.done(a)
		}

	case phWithinLookAgain:
		// Still unclaimed: its callback has not begun, and will find the
		// version unchanged unless a later call supersedes both. Kept.
		if found := x.pending(w, version(a.seen), false, &a.due); found {
			switch {
			case !a.again:
				x.promise(w, a.due, x.serial(w, a.seen))
			case a.owe != 0:
				x.promise(w, a.owe-1, x.serial(w, a.seen))
			}
			x.done(a)
		} else {
			a.ph = phWithinCAS // from the same load
		}

	case phWithinCAS:
		if c == 1 { // the due time has passed while f runs: reserve
			if x.cas(w, a, x.t.reserve(a.seen), phWithinLoad) {
				x.done(a)
				x.published(w, armFire, w.ser)
			}
			return true
		}
		seen := a.seen
		if !x.cas(w, a, x.t.advanceWithin(seen), phWithinLoad) {
			return true
		}
		a0due, a0again, owe := a.due, a.again, a.owe
		if d, ok := x.superseded(w, seen, a.due); ok && x.flow != "FireWithin does not look at the arming it superseded" {
			a0due = d
		}
		if !a.again {
			owe = a.due + 1 // promised when the call returns, after its place
		}
		x.done(a)
		x.publishedBy(w, armFire, w.ser, withinRuns)
		x.armDue(w, false, a0due, a0again && x.flow != "a reassert's arming reasserts again")
		w.actors[w.n-1].owe = owe

	case phCloseCAS:
		s := a.seen
		if x.publish(w, a, x.t.closeNow(s), phCloseLoad, armSuspend) {
			w.closedSer = w.ser
			if running(s) {
				a.ph = phSuspendCur
			}
		}

	case phShutdownCAS:
		s, hurry := a.seen, x.pending(w, version(a.seen), true, nil)
		if !x.cas(w, a, x.t.shutdown(s, hurry), phShutdownLoad) {
			return true
		}
		again := a.again
		x.done(a)
		w.closedSer = w.ser
		w.dl, w.dlV = 0, 0 // Shutdown runs what is arranged at once
		if hurry && !running(s) {
			x.arm(w, true)
		}
		if !again {
			// Shutdown looks at the slot once more, now that the Trigger
			// is closed: a hurry of the current version, as place's.
			*a = exActor{ph: phShutdownLoad, again: true, sv: w.ser}
		}

	case phSettle:
		a.ph = phPlace

	case phPlace:
		v := uint32(a.sv) & versionMask
		switch {
		case version(w.s) != v && within(w.s) && !a.again:
			*a = exActor{ph: phWithinLoad, again: true, due: a.due, owe: a.owe}
		case version(w.s) == v && closed(w.s) && !a.now:
			*a = exActor{ph: phShutdownLoad, again: true, sv: a.sv}
		default:
			switch {
			case version(w.s) == v && a.owe != 0:
				x.promise(w, a.owe-1, a.sv)
			case version(w.s) != v && within(w.s):
				// A reassert's arming, superseded before it could be
				// compared: it does not ask again, and the later time
				// may win (see FireWithin). The times asked for so
				// far are no longer promised.
				w.dl, w.dlV = 0, 0
			}
			// A FireWithin whose arming was superseded before it
			// returned promises nothing: a Fire, FireAfter or Suspend
			// that did it came later and wins; for a reassert that
			// did it, see above.
			x.done(a)
		}

	case phClaim:
		a.ph, a.now = phStartLoad, false

	case phStartCAS:
		n, e := x.t.enter(a.seen, uint32(a.sv)&versionMask)
		if e == entryStale {
			x.done(a)
			return true
		}
		if !x.cas(w, a, n, phStartLoad) {
			return true
		}
		x.met(w, a)
		if e != entryRun {
			x.done(a)
			return true
		}
		a.ph = phBegin

	case phBegin:
		x.begin(w, a)
		w.cur = a.sv
		a.ph = phBeginCheck

	case phBeginCheck:
		if canceled(w.s) && x.flow != "begin does not check the canceled bit" {
			x.cancel(w, a.sv)
		}
		a.ph = phInF

	case phInF:
		switch c {
		case fFalse:
			a.ph = phEnd
		case fTrueNow, fTrueThen:
			if w.okLeft == 0 {
				return false
			}
			w.okLeft--
			a.ph, a.ok, a.now = phEnd, true, c == fTrueNow
		case fPanic:
			if w.panicLeft == 0 {
				return false
			}
			w.panicLeft--
			a.ph = phAbortEnd
		case fWait:
			a.ph = phWait
		}

	case phWait: // the context is cancelled: f returns false
		a.ph = phEnd

	case phEnd, phAbortEnd:
		w.cur = 0
		a.can = true // end cancels the context; no check: the run is over
		a.ph++

	case phFinishCAS:
		s := a.seen
		n, e := x.t.finish(s, uint32(a.sv)&versionMask, a.ok)
		if !x.cas(w, a, n, phFinishLoad) {
			return true
		}
		switch e {
		case exitAgain:
			*a = exActor{ph: phBegin, sv: w.ser}
		case exitArm:
			switch {
			case !a.ok:
				x.failf("the run of v=%#x was rescheduled although f returned false", a.sv)
			case a.sup:
				x.failf("the run of v=%#x was superseded, yet its result armed a timer", a.sv)
			case a.wsup:
				x.failf("a FireWithin came during the run of v=%#x, yet its answer armed a timer without competing", a.sv)
			case closed(s):
				x.failf("the run of v=%#x armed a timer on a closed Trigger", a.sv)
			}
			now := a.now
			x.done(a)
			x.armDue(w, now, answerDue(now), false)
		case exitCompete:
			if !a.ok || a.sup || !a.wsup || closed(s) {
				x.failf("the answer of the run of v=%#x competes with a FireWithin's arming, but only FireWithin calls may have come since it began and f must have asked for more (ok %v, superseded %v, by FireWithin %v)", a.sv, a.ok, a.sup, a.wsup)
			}
			*a = exActor{ph: phWithinLoad, again: true, due: answerDue(a.now)} // reassert
		default:
			if a.ok && !a.sup && !closed(s) {
				x.failf("the run of v=%#x asked to run again and nothing superseded it, yet its answer was ignored", a.sv)
			}
			x.done(a)
		}

	case phAbortCAS:
		s := a.seen
		n, e := x.t.abort(s)
		if !x.cas(w, a, n, phAbortLoad) {
			return true
		}
		x.done(a)
		if e == exitArm {
			if closed(s) {
				w.closedSer = w.ser // the reservation Shutdown let stand: its run is the flush
			}
			x.arm(w, true)
		}
	}
	return true
}

// cas publishes n if the state is still what the actor loaded; otherwise
// the actor goes back to retry, to load afresh. The serial moves on by as
// much as the version did.
func (x *explorer) cas(w *exWorld, a *exActor, n uint32, retry exPhase) bool {
	if w.s != a.seen {
		a.ph, a.seen = retry, 0
		return false
	}
	w.ser += uint64((version(n) - version(w.s)) & versionMask)
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
	x.published(w, k, w.ser)
	return true
}

func (x *explorer) done(a *exActor) { *a = exActor{} }

// advanceBy is k calls of x.t.advance in one step: the first one, then the
// version moved on by the rest.
func (x *explorer) advanceBy(s uint32, k uint64) uint32 {
	if k == 0 {
		return s
	}
	n := x.t.advance(s)
	return n&^versionMask | (n+uint32(k-1))&versionMask
}

// arm is Trigger.arm: a new timer for the current version, with no delay or
// with one, which becomes a new actor.
func (x *explorer) arm(w *exWorld, now bool) { x.armDue(w, now, answerDue(now), false) }

// Due times, for FireWithin: small numbers standing for the times the
// armings are due at. An arming with no delay is due at once; FireAfter(d)
// and an answer (d, true) are due at 2; FireWithin asks for 1 or 3.
const (
	dueNow   = 0
	dueLater = 2
)

func answerDue(now bool) uint8 {
	if now {
		return dueNow
	}
	return dueLater
}

// armDue is arm for an arming due at due, made by a reassert if again. In
// the shape exploration the arming's place() is an actor of its own, which
// may reassert (unless again) or hurry.
func (x *explorer) armDue(w *exWorld, now bool, due uint8, again bool) {
	n := 1
	if x.shape {
		n = 2
	}
	if int(w.n)+n > len(w.actors) {
		panic("explorer: too many actors; raise exMaxActors")
	}
	w.actors[w.n] = exActor{ph: phClaim, sv: w.ser, now: now, due: due}
	w.n++
	if x.shape {
		w.actors[w.n] = exActor{ph: phSettle, sv: w.ser, now: now, due: due, again: again}
		w.n++
	}
}

// published records that a Fire, FireAfter or Suspend published the version
// of serial v (or, for a coalesced Fire, rode on it): it is now the latest,
// and every run in flight is superseded.
func (x *explorer) published(w *exWorld, k armKind, v uint64) { x.publishedBy(w, k, v, supersedeRuns) }

// What a published call does to the runs in flight.
const (
	supersedeRuns = iota // Fire, FireAfter, Suspend: superseded
	withinRuns           // FireWithin's arming: their answer competes, unless superseded already
	keepRuns             // FireWithin kept the pending arming: nothing
)

func (x *explorer) publishedBy(w *exWorld, k armKind, v uint64, runs int) {
	w.last, w.lastV, w.served = k, v, false
	if runs == supersedeRuns {
		// Fire, FireAfter and Suspend supersede every time asked before.
		w.dl, w.dlV = 0, 0
	}
	for i := range w.actors[:w.n] {
		if a := &w.actors[i]; a.ph.owner() {
			switch runs {
			case supersedeRuns:
				a.sup = true
				a.susp = a.susp || k == armSuspend
			case withinRuns:
				a.wsup = !a.sup
			}
		}
	}
}

// cancel cancels the context of the iteration of serial v, if it is still
// in flight: only a Suspend published since it began may.
func (x *explorer) cancel(w *exWorld, v uint64) {
	for i := range w.actors[:w.n] {
		if a := &w.actors[i]; a.ph.inIteration() && a.sv == v {
			if !a.susp && !a.can {
				x.failf("the context of the run of v=%#x was cancelled, but no Suspend came since it began", v)
			}
			a.can = true
		}
	}
}

// begin is the moment f is called for a.sv: checks that depend on it.
func (x *explorer) begin(w *exWorld, a *exActor) {
	switch {
	case w.ran && a.sv <= w.lastRun:
		x.failf("f starts for v=%#x after a run for v=%#x: a version ran twice or out of order", a.sv, w.lastRun)
	case w.last == armSuspend && a.sv >= w.lastV:
		x.failf("f starts for v=%#x after Suspend published v=%#x", a.sv, w.lastV)
	case w.closedSer != 0 && a.sv > w.closedSer:
		x.failf("f starts for v=%#x, armed after the Trigger closed at v=%#x", a.sv, w.closedSer)
	}
	if w.last == armFire && a.sv >= w.lastV {
		w.served = true
	}
	w.ran, w.lastRun = true, a.sv
}

// promise records that a FireWithin call has returned, having asked for a
// run no later than due: the arming of serial v, which it made or kept, was
// the latest when it returned. Until a run meets it, the earliest of the
// times asked for since the latest Fire, FireAfter, Suspend or Close stands
// (see met). A call is judged when it returns, after its place and any
// reassert: until then its goroutine may stall between two steps for as
// long as it likes.
func (x *explorer) promise(w *exWorld, due uint8, v uint64) {
	entered := true
	for i := range w.actors[:w.n] {
		if a := &w.actors[i]; a.sv == v && (a.ph == phClaim || a.ph == phStartLoad || a.ph == phStartCAS) {
			entered = false
		}
	}
	if entered {
		return // the arming's timer has entered already: its run has begun, or is reserved
	}
	if w.dl == 0 || v < w.dlV {
		w.dlV = v
	}
	if w.dl == 0 || due+1 < w.dl {
		w.dl = due + 1
	}
}

// serial returns the serial of the version of a state s loaded, a recent
// one: the latest at or below w.ser.
func (x *explorer) serial(w *exWorld, s uint32) uint64 {
	return w.ser - uint64((version(w.s)-version(s))&versionMask)
}

// met is called when the timer of the latest arming enters, taking the
// running bit or reserving the next run: its due time is when the Func
// runs, or, if one is in flight, when the next run is owed. Earliest wins:
// it must be due no later than every time asked for by the FireWithin
// calls that returned since the latest Fire, FireAfter, Suspend or Close,
// unless the Trigger is closed (Shutdown runs what it finds at once).
func (x *explorer) met(w *exWorld, a *exActor) {
	if w.dl == 0 || a.sv < w.dlV {
		return
	}
	raced := false
	for i := range w.actors[:w.n] {
		if b := &w.actors[i]; (b.ph == phSettle || b.ph == phPlace) && b.again && b.sv != a.sv {
			raced = true // a reassert's arming superseded before it could be compared (see phPlace)
		}
	}
	if a.due+1 > w.dl && !closed(w.s) && !raced {
		x.failf("earliest wins: the arming of v=%#x, due at %d, runs, but a FireWithin asked for %d", a.sv, a.due, w.dl-1)
	}
	w.dl, w.dlV = 0, 0
}

// superseded is fireWithin's look at the arming it superseded, right after
// its compare-and-swap over s (in the same step: an arming placed between
// the two both asks again and is seen, which changes nothing): if the
// timer of version(s) is in the slot, not entered, and due sooner than
// due, its due time, which the new arming takes. A claimed timer counts
// only if the within bit of s says it has not entered.
func (x *explorer) superseded(w *exWorld, s uint32, due uint8) (uint8, bool) {
	v := version(s)
	for i := range w.actors[:w.n] {
		a := &w.actors[i]
		if uint32(a.sv)&versionMask != v || a.due >= due {
			continue
		}
		switch a.ph {
		case phClaim:
		case phStartLoad, phStartCAS:
			if !within(s) {
				continue
			}
		default:
			continue
		}
		for j := range w.actors[:w.n] {
			if b := &w.actors[j]; b.ph == phSettle && b.sv == a.sv {
				return 0, false // not in the slot yet: it asks again when it gets there
			}
		}
		return a.due, true
	}
	return 0, false
}

package circulation

// The model of the pending-slot protocol explored by slot_explore_test.go:
// the shots, the actors, and their steps, which follow shot.go (arm,
// settle, disarm, newShot, kill, run, retire, release) line by line. A
// change to those functions must be made here too.
//
// A shot is an object that a Trigger on RuntimeScheduler reuses: release
// puts it in the Trigger's spare slot when its last reference goes, and
// newShot takes it from there for a later arming. Each use is an
// incarnation, numbered by gen; a goroutine holds a reference to one
// incarnation, and touching the shot through it once the shot has been
// recycled is a violation.

import "fmt"

// Timer states.
const (
	tmNone    uint8 = iota // not yet handed to the Scheduler
	tmArmed                // pending
	tmFired                // its callback has started
	tmStopped              // Stop returned true
)

type slShot struct {
	v       uint32 // the incarnation's version (shot.version)
	gen     uint8  // the incarnation: bumped when newShot reuses the shot
	timer   uint8
	dead    bool // shotDead
	claimed bool // shotClaimed
	spare   bool // recycled: put in Trigger.spare by release (and maybe dropped from it since)
	refs    int8
	kills   uint8 // of this incarnation
	starts  uint8 // of this incarnation: callbacks that passed claim and found the shot alive
	busy    bool  // shotBusy: retarget or delay holds it
	late    bool  // shotLate: re-targeted
	nodelay bool  // armed with no delay (shotNow, shotGo): never re-targeted
	at      uint8 // shot.at: when its arming is due, on the world's clock
	timerAt uint8 // when its timer comes: the clock reaches it when the timer fires
	arms    uint8 // of this incarnation: Resets of its timer by retarget and delay
}

// Program counters of the actors.
const (
	pcDone uint8 = iota
	pcArmAdvance
	pcArmCheck     // c := version(state.Load()) after settle
	pcArmTake      // rearmPending: old := Swap(nil)
	pcArmTakeCheck // rearmPending: is old the current version's?
	pcDisarmAdvance
	pcDisarmSwap
	pcDisarmCheck // is the shot taken out the current version's?
	pcSettleSwap
	pcSettleCheck // is the displaced shot the current version's, and ours not?
	pcKillDead
	pcKillStop
	pcKillClaim
	pcRelease      // release, or retire then release
	pcCallbackFire // the timer delivers the callback
	pcCallbackClaim
	pcCallbackDead
	pcExtraDelivery // a misbehaving Scheduler delivers a callback once more
	pcArmNilCheck   // rearmPending found the slot empty: is v still current?
	pcRetargetBusy  // retarget: CAS the flags to busy, then write the version and due time
	pcRetargetStop  // retarget: a timer that comes later than the new due time is stopped and reset
	pcRetargetClear // retarget: CAS busy off; on failure the timer came: Store, Reset
	pcCallbackLate  // the callback of a re-targeted shot reads the clock
	pcDelayBusy     // delay: trade the claim for busy
	pcDelayReset    // delay: Reset the timer for the rest
	pcDelayClear    // delay: CAS busy off; on failure, take the claim back or go on to pcDelayStop
	pcDelayStop     // delay: killed while busy: Stop the timer
	pcDelayHand     // delay: Stop failed: hand the shot to the callback on its way, or take its claim
)

type slActor struct {
	pc     uint8
	ret    bool   // inside a settle that is followed by a check of the version (place)
	reuse  bool   // rearmPending: cancelling the stale shot to re-arm it; on failure, arm a new one
	retire bool   // pcRelease: retire first (live.Add(-1))
	n      int8   // references release drops
	sh     int8   // the shot being worked on
	gen    uint8  // the incarnation of sh this actor holds a reference to
	v      uint32 // place: the version of the shot it settles, to check after
	mine   uint32 // settle: the version of the shot it put in the slot
	at     uint8  // arm: its due time
	arm    uint8  // a callback: the arming of the timer it delivers (slShot.arms)
}

type slWorld struct {
	ver    uint32    // version(Trigger.state)
	now    uint8     // the clock: a timer that fires moves it to the timer's time, if it is behind
	armed  bool      // the latest operation was an arm op
	dues   [12]uint8 // the due time each version's arming asked for, by offset from the base
	slot   int8      // Trigger.pending
	spare  int8      // Trigger.spare
	live   int8      // Trigger.live
	nShots uint8
	nAct   uint8
	shots  [slMaxShots]slShot
	actors [slMaxActors]slActor
}

// slModel is how the Scheduler behaves, and which mistake, if any, the
// model makes (to test the explorer).
type slModel struct {
	// misbehave makes the Scheduler deliver a callback even after Stop
	// returned true, and deliver one callback of its choice a second time.
	// Such a Trigger does not recycle its shots.
	misbehave bool
	mutant    string

	// delays is the longest delay an arm op chooses on RuntimeScheduler
	// (each from 1 to delays, or none); 2 lets an arming be due sooner
	// than the timer it supersedes.
	delays int
}

// choices returns the number of ways actor i can take its next step: 0 if
// it cannot, and for the extra delivery, one per shot it can deliver.
func (x *slExplorer) choices(w *slWorld, i int) int {
	a := &w.actors[i]
	switch a.pc {
	case pcDone:
		return 0
	case pcCallbackFire:
		sh := &w.shots[a.sh]
		switch {
		case sh.gen != a.gen: // the timer was reset for a later incarnation
			return 0
		case a.arm != sh.arms: // the timer was reset since: a later actor delivers it
			return 0
		case sh.timer == tmArmed, x.m.misbehave && sh.timer == tmStopped:
			return 1
		}
		return 0
	case pcExtraDelivery:
		return int(w.nShots)
	case pcArmAdvance:
		if !x.m.misbehave {
			return 1 + x.m.delays // arm with no delay, or with one (rearmPending): RuntimeScheduler only
		}
	}
	return 1
}

// shot returns the shot actor a holds, for a step that touches it: the
// incarnation a holds a reference to must not have been recycled.
func (x *slExplorer) shot(w *slWorld, a *slActor) *slShot {
	sh := &w.shots[a.sh]
	if sh.gen != a.gen || sh.spare {
		x.failf("shot v=%#x is used after it was recycled", sh.v)
	}
	return sh
}

// take makes actor a the owner of shot i, just handed over by a Swap of the
// slot.
func (x *slExplorer) take(w *slWorld, a *slActor, i int8) {
	if w.shots[i].spare {
		x.failf("the slot held shot v=%#x after it was recycled", w.shots[i].v)
	}
	a.sh, a.gen = i, w.shots[i].gen
}

// ret ends the routine the actor is in.
func (x *slExplorer) ret(a *slActor) {
	if a.ret {
		a.pc, a.ret, a.sh, a.gen = pcArmCheck, false, slNone, 0
		return
	}
	*a = slActor{}
}

// step lets actor i take its next step. Steps that no other actor can
// observe are merged with the one before: newShot (with its Swap of the
// spare slot), live.Add(1) and AfterFunc or Reset with arm's CAS (nobody
// else can reach the shot before settle publishes it), the read of a shot's
// version that settle and disarm make while they own it with the Swap that
// follows or precedes it, retire's live.Add(-1) with its release (live is
// only read once everyone is done), and release's Stores with its Add
// (nobody holds the shot once the count is zero).
func (x *slExplorer) step(w *slWorld, i, c int) bool {
	a := &w.actors[i]
	log := x.log != nil
	switch a.pc {
	case pcArmAdvance, pcDisarmAdvance:
		w.ver = (w.ver + 1) & versionMask
		w.armed = a.pc == pcArmAdvance
		a.v = w.ver
		if log {
			x.logf("CAS: v=%#x", a.v)
		}
		if a.pc == pcDisarmAdvance {
			a.pc = pcDisarmSwap
			return true
		}
		// The clock is read right after the CAS: merging the two hides
		// only a timer that fires in between, which moves the due time
		// later, as if the call had come later.
		a.at = w.now + uint8(c)
		w.dues[x.off8(a.v)] = a.at
		if log && c > 0 {
			x.logf(", due at %d", a.at)
		}
		if c > 0 {
			a.pc = pcArmTake // rearmPending: a delay on RuntimeScheduler
			return true
		}
		x.armNew(w, a)

	case pcArmTake:
		old := w.slot
		w.slot = slNone
		if log {
			x.logf("rearmPending: Swap(nil) -> %s", x.name(w, old))
		}
		if old == slNone {
			a.pc = pcArmNilCheck
			return true
		}
		x.take(w, a, old)
		a.pc = pcArmTakeCheck

	case pcArmNilCheck:
		if log {
			x.logf("state.Load: v=%#x", w.ver)
		}
		if w.ver != a.v && x.m.mutant != "rearmPending arms what a later call superseded" ||
			x.m.mutant == "rearmPending skips a current arming" {
			if log {
				x.logf(": superseded, arms nothing")
			}
			*a = slActor{}
			return true
		}
		x.armNew(w, a)

	case pcArmTakeCheck:
		ov := x.shot(w, a).v
		if log {
			x.logf("state.Load: v=%#x", w.ver)
		}
		if ov == w.ver {
			// The current arming's: put it back; this arming is over.
			a.v, a.ret, a.pc = ov, true, pcSettleSwap
			return true
		}
		a.reuse, a.pc = true, pcRetargetBusy

	case pcRetargetBusy:
		// Load and CAS merged: the CAS fails exactly when the Load would
		// show the claim that came between them.
		sh := x.shot(w, a)
		if sh.claimed || sh.dead || sh.busy || sh.nodelay {
			if log {
				x.logf("retarget: flags claimed=%v busy=%v nodelay=%v: cancel instead", sh.claimed, sh.busy, sh.nodelay)
			}
			a.pc = pcKillDead
			return true
		}
		// Nobody reads the version and due time of a busy shot out of
		// the slot: the stores are merged with the CAS.
		sh.busy, sh.v, sh.at = true, a.v, a.at
		if log {
			x.logf("retarget %s: CAS busy; due at %d, timer at %d", x.name(w, a.sh), sh.at, sh.timerAt)
		}
		a.pc = pcRetargetStop

	case pcRetargetStop:
		sh := x.shot(w, a)
		if sh.timerAt <= sh.at || x.m.mutant == "retarget keeps a timer that comes after the new due time" {
			a.pc = pcRetargetClear
			if log {
				x.logf("the timer comes in time: kept")
			}
			return true
		}
		stopped := sh.timer == tmArmed
		if log {
			x.logf("timer later than due: Stop() -> %v", stopped)
		}
		if stopped {
			x.rearmTimer(w, a.sh, sh.at)
		}
		a.pc = pcRetargetClear

	case pcRetargetClear:
		sh := x.shot(w, a)
		sh.busy, sh.late = false, true
		if sh.claimed {
			// The timer came, and its callback left its claim to us:
			// Store and Reset, merged (nobody else can reach the shot).
			sh.claimed = false
			if log {
				x.logf("CAS busy off fails: the timer came; Store(late), Reset")
			}
			if x.m.mutant != "retarget does not re-arm the timer that came meanwhile" {
				x.rearmTimer(w, a.sh, sh.at)
			}
		} else if log {
			x.logf("CAS busy off")
		}
		a.reuse, a.v, a.ret, a.pc = false, sh.v, true, pcSettleSwap

	case pcArmCheck:
		c := w.ver
		if log {
			x.logf("state.Load: v=%#x", c)
		}
		if c == a.v {
			*a = slActor{}
			return true
		}
		if log {
			x.logf(", not %#x: disarm", a.v)
		}
		a.v, a.pc = 0, pcDisarmSwap

	case pcDisarmSwap:
		old := w.slot
		w.slot = slNone
		if log {
			x.logf("Swap(nil) -> %s", x.name(w, old))
		}
		if old == slNone {
			x.ret(a)
			return true
		}
		x.take(w, a, old)
		a.pc = pcDisarmCheck

	case pcDisarmCheck:
		ov := x.shot(w, a).v // read while we own it
		if log {
			x.logf("state.Load: v=%#x", w.ver)
		}
		if ov != w.ver || x.m.mutant == "disarm kills the current shot" {
			a.pc = pcKillDead
			return true
		}
		// The current version's: it stays, and the version is checked
		// again when settle returns.
		a.pc = pcSettleSwap
		if x.m.mutant != "disarm does not check the version after putting a shot back" {
			a.v, a.ret = ov, true
		}

	case pcSettleSwap:
		v := x.shot(w, a).v // read while we own it
		a.mine = v
		old := w.slot
		w.slot = a.sh
		if log {
			x.logf("Swap(%s) -> %s", x.name(w, a.sh), x.name(w, old))
		}
		if old == slNone {
			x.ret(a)
			return true
		}
		x.take(w, a, old)
		a.pc = pcSettleCheck

	case pcSettleCheck:
		// a holds the displaced shot; its own is in the slot, unless
		// another goroutine has taken it out since.
		ov := x.shot(w, a).v
		if log {
			x.logf("state.Load: v=%#x", w.ver)
		}
		keepOld := ov == w.ver && a.mine != w.ver
		if x.m.mutant == "settle keeps the stale shot" {
			keepOld = !keepOld
		}
		a.mine = 0
		if !keepOld {
			a.pc = pcKillDead
		} else {
			a.pc = pcSettleSwap // put it back: the next Swap
		}

	case pcKillDead:
		sh := x.shot(w, a)
		wasClaimed := sh.claimed
		sh.dead = true
		sh.kills++
		if log {
			x.logf("kill %s: Or(dead) -> claimed=%v", x.name(w, a.sh), wasClaimed)
		}
		switch {
		case sh.kills > 1:
			x.failf("shot v=%#x is killed twice", sh.v)
		case sh.v == w.ver:
			x.failf("shot v=%#x is killed while it is the latest arming: its fire is lost", sh.v)
		}
		if wasClaimed || sh.busy && x.m.mutant != "cancel stops a busy shot's timer" {
			a.n, a.pc = 1, pcRelease // the callback, or the holder of busy, retires it
		} else {
			a.pc = pcKillStop
		}

	case pcKillStop:
		sh := x.shot(w, a)
		stopped := sh.timer == tmArmed
		if stopped {
			sh.timer = tmStopped
		}
		if log {
			x.logf("Stop() -> %v", stopped)
		}
		switch {
		case stopped:
			a.pc = pcKillClaim
		case a.reuse && x.m.mutant == "rearmPending re-arms a shot whose timer did not stop":
			x.reuseShot(w, a)
		default:
			a.n, a.pc = 1, pcRelease
		}

	case pcKillClaim:
		won := x.claim(w, a) || x.m.mutant == "kill trusts Stop alone"
		switch {
		case won && a.reuse:
			x.reuseShot(w, a)
		case won:
			a.n, a.retire, a.pc = 2, true, pcRelease
		default:
			a.n, a.pc = 1, pcRelease
		}

	case pcExtraDelivery:
		a.sh, a.gen = int8(c), w.shots[c].gen
		fallthrough
	case pcCallbackFire:
		sh := x.shot(w, a)
		if sh.timer == tmArmed {
			sh.timer = tmFired
		}
		w.now = max(w.now, sh.timerAt) // a timer may come late, never early
		a.pc = pcCallbackClaim
		if log {
			x.logf("the Scheduler delivers the callback of %s", x.name(w, a.sh))
		}

	case pcCallbackClaim:
		sh := x.shot(w, a)
		busy := sh.busy && x.m.mutant != "a callback ignores busy"
		if !x.claim(w, a) || busy {
			if log && busy {
				x.logf(": busy, left to its holder")
			}
			*a = slActor{}
			return true
		}
		a.pc = pcCallbackDead
		if sh.late && !sh.dead {
			a.pc = pcCallbackLate
		}

	case pcCallbackLate:
		sh := x.shot(w, a)
		early := w.now < sh.at && x.m.mutant != "an early callback starts the Func"
		if log {
			x.logf("monoNow: %d, due at %d", w.now, sh.at)
		}
		if early {
			a.pc = pcDelayBusy
		} else {
			a.pc = pcCallbackDead
		}

	case pcDelayBusy:
		sh := x.shot(w, a)
		if sh.dead {
			if log {
				x.logf("delay: CAS to busy fails: killed")
			}
			a.pc = pcCallbackDead
			return true
		}
		sh.claimed, sh.busy = false, true
		if log {
			x.logf("delay: CAS claim -> busy")
		}
		a.pc = pcDelayReset

	case pcDelayReset:
		sh := x.shot(w, a)
		if log {
			x.logf("Reset for %d", sh.at)
		}
		x.rearmTimer(w, a.sh, sh.at)
		a.pc = pcDelayClear

	case pcDelayClear:
		sh := x.shot(w, a)
		switch {
		case !sh.claimed && !sh.dead:
			sh.busy = false
			if log {
				x.logf("CAS busy off: the next callback takes over")
			}
			*a = slActor{}
		case sh.claimed:
			sh.busy = false // CAS fails, Load, And(^busy): merged, the And decides
			if log {
				x.logf("CAS fails: the timer came back; take its claim")
			}
			a.pc = pcCallbackDead
			if !sh.dead {
				a.pc = pcCallbackLate
			}
		default:
			if log {
				x.logf("CAS fails: killed")
			}
			a.pc = pcDelayStop
		}

	case pcDelayStop:
		sh := x.shot(w, a)
		stopped := sh.timer == tmArmed
		if log {
			x.logf("Stop() -> %v", stopped)
		}
		if stopped {
			sh.timer = tmStopped
			a.n, a.retire, a.pc = 1, true, pcRelease
		} else if x.m.mutant == "delay retires a killed shot whose callback is on its way" {
			a.n, a.retire, a.pc = 1, true, pcRelease
		} else {
			a.pc = pcDelayHand
		}

	case pcDelayHand:
		sh := x.shot(w, a)
		sh.busy = false
		if !sh.claimed {
			if log {
				x.logf("CAS busy off: the callback on its way finds it dead")
			}
			*a = slActor{}
			return true
		}
		if log {
			x.logf("CAS fails: the callback came; retire")
		}
		a.n, a.retire, a.pc = 1, true, pcRelease

	case pcCallbackDead:
		sh := x.shot(w, a)
		if sh.dead {
			if log {
				x.logf("dead: does not start")
			}
		} else {
			sh.starts++
			if log {
				x.logf("alive: start(%#x) at %d, due at %d", sh.v, w.now, sh.at)
			}
			switch {
			case sh.starts > 1:
				x.failf("the callback of shot v=%#x starts twice", sh.v)
			case w.now < sh.at:
				x.failf("the callback of shot v=%#x starts at %d, before its due time %d", sh.v, w.now, sh.at)
			case sh.at != w.dues[x.off8(sh.v)]:
				x.failf("the callback of shot v=%#x starts with due time %d, not its arming's %d", sh.v, sh.at, w.dues[x.off8(sh.v)])
			}
		}
		a.n, a.retire, a.pc = 1, true, pcRelease

	case pcRelease:
		if a.retire {
			w.live--
			if log {
				x.logf("retire: live.Add(-1): %d; ", w.live)
			}
			if w.live < 0 {
				x.failf("live is negative")
			}
		}
		x.release(w, a)
		a.retire, a.n = false, 0
		if a.reuse { // rearmPending could not re-arm the stale shot: arm goes on
			a.reuse, a.sh, a.gen = false, slNone, 0
			x.armNew(w, a)
			return true
		}
		x.ret(a)
	}
	return true
}

// newShot is newShot and the timer half of arm: it gives actor a a shot for
// its version a.v holding both references, reusing the spare one if the
// Trigger recycles, and hands its callback to the Scheduler.
func (x *slExplorer) newShot(w *slWorld, a *slActor) {
	i := w.spare
	w.spare = slNone
	if x.m.misbehave || i == slNone {
		if int(w.nShots) == slMaxShots {
			panic("slot explorer: too many shots")
		}
		i = int8(w.nShots)
		w.nShots++
		w.shots[i] = slShot{}
		if x.log != nil {
			x.logf("; newShot")
		}
	} else {
		w.shots[i] = slShot{gen: w.shots[i].gen + 1}
		if x.log != nil {
			x.logf("; newShot reuses the spare shot")
		}
	}
	sh := &w.shots[i]
	sh.v, sh.refs, sh.timer = a.v, 2, tmArmed
	sh.at, sh.timerAt, sh.nodelay = a.at, a.at, a.at == w.now && !x.m.misbehave
	a.sh, a.gen = i, sh.gen
	x.spawnCallbacks(w, i)
}

// armNew is the rest of arm after the state CAS: newShot, live.Add(1),
// AfterFunc or Reset, then place.
func (x *slExplorer) armNew(w *slWorld, a *slActor) {
	x.newShot(w, a)
	w.live++
	a.pc, a.ret = pcSettleSwap, true
	if x.m.mutant == "arm does not check the version after settle" {
		a.ret = false
	}
	if x.log != nil {
		x.logf(", live.Add(1): %d, AfterFunc", w.live)
	}
}

// reuseShot is the end of rearmPending: the stale shot a holds was
// cancelled before its callback started, so a holds both references and
// the shot still counts in live. It becomes a new incarnation for a.v, its
// timer Reset, and goes to place.
func (x *slExplorer) reuseShot(w *slWorld, a *slActor) {
	sh := x.shot(w, a)
	*sh = slShot{v: a.v, gen: sh.gen + 1, timer: tmArmed, refs: sh.refs, at: a.at, timerAt: a.at}
	a.gen, a.reuse = sh.gen, false
	x.spawnCallbacks(w, a.sh)
	a.pc, a.ret = pcSettleSwap, true
	if x.log != nil {
		x.logf("; re-armed for v=%#x: Reset", a.v)
	}
}

// release is release: it drops a.n references and recycles the shot when
// none is left.
func (x *slExplorer) release(w *slWorld, a *slActor) {
	sh := x.shot(w, a)
	sh.refs -= a.n
	if x.log != nil {
		x.logf("release %s: refs.Add(-%d): %d", x.name(w, a.sh), a.n, sh.refs)
	}
	last := sh.refs == 0
	if x.m.mutant == "release recycles one reference early" {
		last = sh.refs <= 1
	}
	switch {
	case sh.refs < 0:
		x.failf("shot v=%#x has negative references", sh.v)
	case sh.refs == 0 && sh.kills != 1:
		x.failf("shot v=%#x lost its last reference without being killed", sh.v)
	case last && !x.m.misbehave: // only RuntimeScheduler recycles
		sh.dead, sh.claimed, sh.busy, sh.late, sh.spare = false, false, false, false, true
		w.spare = a.sh // a shot already there is dropped
		if x.log != nil {
			x.logf(": recycled")
		}
	}
}

// claim is shot.claim: it reports whether the caller is the first to
// account for the shot's timer.
func (x *slExplorer) claim(w *slWorld, a *slActor) bool {
	sh := x.shot(w, a)
	won := !sh.claimed
	sh.claimed = true
	if x.log != nil {
		x.logf("claim() -> %v", won)
	}
	return won
}

// spawnCallbacks adds the actor that delivers the callback of shot i's
// current incarnation.
func (x *slExplorer) spawnCallbacks(w *slWorld, i int8) {
	x.add(w, slActor{pc: pcCallbackFire, sh: i, gen: w.shots[i].gen, arm: w.shots[i].arms})
}

// rearmTimer is Reset of shot i's timer by retarget or delay, for at: the
// timer's next callback is delivered by a new actor.
func (x *slExplorer) rearmTimer(w *slWorld, i int8, at uint8) {
	sh := &w.shots[i]
	sh.timer, sh.timerAt = tmArmed, at
	sh.arms++
	x.spawnCallbacks(w, i)
}

func (x *slExplorer) add(w *slWorld, a slActor) {
	if int(w.nAct) == slMaxActors {
		panic("slot explorer: too many actors")
	}
	w.actors[w.nAct] = a
	w.nAct++
}

func (x *slExplorer) name(w *slWorld, i int8) string {
	if i == slNone {
		return "nil"
	}
	return fmt.Sprintf("shot(v=%#x)", w.shots[i].v)
}

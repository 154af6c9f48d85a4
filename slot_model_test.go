package circulation

// The model of the pending-slot protocol explored by slot_explore_test.go:
// the shots, the actors, and their steps, which follow trigger.go (arm,
// settle, disarm) and shot.go (kill, run, retire, release) line by line. A
// change to those functions must be made here too.

import "fmt"

// Timer states.
const (
	tmNone    uint8 = iota // not yet handed to the Scheduler
	tmArmed                // pending
	tmFired                // its callback has started
	tmStopped              // Stop returned true
)

type slShot struct {
	v        uint32
	timer    uint8
	dead     bool // shotDead
	claimed  bool // shotClaimed
	refs     int8
	kills    uint8
	recycled uint8
	starts   uint8 // callbacks that passed claim and found the shot alive
}

// Program counters of the actors.
const (
	pcDone uint8 = iota
	pcArmAdvance
	pcArmCheck // c := version(state.Load()) after settle
	pcDisarmAdvance
	pcDisarmSwap
	pcSettleSwap
	pcKillDead
	pcKillStop
	pcKillClaim
	pcRelease      // release, or retire then release
	pcCallbackFire // the timer delivers the callback
	pcCallbackClaim
	pcCallbackDead
	pcExtraDelivery // a misbehaving Scheduler delivers a callback once more
)

type slActor struct {
	pc     uint8
	ret    bool   // inside a settle that is followed by a check of the version
	retire bool   // pcRelease: retire first (live.Add(-1))
	n      int8   // references release drops
	sh     int8   // the shot being worked on
	v      uint32 // arm: its version; disarm: the version it disarms before; settle: the version to check after
}

type slWorld struct {
	ver    uint32 // version(Trigger.state)
	slot   int8   // Trigger.pending
	live   int8   // Trigger.live
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
	misbehave bool
	mutant    string
}

// choices returns the number of ways actor i can take its next step: 0 if
// it cannot, and for the extra delivery, one per shot it can deliver.
func (x *slExplorer) choices(w *slWorld, i int) int {
	a := &w.actors[i]
	switch a.pc {
	case pcDone:
		return 0
	case pcCallbackFire:
		if w.shots[a.sh].timer == tmArmed || x.m.misbehave && w.shots[a.sh].timer == tmStopped {
			return 1
		}
		return 0
	case pcExtraDelivery:
		return int(w.nShots)
	}
	return 1
}

// shot returns shot i for a step that touches it, which must not have been
// recycled.
func (x *slExplorer) shot(w *slWorld, i int8) *slShot {
	sh := &w.shots[i]
	if sh.recycled != 0 {
		x.failf("shot v=%#x is used after it was recycled", sh.v)
	}
	return sh
}

// ret ends the routine the actor is in.
func (x *slExplorer) ret(a *slActor) {
	if a.ret {
		a.pc, a.ret, a.sh = pcArmCheck, false, slNone
		return
	}
	*a = slActor{}
}

// step lets actor i take its next step. Steps that no other actor can
// observe are merged with the one before: newShot, live.Add(1) and
// AfterFunc with arm's CAS (nobody else can reach the shot before settle
// publishes it), and retire's live.Add(-1) with its release (live is only
// read once everyone is done).
func (x *slExplorer) step(w *slWorld, i, c int) bool {
	a := &w.actors[i]
	log := x.log != nil
	switch a.pc {
	case pcArmAdvance, pcDisarmAdvance:
		w.ver = (w.ver + 1) & versionMask
		a.v = w.ver
		if log {
			x.logf("CAS: v=%#x", a.v)
		}
		if a.pc == pcDisarmAdvance {
			a.pc = pcDisarmSwap
			return true
		}
		if int(w.nShots) == slMaxShots {
			panic("slot explorer: too many shots")
		}
		a.sh = int8(w.nShots)
		w.shots[a.sh] = slShot{v: a.v, refs: 2, timer: tmArmed}
		w.nShots++
		w.live++
		x.spawnCallbacks(w, a.sh)
		a.pc, a.ret = pcSettleSwap, true
		if x.m.mutant == "arm does not check the version after settle" {
			a.ret = false
		}
		if log {
			x.logf("; newShot, live.Add(1): %d, AfterFunc", w.live)
		}

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
			x.logf(", not %#x: disarm(%#x)", a.v, c)
		}
		a.v, a.pc = c, pcDisarmSwap

	case pcDisarmSwap:
		old := w.slot
		w.slot = slNone
		if log {
			x.logf("Swap(nil) -> %s", x.name(w, old))
		}
		switch {
		case old == slNone:
			x.ret(a)
		case newer(a.v, x.shot(w, old).v) || x.m.mutant == "disarm kills the current shot":
			a.sh, a.pc = old, pcKillDead
		default:
			// Armed at v or later: it stays, and the version is checked
			// again when settle returns, as in arm.
			a.sh, a.pc = old, pcSettleSwap
			if x.m.mutant != "disarm does not check the version after putting a shot back" {
				a.v, a.ret = w.shots[old].v, true
			}
		}

	case pcSettleSwap:
		old := w.slot
		w.slot = a.sh
		if log {
			x.logf("Swap(%s) -> %s", x.name(w, a.sh), x.name(w, old))
		}
		keepOld := old != slNone && newer(x.shot(w, old).v, w.shots[a.sh].v)
		if x.m.mutant == "settle keeps the older shot" && old != slNone {
			keepOld = !keepOld
		}
		switch {
		case old == slNone:
			x.ret(a)
		case !keepOld:
			a.sh, a.pc = old, pcKillDead
		default:
			a.sh = old // put it back
		}

	case pcKillDead:
		sh := x.shot(w, a.sh)
		sh.dead = true
		sh.kills++
		if log {
			x.logf("kill %s: Or(dead)", x.name(w, a.sh))
		}
		switch {
		case sh.kills > 1:
			x.failf("shot v=%#x is killed twice", sh.v)
		case !newer(w.ver, sh.v):
			x.failf("shot v=%#x is killed while it is the latest arming: its fire is lost", sh.v)
		}
		a.pc = pcKillStop

	case pcKillStop:
		sh := x.shot(w, a.sh)
		stopped := sh.timer == tmArmed
		if stopped {
			sh.timer = tmStopped
		}
		if log {
			x.logf("Stop() -> %v", stopped)
		}
		if stopped {
			a.pc = pcKillClaim
		} else {
			a.n, a.pc = 1, pcRelease
		}

	case pcKillClaim:
		if x.claim(w, a.sh) || x.m.mutant == "kill trusts Stop alone" {
			a.n, a.retire, a.pc = 2, true, pcRelease
		} else {
			a.n, a.pc = 1, pcRelease
		}

	case pcExtraDelivery:
		a.sh = int8(c)
		fallthrough
	case pcCallbackFire:
		sh := x.shot(w, a.sh)
		if sh.timer == tmArmed {
			sh.timer = tmFired
		}
		a.pc = pcCallbackClaim
		if log {
			x.logf("the Scheduler delivers the callback of %s", x.name(w, a.sh))
		}

	case pcCallbackClaim:
		if !x.claim(w, a.sh) {
			*a = slActor{}
			return true
		}
		a.pc = pcCallbackDead

	case pcCallbackDead:
		sh := x.shot(w, a.sh)
		if sh.dead {
			if log {
				x.logf("dead: does not start")
			}
		} else {
			sh.starts++
			if log {
				x.logf("alive: start(%#x)", sh.v)
			}
			if sh.starts > 1 {
				x.failf("the callback of shot v=%#x starts twice", sh.v)
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
		sh := x.shot(w, a.sh)
		sh.refs -= a.n
		if log {
			x.logf("release %s: refs.Add(-%d): %d", x.name(w, a.sh), a.n, sh.refs)
		}
		switch {
		case sh.refs < 0:
			x.failf("shot v=%#x has negative references", sh.v)
		case sh.refs == 0 && !x.m.misbehave: // only RuntimeScheduler recycles
			sh.recycled++
			if log {
				x.logf(": recycled")
			}
		}
		a.retire = false
		x.ret(a)
	}
	return true
}

// claim is shot.claim: it reports whether the caller is the first to
// account for the shot's timer.
func (x *slExplorer) claim(w *slWorld, i int8) bool {
	sh := x.shot(w, i)
	won := !sh.claimed
	sh.claimed = true
	if x.log != nil {
		x.logf("claim() -> %v", won)
	}
	return won
}

// spawnCallbacks adds the actors that deliver shot i's callback: one, or
// two for a Scheduler that may deliver twice.
func (x *slExplorer) spawnCallbacks(w *slWorld, i int8) {
	x.add(w, slActor{pc: pcCallbackFire, sh: i})
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

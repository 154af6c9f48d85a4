package circulation

// An exhaustive explorer of the pending-slot protocol of trigger.go and
// shot.go: arm, settle, disarm, kill, the timer callback (shot.run), retire
// and release. Unlike the state explorer, it cannot call the real code,
// whose steps are atomic operations on a Trigger's fields; slot_model_test.go
// follows it instead, one atomic operation per step (except where merging steps hides nothing, see step):
//
//	arm op     advance the version (the state CAS) to v; newShot; live.Add(1);
//	           AfterFunc; settle(sh); c := version(state.Load()); c != v ? disarm()
//	           or, with a delay on RuntimeScheduler (due at now + 1 or 2 on the
//	           model's clock), rearmPending first:
//	           old := Swap(nil); nil ? (version(state.Load()) != v ? done : arm as above) :
//	           old's == version(state.Load()) ? settle(old), check, done :
//	           retarget: CAS(flags: no claim, not dead, not busy, a delay -> busy),
//	             write v and due; timer later than due ? Stop() && Reset;
//	             CAS(busy off) fails ? Store, Reset; settle(old), check :
//	           Or(dead); Stop() && claim() ? re-arm old for v, settle(old), check :
//	           release(old, 1), then arm as above
//	disarm op  advance the version (Suspend, or Fire reserving); disarm()
//	settle(sh) old := Swap(sh); nil ? return; c := version(state.Load());
//	           old's != c || sh's == c ? kill(old) : settle(old)
//	disarm()   old := Swap(nil); nil ? return; old's != version(state.Load()) ? kill(old) :
//	           settle(old); c := version(state.Load()); c != old's ? disarm()
//	kill(sh)   Or(dead); not busy && Stop() && claim() ? retire(sh, 2) : release(sh, 1)
//	callback   Or(claimed) found claimed or busy ? - :
//	           late and not dead and clock < due ? delay :
//	           (dead ? - : start); retire(sh, 1)
//	delay      CAS(claim -> busy) fails (dead) ? retire : Reset for due;
//	           CAS(busy off) ? done : claimed ? And(^busy), callback again :
//	           (dead) Stop() ? retire : CAS(busy off) ? done : retire
//	retire     live.Add(-1); release(sh, n)
//	release    refs.Add(-n) == 0 ? recycle
//
// A Scheduler that behaves, as RuntimeScheduler does, delivers each
// callback once unless Stop returned true; a misbehaving one (which the
// Trigger must survive, see Scheduler) may deliver a callback after Stop
// returned true, and deliver one callback twice. Shots are recycled, and
// reused by later armings, only with the first.
//
// coalesce is left out: it only reads the slot and the pending shot, and
// the state explorer checks what it relies on (its callback, once due, will
// start the Func), given what this explorer checks: that only a superseded
// shot is ever killed. So is rearmPending's wait for an empty slot while a
// shot is armed: its loads change nothing, and waiting only delays the
// Swap, which the explorer already puts at every point.
//
// Close and Shutdown are the state explorers' (explore_shape_test.go); what
// a closed Trigger changes here (an early callback on a closed Trigger runs
// at once, and delay hurries an arming a Shutdown left pending) and the
// observer's counts of superseded armings are checked by the tests in
// retarget_interleave_test.go, which take the callback's steps one at a
// time, and by the stress tests in retarget_count_test.go.
//
// The arm op is FireAfter, Fire on an idle Trigger, a run that asks to run
// again (exitArm) and abort with a reservation; the disarm op is Suspend and
// Fire during a run. The state protocol itself is checked by the state
// explorer; here only the versions matter.
//
// Time is a small clock that only a timer moves, when it fires, to the
// timer's time if the clock is behind: a timer may come late, never early.
// A timer may fire whenever it is armed, so callbacks come in any order.
//
// It checks, after every step, that no shot is killed twice, that a shot is
// killed only once a later version is published (so its callback would be
// stale and killing it loses no fire), that live and the reference counts
// never go negative, that a shot loses its last reference only once killed,
// that no one touches a shot through a reference to an incarnation that has
// been recycled, and that a callback passes claim at most once per
// incarnation; that a callback starts the Func only at or after its shot's
// due time, and with the due time the arming of the shot's version asked for
// (a re-targeted shot is never started early, nor for the arming it was
// re-targeted from); and that an armed timer of a live shot nobody holds
// busy never comes after the shot's due time (a FireAfter due sooner than
// the timer it keeps is not run late). When everyone has finished and every
// timer has fired or been stopped, it checks that the slot holds the newest
// arming's shot, alive and started once, if the latest operation armed one
// and is empty otherwise, that every superseded shot was killed exactly
// once and recycled, and that live is zero.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const (
	slMaxShots  = 5
	slMaxActors = 10
	slNone      = -1 // an empty slot, or no shot
)

// slKey is a world packed into a few words, canonical up to the order of
// the actors (see exKey).
type slKey struct {
	hdr    uint64
	dues   uint64
	shots  [slMaxShots]uint64
	actors [slMaxActors]uint64
}

// canon sorts w's actors (and names, if not nil, along with them), drops
// the finished ones and returns w's key.
func (x *slExplorer) canon(w *slWorld, names []string) slKey {
	var k slKey
	n := int(w.nAct)
	for i := range n {
		a := &w.actors[i]
		p := uint64(a.pc) | uint64(a.n)<<5 | uint64(a.sh+1)<<7 | uint64(x.off8(a.v))<<10 | uint64(a.gen)<<20
		if a.pc == pcSettleCheck {
			p |= uint64(x.off8(a.mine)) << 28
		}
		if a.ret {
			p |= 1 << 18
		}
		if a.retire {
			p |= 1 << 19
		}
		if a.reuse {
			p |= 1 << 36
		}
		p |= uint64(a.at)<<37 | uint64(a.arm)<<41
		if a.pc == pcDone {
			p = 0
		}
		k.actors[i] = p - 1 // finished actors sort last
	}
	// Insertion sort, by program counter first: operations before
	// callbacks, so that the traces of the depth-first search read as
	// operations first, timers firing later.
	for i := 1; i < n && !x.plain; i++ {
		for j := i; j > 0 && k.actors[j] < k.actors[j-1]; j-- {
			k.actors[j], k.actors[j-1] = k.actors[j-1], k.actors[j]
			w.actors[j], w.actors[j-1] = w.actors[j-1], w.actors[j]
			if names != nil {
				names[j], names[j-1] = names[j-1], names[j]
			}
		}
	}
	for n > 0 && k.actors[n-1] == 1<<64-1 && !x.plain {
		k.actors[n-1] = 0
		n--
	}
	w.nAct = uint8(n)
	for i := range int(w.nShots) {
		sh := &w.shots[i]
		p := uint64(x.off8(sh.v)) | uint64(sh.timer)<<8 | uint64(uint8(sh.refs)&7)<<10 | uint64(sh.kills)<<13 |
			uint64(sh.starts)<<15 | uint64(sh.gen)<<20 | uint64(sh.at)<<32 | uint64(sh.timerAt)<<36 | uint64(sh.arms)<<40
		if sh.dead {
			p |= 1 << 17
		}
		if sh.claimed {
			p |= 1 << 18
		}
		if sh.spare {
			p |= 1 << 19
		}
		if sh.busy {
			p |= 1 << 28
		}
		if sh.late {
			p |= 1 << 29
		}
		if sh.nodelay {
			p |= 1 << 30
		}
		k.shots[i] = p
		if !sh.spare && sh.timer == tmArmed && !sh.dead && !sh.busy && sh.timerAt > sh.at {
			x.failf("the timer of shot v=%#x comes at %d, after its due time %d", sh.v, sh.timerAt, sh.at)
		}
	}
	k.hdr = uint64(x.off8(w.ver)) | uint64(w.slot+1)<<8 | uint64(w.spare+1)<<11 | uint64(uint8(w.live)&7)<<14 |
		uint64(w.nShots)<<17 | uint64(w.nAct)<<20 | uint64(w.now)<<24
	if w.armed {
		k.hdr |= 1 << 28
	}
	for i, d := range w.dues {
		k.dues |= uint64(d&15) << (4 * i)
	}
	return k
}

// off8 is v's distance from the base version, which must fit in 8 bits.
func (x *slExplorer) off8(v uint32) uint32 {
	o := (v - x.base) & versionMask
	if o > 0xff {
		panic(fmt.Sprintf("slot explorer: version %#x too far from the base %#x", v, x.base))
	}
	return o
}

type slExplorer struct {
	exWalk[slWorld, slKey]
	m    slModel
	base uint32 // versions are packed as offsets from base
	bad  string
	log  *strings.Builder // replaying a failing path

	// plain turns the symmetry reduction off: actors keep their places.
	// It exists to test that the reduction changes no count.
	plain bool
}

func (x *slExplorer) failf(format string, args ...any) {
	if x.bad == "" {
		x.bad = fmt.Sprintf(format, args...)
	}
}

// logf describes the step being replayed. Call sites check x.log first, so
// that exploring does not pay for formatting.
func (x *slExplorer) logf(format string, args ...any) {
	fmt.Fprintf(x.log, format, args...)
}

// final checks a world where no actor can move.
func (x *slExplorer) final(w *slWorld) {
	if w.live != 0 {
		x.failf("at rest, live is %d", w.live)
	}
	if w.slot != slNone && w.shots[w.slot].spare {
		x.failf("at rest, the slot holds %s, which was recycled", x.name(w, w.slot))
		return
	}
	newest := int8(slNone)
	for i := range int8(w.nShots) {
		sh := &w.shots[i]
		switch {
		case sh.spare: // recycled: release checked it
		case sh.v == w.ver:
			newest = i
			if sh.kills != 0 || sh.refs != 1 || w.slot != i {
				x.failf("at rest, the newest shot v=%#x has kills=%d refs=%d and the slot holds %s", sh.v, sh.kills, sh.refs, x.name(w, w.slot))
			}
			if sh.starts != 1 {
				x.failf("at rest, the newest shot v=%#x started %d times: its fire is lost", sh.v, sh.starts)
			}
		case sh.kills != 1 || sh.refs != 0 || !x.m.misbehave:
			x.failf("at rest, the superseded shot v=%#x has kills=%d refs=%d and was not recycled", sh.v, sh.kills, sh.refs)
		}
	}
	if newest == slNone && w.slot != slNone {
		x.failf("at rest, the slot holds %s, but the latest operation armed nothing", x.name(w, w.slot))
	}
	if newest == slNone && w.armed {
		x.failf("at rest, no shot holds v=%#x, which the latest operation armed", w.ver)
	}
}

func (x *slExplorer) actors(w *slWorld) int  { return int(w.nAct) }
func (x *slExplorer) after(w *slWorld) slKey { return x.canon(w, nil) }
func (x *slExplorer) failed() bool           { return x.bad != "" }

// slConfig is a starting world with named actors.
type slConfig struct {
	name  string
	w     slWorld
	names []string
}

// slConfigs returns the starting worlds: an empty slot or one holding a
// pending shot of v0, with every combination of up to maxOps arm and disarm
// operations that makes no more than maxShots shots.
func slConfigs(v0 uint32, maxOps, maxShots int, m slModel) []slConfig {
	var cfgs []slConfig
	for _, pending := range []bool{false, true} {
		for arms := 0; arms <= maxOps; arms++ {
			for disarms := 0; arms+disarms <= maxOps; disarms++ {
				if arms+disarms == 0 || arms+btoi(pending) > maxShots {
					continue
				}
				x := &slExplorer{m: m}
				w := slWorld{ver: v0, slot: slNone, spare: slNone}
				var names []string
				name := "empty slot"
				if pending {
					name = fmt.Sprintf("slot holds shot(v=%#x)", v0)
					w.shots[0] = slShot{v: v0, timer: tmArmed, refs: 2}
					w.nShots, w.slot, w.live, w.armed = 1, 0, 1, true
					x.spawnCallbacks(&w, 0)
					names = append(names, fmt.Sprintf("callback of v=%#x", v0))
				}
				for k := range arms + disarms {
					pc, op := pcArmAdvance, "arm op"
					if k >= arms {
						pc, op = pcDisarmAdvance, "disarm op"
					}
					x.add(&w, slActor{pc: pc, sh: slNone})
					names = append(names, op)
				}
				name += fmt.Sprintf(" + %d arm, %d disarm", arms, disarms)
				if m.misbehave {
					x.add(&w, slActor{pc: pcExtraDelivery, sh: slNone})
					names = append(names, "extra delivery")
				}
				cfgs = append(cfgs, slConfig{name, w, names})
			}
		}
	}
	return cfgs
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// slExplore explores every configuration and returns the totals and, at the
// first violation, a trace.
func slExplore(m slModel, cfgs []slConfig) (exStats, string) {
	return slExploreWith(m, cfgs, false)
}

func slExploreWith(m slModel, cfgs []slConfig, plain bool) (exStats, string) {
	var st exStats
	for _, cfg := range cfgs {
		x := &slExplorer{m: m, base: cfg.w.ver - 2, plain: plain}
		x.memo = make(map[slKey]exCount)
		w := cfg.w
		n := x.visit(x, &w, x.canon(&w, nil))
		st.configs++
		st.states += uint64(len(x.memo))
		st.edges += x.edges
		st.interleavings = st.interleavings.add(n)
		if x.bad != "" {
			return st, x.trace(cfg)
		}
	}
	return st, ""
}

func (x *slExplorer) trace(cfg slConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "violation: %s\nstart %q, v=%#x\n", x.bad, cfg.name, cfg.w.ver)
	names := make([]string, slMaxActors)
	for i, n := range cfg.names {
		names[i] = fmt.Sprintf("A%d %s", i, n)
	}
	next := len(cfg.names)
	w := cfg.w
	x.canon(&w, names)
	for k, p := range x.path {
		var line strings.Builder
		x.log = &line
		n := w.nAct
		x.step(&w, p.i, p.c)
		for j := n; j < w.nAct; j++ {
			names[j] = fmt.Sprintf("A%d callback of v=%#x", next, w.shots[w.actors[j].sh].v)
			next++
		}
		fmt.Fprintf(&b, "%4d  %-26s  %s\n", k+1, names[p.i], line.String())
		x.canon(&w, names)
	}
	x.log = nil
	return b.String()
}

// slRun is one exploration of the slot protocol.
type slRun struct {
	m        slModel
	v0       uint32
	maxOps   int
	maxShots int
}

// slOps and slShots are the default depth of the slot's exploration on
// RuntimeScheduler with a callback delayed once at most: up to 3
// operations and 2 shots, the depth at which every mutant of slMutants
// shows (TestExploreSlotMutants explores them there).
const slOps, slShots = 3, 2

// slRuns returns the explorations to run. By default: up to slOps
// operations and slShots shots on RuntimeScheduler, up to 2 operations and
// 3 shots with callbacks delayed twice and on a misbehaving Scheduler,
// all with the versions wrapping (seconds). "long" (exploreDepth) allows
// 3 shots with up to 3 operations (about a minute); with -short or under
// the race detector: smaller. "full": up to 3 operations, from both bases,
// with up to 4 shots on RuntimeScheduler and 3 on the misbehaving
// Scheduler (4 take more than 20 GB there); this takes minutes and a few
// gigabytes.
func slRuns() []slRun {
	const wrap = versionMask - 1
	good, good2, bad := slModel{delays: 1}, slModel{delays: 2}, slModel{misbehave: true}
	switch exploreDepth() {
	case "full":
		var runs []slRun
		for _, v0 := range exBases {
			runs = append(runs, slRun{good2, v0, 3, 4}, slRun{bad, v0, 3, 3})
		}
		return runs
	case "short":
		return []slRun{{good2, wrap, 2, 3}, {bad, wrap, 1, 3}}
	case "long":
		return []slRun{{good, wrap, 3, 3}, {good2, wrap, 2, 3}, {bad, wrap, 2, 3}}
	}
	return []slRun{{good, wrap, slOps, slShots}, {good2, wrap, 2, 3}, {bad, wrap, 2, 3}}
}

func TestExploreSlotProtocol(t *testing.T) {
	for _, r := range slRuns() {
		sched := fmt.Sprintf("RuntimeScheduler delays<=%d", r.m.delays)
		if r.m.misbehave {
			sched = "misbehaving Scheduler"
		}
		t.Run(fmt.Sprintf("%s/v0=%#x", strings.ReplaceAll(sched, " ", "_"), r.v0), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			st, trace := slExplore(r.m, slConfigs(r.v0, r.maxOps, r.maxShots, r.m))
			if trace != "" {
				t.Fatalf("the pending-slot protocol breaks:\n%s", trace)
			}
			t.Logf("%s, %d configurations (up to %d operations, %d shots): %d states, %d steps, %v complete interleavings, in %v",
				sched, st.configs, r.maxOps, r.maxShots, st.states, st.edges, st.interleavings, time.Since(start).Round(time.Millisecond))
		})
	}
}

// slMutants are mistakes in the slot protocol. Each must make the explorer
// fail with the violation named in want. The first is trigger.go's disarm
// as it was before the explorer found its race.
var slMutants = []struct {
	mutant    string
	misbehave bool
	want      string
	delays    int // 0: 1, with up to slOps operations; 2: with up to 2
}{
	{"disarm does not check the version after putting a shot back", false, "the superseded shot", 0},
	{"arm does not check the version after settle", false, "the superseded shot", 0},
	{"settle keeps the stale shot", false, "killed while it is the latest arming", 0},
	{"disarm kills the current shot", false, "killed while it is the latest arming", 0},
	{"kill trusts Stop alone", true, "negative", 0},
	{"release recycles one reference early", false, "which was recycled", 0},
	{"rearmPending re-arms a shot whose timer did not stop", false, "live is negative", 0},
	{"rearmPending skips a current arming", false, "which the latest operation armed", 0},
	{"retarget keeps a timer that comes after the new due time", false, "after its due time", 2},
	{"retarget does not re-arm the timer that came meanwhile", false, "at rest, live is", 0},
	{"a callback ignores busy", false, "starts twice", 0},
	{"an early callback starts the Func", false, "before its due time", 0},
	{"cancel stops a busy shot's timer", false, "live is negative", 0},
	{"delay retires a killed shot whose callback is on its way", false, "used after it was recycled", 0},
}

func TestExploreSlotMutants(t *testing.T) {
	for _, mu := range slMutants {
		t.Run(strings.ReplaceAll(mu.mutant, " ", "_"), func(t *testing.T) {
			t.Parallel()
			m := slModel{misbehave: mu.misbehave, mutant: mu.mutant, delays: 1}
			ops := slOps
			if mu.delays == 2 {
				m.delays, ops = 2, 2
			}
			_, trace := slExplore(m, slConfigs(versionMask-1, ops, slShots, m))
			switch {
			case trace == "":
				t.Fatalf("the explorer accepts the mutant %q", mu.mutant)
			case !strings.Contains(trace, mu.want):
				t.Errorf("want a violation containing %q, got\n%s", mu.want, trace)
			}
			t.Logf("caught:\n%s", trace)
		})
	}
}

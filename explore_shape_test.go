package circulation

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The exploration of FireWithin, Close and Shutdown, with the calls they
// meet, from every situation of exSituations and two more, with up to two
// calls: every interleaving of their loads and compare-and-swaps, of the
// timers they arm and of the runs of f, as explore_test.go explores Fire,
// FireAfter and Suspend. Every arming here has a place step of its own, in
// two: settle puts its shot in the pending slot, then place loads the
// state, and reasserts the arming's time if a FireWithin superseded it
// before it got there, or hurries it if Shutdown closed the Trigger
// meanwhile. Due times are small numbers on one clock (see dueNow): keep
// keeps the pending arming when its timer is in the slot, unclaimed and
// due no later; timers fire in any order, whatever their due times.
//
// The checks of explore_test.go apply, with these on top:
//   - the closed bit is never cleared, and no Fire, FireAfter or FireWithin
//     publishes once it is set;
//   - once Close or Shutdown has published, f never starts for a version
//     armed after it (the hurried arming is its own);
//   - no run's answer arms a timer on a closed Trigger;
//   - a run that only FireWithin calls came during competes (exitCompete,
//     then a reassert), one that a Fire, FireAfter or Suspend came during
//     is ignored, and one that nothing came during arms its own timer;
//   - the within bit is never set with a reservation;
//   - no lost fire: a FireWithin, kept or armed, is a fire, and Shutdown
//     runs the latest fire made before it;
//   - earliest wins: when the latest arming's timer enters, it is due no
//     later than any FireWithin that returned since the latest Fire,
//     FireAfter, Suspend or Close asked for (see met), except where
//     FireWithin's doc says the later time may win: a reassert's arming
//     superseded before it could be compared;
//   - no livelock: no interleaving goes on without end (see visit).
//
// Two reductions keep it small. The callbacks of stale timers end at once
// (see dropStale). And a shot is in the slot exactly from its settle on:
// a racing call's disarm may take it out for a moment, and puts it back
// with place, which does what the arming's own place does (the slot
// explorer checks those moves).

// exShapeSituations add the states FireWithin leaves to exSituations.
var exShapeSituations = append([]exSituation{
	// FireWithin published v0; its timer is pending.
	{name: "FireWithin's timer pending", s: withinBit, timers: []int{0}, last: armFire},
	// f runs for v0-1; FireWithin published v0 and armed its timer.
	{name: "running, FireWithin during it", s: runningBit | withinBit, timers: []int{0}, run: -1, wsup: true, last: armFire},
}, exSituations...)

// exShapeOps are the operations of the shape exploration.
var exShapeOps = []exOp{
	{"Fire", phFireLoad, 0},
	{"FireAfter(d)", phFireAfterLoad, 0},
	{"Suspend", phSuspendLoad, 0},
	{"FireWithin(sooner)", phWithinLoad, 1},
	{"FireWithin(later)", phWithinLoad, 3},
	{"Close", phCloseLoad, 0},
	{"Shutdown", phShutdownLoad, 0},
}

// exShapeConfigs returns the shape configurations: up to two operations,
// at least one of them FireWithin, Close or Shutdown.
func exShapeConfigs(v0 uint32, maxActors int, ok, panics uint8) []exConfig {
	var cfgs []exConfig
	for _, c := range exConfigsOf(exShapeSituations, exShapeOps, 2, true, v0, maxActors, ok, panics) {
		for _, a := range c.w.actors[:c.w.n] {
			if a.ph == phWithinLoad || a.ph == phCloseLoad || a.ph == phShutdownLoad || within(c.w.s) {
				cfgs = append(cfgs, c)
				break
			}
		}
	}
	return cfgs
}

// exShapeBudget is exBudget for the shape exploration: configurations of
// up to two actors (a situation's and the operations'), f returning true
// once and panicking once in each interleaving (4.3 million states for
// each starting version, about 8 seconds), by default and under "long"
// alike: the mutant "reassert ignores the within bit" shows only with
// both. Under the race detector or -short, f does neither (44 thousand
// states, under a second). "full" starts up to three actors (tens of
// minutes).
func exShapeBudget() (maxActors int, okBudget, panicBudget uint8) {
	switch exploreDepth() {
	case "full":
		return 3, 1, 1
	case "short":
		return 2, 0, 0
	}
	return 2, 1, 1
}

func TestExploreShape(t *testing.T) {
	maxActors, ok, panics := exShapeBudget()
	for _, v0 := range exBases {
		t.Run(fmt.Sprintf("v0=%#x", v0), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			cfgs := exShapeConfigs(v0, maxActors, ok, panics)
			st, trace := explore(stateGo, exSerial(v0)-2, cfgs)
			if trace != "" {
				t.Fatalf("the state protocol breaks:\n%s", trace)
			}
			t.Logf("%d configurations (%d situations, up to %d actors at the start, f true ≤%d, panics ≤%d): %d states, %d steps, %v complete interleavings, in %v",
				st.configs, len(exShapeSituations), maxActors, ok, panics, st.states, st.edges, st.interleavings, time.Since(start).Round(time.Millisecond))
		})
	}
}

// dropStale ends the callbacks of stale timers at once, before they
// claim their shots. Without storms a version that is not the state's
// never comes back, so such a callback can only find itself stale and
// return: its steps change nothing but how a FireWithin, Fire or Shutdown
// that loaded the state before the timer went stale finds the pending
// slot, and whatever it finds there, its compare-and-swap with that state
// fails and it loads again. Letting those callbacks step multiplies the
// worlds by the orders in which they do nothing, tenfold with two calls
// and more than that with three. The drop checks that enter would indeed
// find the callback stale; explore_test.go explores stale callbacks step
// by step, across the wrap and storms.
func (x *explorer) dropStale(w *exWorld) {
	for i := range w.actors[:w.n] {
		a := &w.actors[i]
		switch a.ph {
		case phClaim, phStartLoad, phStartCAS:
			if v := uint32(a.sv) & versionMask; v != version(w.s) {
				if _, e := x.t.enter(w.s, v); e != entryStale {
					x.failf("the timer of v=%#x is stale, yet enter lets it in", a.sv)
				}
				x.done(a)
			}
		}
	}
}

// exShapeMutants are plausible mistakes in the transitions and the control
// flow of FireWithin, Close and Shutdown. Each must make the shape
// exploration fail, with the violation named in want.
var exShapeMutants = []struct {
	name string
	want string // in the violation
	t    transitions
	flow string // the mistake in the control flow, if t is stateGo
	only string // explore only the configurations whose name has this, to be quick
	slow bool   // takes seconds (its violation needs a panic and a long path): not under -race or -short
}{
	{
		name: "FireAfter ignores the closed bit",
		want: "armed after the Trigger closed",
		t:    stateGo, flow: "FireAfter ignores the closed bit", only: "FireAfter(d) + Close",
	},
	{
		// A FireWithin keeps a pending arming due later than it asked.
		name: "keep compares due times the wrong way",
		want: "earliest wins",
		t:    stateGo, flow: "keep compares due times the wrong way",
	},
	{
		// The livelock the shotAgain flag prevents: two reasserts
		// supersede each other's armings for ever.
		name: "a reassert's arming reasserts again",
		want: "livelock",
		t:    stateGo, flow: "a reassert's arming reasserts again",
	},
	{
		// The race TestFireWithinRaceWithArmingOnItsWay shows.
		name: "FireWithin does not look at the arming it superseded",
		want: "earliest wins",
		t:    stateGo, flow: "FireWithin does not look at the arming it superseded",
	},
	{
		// A reassert made after a FireAfter superseded everything
		// brings a superseded time back.
		name: "reassert ignores the within bit",
		want: "earliest wins",
		t:    stateGo, flow: "reassert ignores the within bit", only: "idle + Fire + FireWithin(sooner)",
		slow: true,
	},
	{
		// A run starts and ends between keep's look and its check of
		// the state: only the second look, which finds the shot
		// claimed, tells.
		name: "keep does not look again after its check",
		want: "lost fire",
		t:    stateGo, flow: "keep does not look again after its check",
	},
	{
		name: "shutdown loses a reservation",
		want: "lost fire",
		only: "Shutdown",
		t: with(func(t *transitions) {
			t.shutdown = func(s uint32, hurry bool) uint32 { return shutdown(s, hurry) &^ reservedBit }
		}),
	},
	{
		name: "closeNow does not close",
		want: "the closed bit was cleared",
		t: with(func(t *transitions) {
			t.closeNow = func(s uint32) uint32 { return suspend(s) }
		}),
	},
	{
		name: "advanceWithin supersedes the run",
		want: "its answer was ignored",
		t: with(func(t *transitions) {
			t.advanceWithin = func(s uint32) uint32 { return advanceWithin(s) | (s&runningBit)>>2 }
		}),
	},
	{
		name: "finish ignores the within bit",
		want: "its answer armed a timer without competing",
		t: with(func(t *transitions) {
			t.finish = func(s, _ uint32, ok bool) (uint32, exit) { return finish(s&^withinBit, ok) }
		}),
	},
	{
		name: "finish acts on the answer on a closed Trigger",
		want: "armed a timer on a closed Trigger",
		t: with(func(t *transitions) {
			t.finish = func(s, _ uint32, ok bool) (uint32, exit) {
				n, e := finish(s&^closedBit, ok)
				return n | s&closedBit, e
			}
		}),
	},
	{
		name: "enter keeps the within bit",
		want: "competes with a FireWithin's arming",
		t: with(func(t *transitions) {
			t.enter = func(s, v uint32) (uint32, entry) {
				n, e := enter(s, v)
				return n | s&withinBit, e
			}
		}),
	},
	{
		name: "shutdown does not close",
		want: "the closed bit was cleared",
		t: with(func(t *transitions) {
			t.shutdown = func(s uint32, hurry bool) uint32 { return shutdown(s, hurry) &^ closedBit }
		}),
	},
}

// TestExploreShapeMutants runs the shape exploration on each mutant, from
// the first starting version and, if that finds nothing, the second.
func TestExploreShapeMutants(t *testing.T) {
	const maxActors, ok, panics = 2, 1, 1
	for _, m := range exShapeMutants {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			if m.slow && (testing.Short() || raceEnabled) {
				t.Skip("slow; runs without -race and -short")
			}
			var found []string
			for _, v0 := range exBases {
				if len(found) > 0 {
					break // one starting version is enough, and quicker
				}
				var cfgs []exConfig
				for _, c := range exShapeConfigs(v0, maxActors, ok, panics) {
					if strings.Contains(c.name, m.only) {
						cfgs = append(cfgs, c)
					}
				}
				if _, trace := exploreWith(m.t, m.flow, exSerial(v0)-2, cfgs, false); trace != "" {
					found = append(found, fmt.Sprintf("from v0=%#x, %s", v0, trace))
				}
			}
			if len(found) == 0 {
				t.Fatalf("the shape exploration accepts the mutant %q", m.name)
			}
			for _, trace := range found {
				if !strings.Contains(trace, m.want) {
					t.Errorf("want a violation containing %q, got\n%s", m.want, trace)
				}
			}
			t.Logf("caught; trace:\n%s", found[0])
		})
	}
}

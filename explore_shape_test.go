package circulation

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// The exploration of FireWithin, Close and Shutdown (and the place step of
// every arming, which may reassert a superseded FireWithin arming's time
// or hurry an arming made while Shutdown closed the Trigger), with the
// calls they meet. Due times are not modelled: where FireWithin looks for
// a pending arming due no later, or Shutdown for one to hurry, the
// explorer lets it find one, or not, whenever an unclaimed timer of the
// current version exists, since the shot may be out of the slot, or due
// later. The checks of explore_test.go apply, with these on top:
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
//     runs the latest fire made before it.

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

// TestExploreShape does not finish yet: from some configurations, even of
// two actors, the exploration finds no end (the serials grow, so no world
// repeats, yet no interleaving completes within minutes). Whether that is
// a livelock of the protocol or of the model is not known; it runs only
// with CIRCULATION_EXPLORE=shape until that is found out. Before the
// search stalls it found two defects, both fixed: a reservation made by
// FireWithin's timer during a run left the run unsuperseded, and two
// reasserts could supersede each other's armings for ever.
func TestExploreShape(t *testing.T) {
	if os.Getenv("CIRCULATION_EXPLORE") != "shape" {
		t.Skip("does not finish yet; set CIRCULATION_EXPLORE=shape")
	}
	maxActors, ok, panics := exBudget()
	maxActors = 2
	for _, v0 := range exBases {
		t.Run(fmt.Sprintf("v0=%#x", v0), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			cfgs := exShapeConfigs(v0, maxActors, ok, panics)
			st, trace := explore(stateGo, exSerial(v0)-2, cfgs)
			if trace != "" {
				t.Fatalf("the state protocol breaks:\n%s", trace)
			}
			t.Logf("%d configurations, up to %d actors at the start: %d states, %d steps, %v complete interleavings, in %v",
				st.configs, maxActors, st.states, st.edges, st.interleavings, time.Since(start).Round(time.Millisecond))
		})
	}
}

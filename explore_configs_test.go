package circulation

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
)

// exSituation is a moment in a Trigger's life at which the explored
// operations begin: the state word, the timers and the run already in flight,
// and what the checks must know of the past. Each is reachable: the comment
// says how.
type exSituation struct {
	name   string
	s      uint32 // flags; the version is v0
	timers []int  // pending timers, as version offsets from v0 (0 current, -1 stale)
	now    bool   // the timer of v0 was armed with no delay
	run    int    // 0: no run in flight; 1: f runs for v0; -1: f runs for v0-1
	wsup   bool   // the run for v0-1 was superseded by a FireWithin only
	last   armKind
	served bool
}

var exSituations = []exSituation{
	// Bind, or everything done.
	{name: "idle"},
	// FireAfter(d) published v0; its timer is pending.
	{name: "timer pending", timers: []int{0}, last: armFire},
	// Fire published v0; its timer, armed with no delay, is pending.
	{name: "no-delay timer pending", timers: []int{0}, now: true, last: armFire},
	// Suspend published v0 while the timer of v0-1 was firing.
	{name: "stale timer", timers: []int{-1}, last: armSuspend},
	// FireAfter published v0-1, then v0; both timers are firing.
	{name: "stale and current timers", timers: []int{-1, 0}, last: armFire},
	// The timer of v0 started f.
	{name: "running", s: runningBit, run: 1, last: armFire, served: true},
	// ... and a timer of v0-1, superseded by v0, is firing late.
	{name: "running, stale timer", s: runningBit, timers: []int{-1}, run: 1, last: armFire, served: true},
	// f runs for v0-1; Fire reserved one more run under v0.
	{name: "running, fired", s: runningBit | reservedBit | supersededBit, run: -1, last: armFire},
	// f runs for v0-1; FireAfter published v0 and armed its timer.
	{name: "running, fired after", s: runningBit | supersededBit, timers: []int{0}, run: -1, last: armFire},
	// f runs for v0-1; Suspend published v0 and cancelled its context.
	{name: "running, suspended", s: runningBit | supersededBit | canceledBit, run: -1, last: armSuspend},
}

// exOp is an operation a configuration adds to a situation.
type exOp struct {
	name string
	ph   exPhase
	due  uint8 // FireWithin's time (see dueNow)
}

// exOps are the operations a configuration adds to a situation.
var exOps = []exOp{
	{"Fire", phFireLoad, 0},
	{"FireAfter(d)", phFireAfterLoad, 0},
	{"Suspend", phSuspendLoad, 0},
	{"storm", phStormLoad, 0},
	{"storm ending in Suspend", phSStormLoad, 0},
}

// exStorm reports whether op is a storm: a configuration has one at most.
func exStorm(op exOp) bool { return op.ph == phStormLoad || op.ph == phSStormLoad }

// exConfigs returns every situation combined with every multiset of up to
// three operations, as long as they start no more than maxActors actors
// together, with the version starting at v0 and f allowed to return true
// okBudget times and to panic panicBudget times in each interleaving.
func exConfigs(v0 uint32, maxActors int, okBudget, panicBudget uint8) []exConfig {
	return exConfigsOf(exSituations, exOps, 3, false, v0, maxActors, okBudget, panicBudget)
}

// exConfigsOf is exConfigs for the given situations and operations, with
// up to maxOps operations; shape marks configurations that call
// FireWithin, Close or Shutdown.
func exConfigsOf(sits []exSituation, exOps []exOp, maxOps int, shape bool, v0 uint32, maxActors int, okBudget, panicBudget uint8) []exConfig {
	// Serials start 1<<32 above v0: the same version, and room below.
	at := func(d int) uint64 { return exSerial(v0) + uint64(int64(d)) }
	var multisets [][]int
	var gen func(from int, cur []int)
	gen = func(from int, cur []int) {
		multisets = append(multisets, append([]int(nil), cur...))
		if len(cur) == maxOps {
			return
		}
		storms := 0
		for _, k := range cur {
			if exStorm(exOps[k]) {
				storms++
			}
		}
		for k := from; k < len(exOps); k++ {
			if exStorm(exOps[k]) && storms > 0 {
				continue
			}
			gen(k, append(cur, k))
		}
	}
	gen(0, nil)

	var cfgs []exConfig
	for _, sit := range sits {
		for _, ops := range multisets {
			n := len(sit.timers) + len(ops)
			if sit.run != 0 {
				n++
			}
			if n == 0 || n > maxActors || n == maxActors && slices.ContainsFunc(ops, func(k int) bool { return exStorm(exOps[k]) }) {
				continue // a storm comes with one actor fewer: it stands for a great many
			}
			w := exWorld{
				s: sit.s | v0, okLeft: okBudget, panicLeft: panicBudget,
				last: sit.last, lastV: at(0), served: sit.served, ser: at(0),
			}
			if sit.last == armNone {
				w.lastV = 0
			}
			var names []string
			add := func(a exActor, name string) {
				w.actors[w.n] = a
				w.n++
				names = append(names, name)
			}
			if sit.run != 0 {
				v := at(min(sit.run, 0))
				susp := sit.run < 0 && sit.last == armSuspend
				sup := sit.run < 0 && !sit.wsup
				add(exActor{ph: phInF, sv: v, sup: sup, wsup: sit.wsup, susp: susp, can: susp}, fmt.Sprintf("loop, in f for v=%#x", v))
				w.ran, w.lastRun, w.cur = true, v, v
			}
			for _, d := range sit.timers {
				now := d == 0 && sit.now
				add(exActor{ph: phClaim, sv: at(d), now: now, due: answerDue(now)}, fmt.Sprintf("timer v=%#x", at(d)))
			}
			name := sit.name
			for _, k := range ops {
				add(exActor{ph: exOps[k].ph, due: exOps[k].due}, exOps[k].name)
				name += " + " + exOps[k].name
			}
			cfgs = append(cfgs, exConfig{name: name, w: w, names: names, shape: shape})
		}
	}
	// Small configurations first: a mistake shows in the smallest one.
	slices.SortStableFunc(cfgs, func(a, b exConfig) int { return int(a.w.n) - int(b.w.n) })
	return cfgs
}

// exBases are the versions the exploration starts at: Bind's, and one that
// makes the versions wrap from 0x0fffffff to 0 in the middle of the runs.
var exBases = []uint32{0, versionMask - 1}

// exSerial is the serial the exploration gives version v0 at its start.
func exSerial(v0 uint32) uint64 { return 1<<32 + uint64(v0) }

// exploreDepth returns how deep the explorers go, as CIRCULATION_EXPLORE
// says: "full" explores everything the configurations can build (tens of
// minutes, and gigabytes of memory); "long", which ./check.sh -long sets,
// goes as deep as the explorers go in about a minute each; by default they
// go as deep as it takes to catch every known mutant, which the mutant
// tests check at that depth. With -short, or under the race detector,
// which slows the explorers sevenfold and has nothing to find in them
// (they run on one goroutine), "short" unless CIRCULATION_EXPLORE is
// "full".
func exploreDepth() string {
	switch env := os.Getenv("CIRCULATION_EXPLORE"); {
	case env == "full":
		return "full"
	case testing.Short() || raceEnabled:
		return "short"
	case env == "long":
		return "long"
	}
	return "default"
}

// exBudget returns the size of the exploration: how many actors a
// configuration starts at most, and how often f may return true and panic
// in one interleaving.
//
// By default, and with -short or under the race detector, configurations
// start up to 3 actors, in which every mutant of exMutants shows (about a
// second). "long" starts up to 4, 3 with a storm (about 40 seconds from
// each starting version); "full" up to 5 actors (4 with a storm), and f
// returning true twice (many minutes, and gigabytes of memory).
func exBudget() (maxActors int, okBudget, panicBudget uint8) {
	switch exploreDepth() {
	case "full":
		return 5, 2, 1
	case "long":
		return 4, 1, 1
	}
	return 3, 1, 1
}

func TestExploreStateProtocol(t *testing.T) {
	maxActors, ok, panics := exBudget()
	for _, v0 := range exBases {
		t.Run(fmt.Sprintf("v0=%#x", v0), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			cfgs := exConfigs(v0, maxActors, ok, panics)
			st, trace := explore(stateGo, exSerial(v0)-2, cfgs)
			if trace != "" {
				t.Fatalf("the state protocol breaks:\n%s", trace)
			}
			t.Logf("%d configurations (%d situations, up to %d actors at the start, f true ≤%d, panics ≤%d): %d states, %d steps, %v complete interleavings, in %v",
				st.configs, len(exSituations), maxActors, ok, panics, st.states, st.edges, st.interleavings, time.Since(start).Round(time.Millisecond))
		})
	}
}

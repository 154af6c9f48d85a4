package circulation

// An exhaustive explorer of the state protocol. Stress tests sample
// interleavings; this one enumerates all of them for small configurations,
// calling the same state.go functions the Trigger calls (through the
// transitions table in explore_actors_test.go), so the model cannot drift
// from the code.
//
// A world is the Trigger's state word, the goroutines (actors) at their next
// step, and the little of the past the checks need. The explorer walks every
// interleaving of the actors' atomic steps depth first, remembering every
// world it has finished exploring: a world reached again by another
// interleaving is not explored twice, but its count of complete
// interleavings is added again, so the count printed is the number of
// distinct complete executions the exploration covers. Worlds that differ
// only in which actor is which are remembered as one (see exKey).
//
// An interleaving that comes back to a world it has been in, or that goes
// on for exMaxDepth steps (its versions moving on, so that no world
// repeats), is a livelock.
//
// When a check fails, the explorer searches the failing configuration again
// breadth first and prints a shortest failing interleaving, step by step,
// with the state word after each step in hex and in bits.
//
// After every step it checks:
//   - mutual exclusion: at most one actor is inside f, at most one holds the
//     running bit;
//   - the running bit is set exactly when an actor is inside f or about to
//     loop, and the reservation bit only with it;
//   - no version runs twice: the versions f starts for strictly increase;
//   - Suspend wins: while the latest Fire, FireAfter or Suspend is a
//     Suspend, f does not start for its version or any later one (only the
//     run already in flight, whose context Suspend cancels, may start);
//   - a superseded run's result is ignored, however many calls it outlived,
//     and a run that returned false arms no timer;
//   - a run's context is cancelled before it returns only if a Suspend was
//     published since the run began;
//   - the superseded, canceled and reserved bits are set only with the
//     running bit, and canceled and reserved only with superseded;
//   - the within and closed bits stay clear: no actor calls FireWithin,
//     Close or Shutdown (explore_shape_test.go explores those).
//
// When every actor has finished, or waits for something that will not come,
// it checks that a run waiting for its context to be cancelled is not one
// that a Suspend superseded (the Suspend cancels it), and, when none waits,
// that no fire was lost: if the latest Fire, FireAfter or Suspend is a Fire
// or FireAfter, f started for its version or a later one after it was
// published.
//
// Storms, many calls published while a run is in flight, move the version by
// more than half the version space and all the way round (see stormKs).

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
)

// exMaxActors bounds the actors alive at once: the largest configuration
// starts five, and each Fire, each f returning true and each panic arms at
// most one timer more.
const exMaxActors = 10

// armKind is the kind of the latest Fire, FireAfter or Suspend.
type armKind uint8

const (
	armNone    armKind = iota
	armFire            // Fire or FireAfter
	armSuspend         // Suspend
)

// exWorld is one state of the explored system. The explorer remembers it
// by its exKey.
type exWorld struct {
	s         uint32 // Trigger.state
	n         uint8  // actors in use
	okLeft    uint8  // how many more times f may return true
	panicLeft uint8  // how many more times f may panic
	last      armKind
	served    bool   // f started for lastV or later since it was published
	ran       bool   // f has started at least once
	ser       uint64 // the serial of the state's version: it never wraps
	cur       uint64 // Trigger.cur: the serial of the iteration whose context it holds, 0 for nil
	lastV     uint64 // serial published by the latest Fire, FireAfter or Suspend
	lastRun   uint64 // serial of the latest start of f
	closedSer uint64 // serial of the state when Close or Shutdown last published, 0 before

	// The earliest-wins check of the shape exploration (see promise).
	dl     uint8  // 1 + the earliest due time a FireWithin that has returned asked for, that no run has met yet; 0: none
	dlV    uint64 // the serial of the arming the first of those FireWithin calls made or kept
	actors [exMaxActors]exActor
}

// explorer explores the interleavings of one configuration at a time.
type explorer struct {
	exWalk[exWorld, exKey]
	t    transitions
	flow string // a mistake in the actors' control flow, for the mutation tests
	base uint64 // serials are packed into keys as offsets from base (see off)
	bad  string // the first violation found

	// plain turns the symmetry reduction off: actors keep their places.
	// It exists to test that the reduction changes no count.
	plain bool

	// shape says that the configuration calls FireWithin, Close or
	// Shutdown: armings then take a place step of their own (see arm).
	shape bool
}

// exStep is one step of a path: actor i with choice c.
type exStep struct{ i, c int }

// exCount is a count of interleavings, which overflows 64 bits.
type exCount struct{ hi, lo uint64 }

func (a exCount) add(b exCount) exCount {
	lo, carry := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, carry)
	return exCount{hi, lo}
}

func (a exCount) String() string {
	n := new(big.Int).SetUint64(a.hi)
	n.Lsh(n, 64).Or(n, new(big.Int).SetUint64(a.lo))
	return n.String()
}

// onPath marks a world whose exploration has begun and not ended: meeting
// it again means the interleaving can go round in circles.
var onPath = exCount{math.MaxUint64, math.MaxUint64}

func (x *explorer) failf(format string, args ...any) {
	if x.bad == "" {
		x.bad = fmt.Sprintf(format, args...)
	}
}

// check is called after every step.
func (x *explorer) check(w *exWorld) {
	owners, inF := 0, 0
	for i := range w.actors[:w.n] {
		if w.actors[i].ph.owner() {
			owners++
		}
		if w.actors[i].ph == phInF {
			inF++
		}
	}
	switch {
	case inF > 1:
		x.failf("%d actors are inside f at once", inF)
	case owners > 1:
		x.failf("%d actors hold the running bit at once", owners)
	case running(w.s) && owners == 0:
		x.failf("the running bit is set, but no actor is inside f or about to loop")
	case !running(w.s) && owners == 1:
		x.failf("an actor is inside f or about to loop, but the running bit is clear")
	case w.s&runFlags != 0 && !running(w.s):
		x.failf("a run flag is set without the running bit: %s", exFmtState(w.s))
	case (canceled(w.s) || reserved(w.s)) && !superseded(w.s):
		x.failf("the run is cancelled or reserved, yet not superseded: %s", exFmtState(w.s))
	case w.s&(withinBit|closedBit) != 0 && !x.shape:
		// No actor calls FireWithin, Close or Shutdown.
		x.failf("the within or closed bit is set, yet nothing set it: %s", exFmtState(w.s))
	case within(w.s) && reserved(w.s):
		x.failf("the within bit is set with a reservation: %s", exFmtState(w.s))
	case w.closedSer != 0 && !closed(w.s):
		x.failf("the closed bit was cleared: %s", exFmtState(w.s))
	}
}

// final is called when every actor has finished.
func (x *explorer) final(w *exWorld) {
	for i := range w.actors[:w.n] {
		if a := &w.actors[i]; a.ph == phWait {
			if a.susp {
				x.failf("the run of v=%#x waits for its context, but a Suspend published since it began did not cancel it", a.sv)
			}
			return // a run that waits for ever: the fires after it are not lost, only late
		}
	}
	if w.last == armFire && !w.served {
		x.failf("lost fire: everyone has finished, but f never started for v=%#x (the latest Fire's) or later", w.lastV)
	}
}

// exSystem is what the depth-first walk needs of an explored system, whose
// worlds are W, remembered by keys K.
type exSystem[W any, K comparable] interface {
	actors(w *W) int          // how many actors w has
	choices(w *W, i int) int  // how many ways actor i's next step can go (0: it cannot move)
	step(w *W, i, c int) bool // takes it, or reports false if choice c is not possible
	after(w *W) K             // checks w after a step, makes it canonical, returns its key
	final(w *W)               // checks a world in which no actor can move
	failf(format string, args ...any)
	failed() bool
}

// exWalk walks every interleaving of an exSystem depth first.
type exWalk[W any, K comparable] struct {
	memo   map[K]exCount // worlds explored, and their counts of complete interleavings
	path   []exStep      // the interleaving being explored; after a failure, the failing one
	edges  uint64        // steps taken
	frames []W           // the successor worlds, one per depth: they would escape to the heap
}

// exMaxDepth bounds the length of an interleaving.
const exMaxDepth = 1 << 12

// visit explores every interleaving from w, whose key is k, and returns how
// many complete interleavings there are from it.
func (g *exWalk[W, K]) visit(sys exSystem[W, K], w *W, k K) exCount {
	if c, seen := g.memo[k]; seen {
		if c == onPath {
			sys.failf("cycle: an interleaving came back to a state it had been in (a livelock)")
		}
		return c
	}
	g.memo[k] = onPath
	if g.frames == nil {
		g.frames = make([]W, exMaxDepth)
	}
	depth := len(g.path)
	if depth == exMaxDepth {
		// No interleaving of the bounded calls explored comes near this
		// length: one that reaches it goes on for ever, its versions
		// moving on, so that no world repeats.
		sys.failf("livelock: an interleaving went on for %d steps, moving on without end", exMaxDepth)
		return exCount{}
	}
	next := &g.frames[depth]
	var total exCount
	moved := false
	for i := range sys.actors(w) {
		for c := range sys.choices(w, i) {
			*next = *w
			if !sys.step(next, i, c) {
				continue
			}
			moved = true
			g.edges++
			g.path = append(g.path, exStep{i, c})
			nk := sys.after(next)
			if sys.failed() {
				return exCount{}
			}
			total = total.add(g.visit(sys, next, nk))
			if sys.failed() {
				return exCount{}
			}
			g.path = g.path[:len(g.path)-1]
		}
	}
	if !moved {
		sys.final(w)
		total = exCount{lo: 1}
	}
	g.memo[k] = total
	return total
}

func (x *explorer) actors(w *exWorld) int { return int(w.n) }
func (x *explorer) failed() bool          { return x.bad != "" }

// after checks w after a step and makes it canonical.
func (x *explorer) after(w *exWorld) exKey {
	x.check(w)
	return x.canon(w, nil)
}

// exKey is a world packed into a few words, canonical up to the order of
// the actors: worlds that differ only in which actor is which have the same
// key. The checks never depend on an actor's identity, and visit counts
// each actor's step separately, so the interleaving counts stay exact.
type exKey struct {
	s                  uint32
	meta               uint32
	ser, cur, lastV, r uint32 // serials, as offsets from the base
	cl                 uint32 // closedSer, as an offset, or 0
	dv                 uint32 // dlV, as an offset, or 0
	a                  [exMaxActors]exPacked
}

// exPacked is an actor packed for exKey; a finished actor packs to zero.
type exPacked struct{ p, v, seen uint32 }

func (p exPacked) less(q exPacked) bool {
	if p.p != q.p {
		return p.p < q.p
	}
	if p.v != q.v {
		return p.v < q.v
	}
	return p.seen < q.seen
}

// canon sorts w's actors into canonical order, drops the finished ones and
// returns w's key. If names is not nil, it is permuted along with the
// actors.
func (x *explorer) canon(w *exWorld, names []string) exKey {
	if x.shape {
		x.dropStale(w)
	}
	var k exKey
	n := int(w.n)
	for i := range n {
		k.a[i] = x.pack(&w.actors[i])
	}
	for i := 1; i < n && !x.plain; i++ { // insertion sort, descending: finished actors (0) last
		for j := i; j > 0 && k.a[j-1].less(k.a[j]); j-- {
			k.a[j], k.a[j-1] = k.a[j-1], k.a[j]
			w.actors[j], w.actors[j-1] = w.actors[j-1], w.actors[j]
			if names != nil {
				names[j], names[j-1] = names[j-1], names[j]
			}
		}
	}
	for n > 0 && k.a[n-1] == (exPacked{}) && !x.plain {
		n--
	}
	w.n = uint8(n)
	k.s = w.s
	k.meta = uint32(w.n) | uint32(w.okLeft)<<4 | uint32(w.panicLeft)<<8 | uint32(w.last)<<12
	if w.served {
		k.meta |= 1 << 14
	}
	k.ser = x.off(w.ser)
	if w.cur != 0 {
		k.cur = x.off(w.cur)
	}
	if w.last != armNone {
		k.lastV = x.off(w.lastV)
	}
	if w.ran {
		k.meta |= 1 << 15
		k.r = x.off(w.lastRun)
	}
	if w.closedSer != 0 {
		k.cl = x.off(w.closedSer)
	}
	k.meta |= uint32(w.dl) << 16
	if w.dl != 0 {
		k.dv = x.off(w.dlV)
	}
	return k
}

// pack packs what matters of an actor in its phase.
func (x *explorer) pack(a *exActor) exPacked {
	p := exPacked{p: uint32(a.ph)}
	for i, f := range [...]bool{a.ok, a.sup, a.susp, a.can, a.now, a.wsup, a.again} {
		if f {
			p.p |= 1 << (8 + i)
		}
	}
	p.p |= uint32(a.due)<<16 | uint32(a.owe)<<20
	if a.sv != 0 {
		p.v = x.off(a.sv)
	}
	if a.ph.seen() {
		p.seen = a.seen
	}
	return p
}

// off is serial v's distance from the base, which must fit in 32 bits.
func (x *explorer) off(v uint64) uint32 {
	o := v - x.base
	if o >= 1<<32 {
		x.failf("serial %#x is out of the explored range (base %#x): a version moved backwards", v, x.base)
		return 0
	}
	return uint32(o)
}

// exConfig is one starting point: a world and the names of its actors.
type exConfig struct {
	name  string
	w     exWorld
	names []string
	shape bool // it calls FireWithin, Close or Shutdown
}

// exStats sums up an exploration.
type exStats struct {
	configs       int
	states        uint64  // distinct worlds
	edges         uint64  // steps taken
	interleavings exCount // complete interleavings covered
}

// explore explores every configuration with transitions t. It returns the
// totals and, at the first violation, a readable trace ("" if none).
func explore(t transitions, base uint64, cfgs []exConfig) (exStats, string) {
	return exploreWith(t, "", base, cfgs, false)
}

func exploreWith(t transitions, flow string, base uint64, cfgs []exConfig, plain bool) (exStats, string) {
	var st exStats
	for _, cfg := range cfgs {
		x := &explorer{t: t, flow: flow, base: base, plain: plain, shape: cfg.shape}
		x.memo = make(map[exKey]exCount)
		w := cfg.w
		x.check(&w)
		k := x.canon(&w, nil)
		var n exCount
		if x.bad == "" {
			n = x.visit(x, &w, k)
		}
		st.configs++
		st.states += uint64(len(x.memo))
		st.edges += x.edges
		st.interleavings = st.interleavings.add(n)
		if x.bad != "" {
			x.shortest(cfg)
			return st, x.trace(cfg)
		}
	}
	return st, ""
}

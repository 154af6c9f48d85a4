package circulation

// Traces of the state explorer: what a failing interleaving looks like.

import (
	"fmt"
	"slices"
	"strings"
)

// shortest replaces the failing path that the depth-first search found,
// which is rarely the simplest, with a shortest one, found breadth first.
// A cycle (a livelock) is a violation only the depth-first search sees: its
// path is kept as it is.
func (x *explorer) shortest(cfg exConfig) {
	bad, dfsPath := x.bad, x.path
	if strings.HasPrefix(bad, "livelock") {
		// The breadth-first search would not end: keep the first steps
		// of the endless interleaving, which show its pattern.
		x.path = x.path[:min(len(x.path), 60)]
		return
	}
	type node struct {
		w      exWorld
		parent int
		step   exStep
	}
	path := func(nodes []node, i int, last ...exStep) []exStep {
		for ; nodes[i].parent >= 0; i = nodes[i].parent {
			last = append(last, nodes[i].step)
		}
		slices.Reverse(last)
		return last
	}
	w := cfg.w
	x.bad = ""
	x.check(&w)
	if x.bad != "" {
		x.path = nil
		return
	}
	seen := map[exKey]bool{x.canon(&w, nil): true}
	nodes := []node{{w: w, parent: -1}}
	for head := 0; head < len(nodes); head++ {
		w := nodes[head].w
		moved := false
		for i := range int(w.n) {
			for c := range x.choices(&w, i) {
				next := w
				if !x.step(&next, i, c) {
					continue
				}
				moved = true
				x.check(&next)
				k := x.canon(&next, nil)
				if x.bad != "" {
					x.path = path(nodes, head, exStep{i, c})
					return
				}
				if !seen[k] {
					seen[k] = true
					nodes = append(nodes, node{next, head, exStep{i, c}})
				}
			}
		}
		if !moved {
			if x.final(&w); x.bad != "" {
				x.path = path(nodes, head)
				return
			}
		}
	}
	x.bad, x.path = bad, dfsPath
}

// trace replays the failing path from cfg and describes it.
func (x *explorer) trace(cfg exConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "violation: %s\n", x.bad)
	fmt.Fprintf(&b, "start %q: state %s\n", cfg.name, exFmtState(cfg.w.s))
	// Actors are named by the order they appear in, whatever their place
	// in the canonical order.
	names := make([]string, exMaxActors)
	for i, n := range cfg.names {
		names[i] = fmt.Sprintf("A%d %s", i, n)
		fmt.Fprintf(&b, "  %s\n", names[i])
	}
	next := len(cfg.names)
	fmt.Fprintf(&b, "%4s  %-30s  %-42s  %s\n", "step", "actor", "does", "state after")
	w := cfg.w
	x.canon(&w, names)
	for k, p := range x.path {
		before := w
		x.step(&w, p.i, p.c)
		what := x.describe(&before, &w, p.i, p.c)
		for j := before.n; j < w.n; j++ {
			kind := "timer"
			if w.actors[j].ph == phSettle {
				kind = "place"
			}
			names[j] = fmt.Sprintf("A%d %s v=%#x", next, kind, w.actors[j].sv)
			what += fmt.Sprintf("; arms A%d", next)
			next++
		}
		fmt.Fprintf(&b, "%4d  %-30s  %-42s  %s\n", k+1, names[p.i], what, exFmtState(w.s))
		x.canon(&w, names)
	}
	return b.String()
}

// describe says what actor i did between before and after.
func (x *explorer) describe(before, after *exWorld, i, c int) string {
	a, b := &before.actors[i], &after.actors[i]
	if a.ph.load() {
		return "load"
	}
	failed := b.ph.load()
	switch a.ph {
	case phFinishCAS:
		failed = b.ph == phFinishLoad // not the reassert of exitCompete
	case phAbortCAS:
		failed = b.ph == phAbortLoad
	}
	switch a.ph {
	case phFireLook:
		if b.ph == phFireCoalesceCheck {
			return "coalesce: the pending shot is due"
		}
		return "coalesce: no due shot in the slot"
	case phFireCoalesceCheck:
		if failed {
			return "coalesce: the state changed: retry"
		}
		return "coalesce: the state is still s"
	case phFireLookAgain:
		if b.ph == phDone {
			return "coalesce: still due: coalesced, returns"
		}
		return "coalesce: claimed meanwhile: not coalesced"
	case phClaim:
		return "the timer fires: claim"
	case phFireCAS:
		if failed {
			return "CAS fails (state changed): retry"
		}
		if running(a.seen) {
			return "CAS reserve: one more run"
		}
		return "CAS advance"
	case phFireAfterCAS:
		if failed {
			return "CAS fails (state changed): retry"
		}
		return "CAS advance"
	case phSuspendCAS:
		if failed {
			return "CAS fails (state changed): retry"
		}
		return "CAS suspend"
	case phStartCAS:
		_, e := x.t.enter(a.seen, uint32(a.sv)&versionMask)
		switch {
		case e == entryStale:
			return "enter: stale, returns"
		case failed:
			return "CAS fails (state changed): retry"
		case e == entryDeferred:
			return "CAS enter: deferred, reserves the next run"
		}
		return "CAS enter: takes the running bit"
	case phBegin:
		return fmt.Sprintf("begin: stores cur for v=%#x", a.sv)
	case phBeginCheck:
		if b.can && !a.can {
			return "begin: canceled bit set: cancels; f starts"
		}
		return "begin: f starts"
	case phInF:
		return [...]string{"f returns false", "f returns (0, true)", "f returns (d, true)", "f panics", "f waits for its context"}[c]
	case phWait:
		return "f sees its context cancelled, returns false"
	case phEnd, phAbortEnd:
		return "end: withdraws cur, cancels"
	case phSuspendCur:
		if b.ph == phDone {
			return "cancelRun: cur is empty"
		}
		return fmt.Sprintf("cancelRun: cur holds v=%#x", before.cur)
	case phSuspendState:
		return fmt.Sprintf("cancelRun: canceled bit %v", canceled(before.s))
	case phStormCAS, phSStormCAS:
		if failed {
			return "CAS fails (state changed): retry"
		}
		return fmt.Sprintf("a storm of %d calls", stormKs[c])
	case phFinishCAS, phAbortCAS:
		if failed {
			return "CAS fails (state changed): retry"
		}
		var e exit
		if a.ph == phFinishCAS {
			_, e = x.t.finish(a.seen, uint32(a.sv)&versionMask, a.ok)
		} else {
			_, e = x.t.abort(a.seen)
		}
		what := "CAS finish"
		if a.ph == phAbortCAS {
			what = "CAS abort"
		}
		return what + ": " + [...]string{"exitIdle", "exitAgain", "exitArm", "exitCompete (reassert)"}[e]
	case phWithinLook:
		if b.ph == phWithinCheck {
			return "keep: the pending shot is due no later"
		}
		return "keep: no such shot in the slot"
	case phWithinCheck:
		if failed {
			return "keep: the state changed: retry"
		}
		return "keep: the state is still s"
	case phWithinLookAgain:
		if b.ph == phDone {
			return "keep: still unclaimed: kept, returns"
		}
		return "keep: claimed meanwhile: not kept"
	case phWithinCAS:
		switch {
		case failed:
			return "CAS fails (state changed): retry"
		case c == 1:
			return "CAS reserve (due passed)"
		}
		return "CAS advanceWithin"
	case phCloseCAS:
		if failed {
			return "CAS fails (state changed): retry"
		}
		return "CAS closeNow"
	case phShutdownCAS:
		switch {
		case failed:
			return "CAS fails (state changed): retry"
		case x.pending(before, version(a.seen), true, nil):
			return "CAS shutdown, hurrying the pending shot"
		}
		return "CAS shutdown"
	case phSettle:
		return "place: settle: the shot is in the slot"
	case phPlace:
		switch b.ph {
		case phWithinLoad:
			return "place: stale, within set: reasserts"
		case phShutdownLoad:
			return "place: current on a closed Trigger: hurries"
		}
		return "place: nothing to do"
	}
	if a.ph == phWithinLoad || a.ph == phShutdownLoad || a.ph == phFireLoad || a.ph == phFireAfterLoad {
		return "load: returns"
	}
	return "?"
}

// exFmtState shows a state word in hex and in bits: reserved, running,
// canceled, superseded, closed, within and the version.
func exFmtState(s uint32) string {
	bit := func(set bool, name string) string {
		if set {
			return name
		}
		return "---"
	}
	return fmt.Sprintf("0x%08x [%s %s %s %s %s %s v=0x%07x]", s,
		bit(reserved(s), "res"), bit(running(s), "run"), bit(canceled(s), "can"), bit(superseded(s), "sup"),
		bit(closed(s), "cls"), bit(within(s), "win"), version(s))
}

package circulation

import (
	"fmt"
	"strings"
	"testing"
)

// exMutants are plausible mistakes in state.go, and one in the control flow
// of Fire. Each must make the explorer fail, with the violation named in
// want: this tests the explorer itself.
var exMutants = []struct {
	name string
	want string // in the violation
	t    transitions
	flow string // the mistake in the control flow, if t is stateGo
}{
	{
		name: "advance keeps the reservation",
		want: "a version ran twice",
		t: with(func(t *transitions) {
			t.advance = func(s uint32) uint32 { return advance(s) | s&reservedBit }
		}),
	},
	{
		name: "advance does not wrap the version",
		want: "the within or closed bit is set",
		t: with(func(t *transitions) {
			t.advance = func(s uint32) uint32 { return advance(s)&^versionMask | (s&versionMask + 1) }
		}),
	},
	{
		name: "advance does not mark the run superseded",
		want: "was superseded, yet its result armed a timer",
		t: with(func(t *transitions) {
			t.advance = func(s uint32) uint32 { return advance(s) &^ supersededBit }
			t.suspend = func(s uint32) uint32 { return suspend(s) &^ supersededBit }
		}),
	},
	{
		name: "suspend does not mark the run cancelled",
		want: "did not cancel it",
		t: with(func(t *transitions) {
			t.suspend = func(s uint32) uint32 { return advance(s) }
		}),
	},
	{
		name: "suspend marks an idle Trigger cancelled",
		want: "without the running bit",
		t: with(func(t *transitions) {
			t.suspend = func(s uint32) uint32 { return advance(s) | canceledBit | supersededBit }
		}),
	},
	{
		name: "reserve does not advance the version",
		want: "ran twice",
		t: with(func(t *transitions) {
			t.reserve = func(s uint32) uint32 { return s | reservedBit | supersededBit }
		}),
	},
	{
		name: "enter defers without reserving",
		want: "lost fire",
		t: with(func(t *transitions) {
			t.enter = func(s, v uint32) (uint32, entry) {
				if version(s) == v && running(s) {
					return s, entryDeferred
				}
				return enter(s, v)
			}
		}),
	},
	{
		name: "enter runs although running",
		want: "actors hold the running bit at once",
		t: with(func(t *transitions) {
			t.enter = func(s, v uint32) (uint32, entry) {
				if version(s) == v && running(s) {
					return s, entryRun
				}
				return enter(s, v)
			}
		}),
	},
	{
		name: "enter ignores the version",
		want: "f starts for",
		t: with(func(t *transitions) {
			t.enter = func(s, _ uint32) (uint32, entry) { return enter(s, version(s)) }
		}),
	},
	{
		name: "finish clears the running bit before checking the reservation",
		want: "the running bit is clear",
		t: with(func(t *transitions) {
			t.finish = func(s, _ uint32, ok bool) (uint32, exit) { return finish(s&^runningBit, ok) }
		}),
	},
	{
		name: "finish drops the reservation",
		want: "lost fire",
		t: with(func(t *transitions) {
			t.finish = func(s, _ uint32, ok bool) (uint32, exit) { return finish(s&^reservedBit, ok) }
		}),
	},
	{
		name: "finish ignores the superseded bit",
		want: "superseded",
		t: with(func(t *transitions) {
			t.finish = func(s, _ uint32, ok bool) (uint32, exit) { return finish(s&^supersededBit, ok) }
		}),
	},
	{
		// The protocol before the superseded bit: right until a run
		// outlives a whole turn of the version space.
		name: "finish judges the run by its version",
		want: "superseded, yet its result armed a timer",
		t: with(func(t *transitions) {
			t.finish = func(s, v uint32, ok bool) (uint32, exit) {
				if !reserved(s) && ok && version(s) == v {
					return (s + 1) & versionMask, exitArm
				}
				return finish(s, false)
			}
		}),
	},
	{
		name: "finish keeps the cancel for the next iteration",
		want: "cancelled or reserved, yet not superseded",
		t: with(func(t *transitions) {
			t.finish = func(s, _ uint32, ok bool) (uint32, exit) {
				n, e := finish(s, ok)
				if e == exitAgain {
					n |= s & canceledBit
				}
				return n, e
			}
		}),
	},
	{
		name: "finish keeps the cancel and the superseded bit for the next iteration",
		want: "its answer was ignored",
		t: with(func(t *transitions) {
			t.finish = func(s, _ uint32, ok bool) (uint32, exit) {
				n, e := finish(s, ok)
				if e == exitAgain {
					n |= s & (canceledBit | supersededBit)
				}
				return n, e
			}
		}),
	},
	{
		name: "finish never arms",
		want: "its answer was ignored",
		t: with(func(t *transitions) {
			t.finish = func(s, _ uint32, ok bool) (uint32, exit) { return finish(s, false) }
		}),
	},
	{
		name: "finish keeps the superseded bit for the reserved iteration",
		want: "its answer was ignored",
		t: with(func(t *transitions) {
			t.finish = func(s, _ uint32, ok bool) (uint32, exit) {
				n, e := finish(s, ok)
				if e == exitAgain {
					n |= s & supersededBit
				}
				return n, e
			}
		}),
	},
	{
		name: "enter marks the iteration superseded",
		want: "its answer was ignored",
		t: with(func(t *transitions) {
			t.enter = func(s, v uint32) (uint32, entry) {
				n, e := enter(s, v)
				if e == entryRun {
					n |= supersededBit
				}
				return n, e
			}
		}),
	},
	{
		name: "finish ignores ok",
		want: "rescheduled although f returned false",
		t: with(func(t *transitions) {
			t.finish = func(s, _ uint32, _ bool) (uint32, exit) { return finish(s, true) }
		}),
	},
	{
		name: "finish arms under the old version",
		want: "ran twice",
		t: with(func(t *transitions) {
			t.finish = func(s, _ uint32, ok bool) (uint32, exit) {
				n, e := finish(s, ok)
				if e == exitArm {
					n = s & versionMask
				}
				return n, e
			}
		}),
	},
	{
		name: "abort drops the reservation",
		want: "lost fire",
		t: with(func(t *transitions) {
			t.abort = func(s uint32) (uint32, exit) { return abort(s &^ reservedBit) }
		}),
	},
	{
		// A run can start and finish between coalesce's look and its
		// check of the state, leaving the state as it was: only the
		// second look, which finds the shot claimed, tells.
		name: "coalesce does not look again after its check",
		want: "lost fire",
		t:    stateGo,
		flow: "coalesce does not look again after its check",
	},
	{
		// A livelock: only the depth-first search sees the cycle, and the
		// trace is its path.
		name: "coalesce retries for ever",
		want: "cycle",
		t:    stateGo,
		flow: "coalesce retries for ever",
	},
	{
		// A Suspend that reaches cur only after the run it superseded
		// has ended, and a reserved one has begun.
		name: "cancelRun ignores the canceled bit",
		want: "no Suspend came since it began",
		t:    stateGo,
		flow: "cancelRun ignores the canceled bit",
	},
	{
		// A Suspend that finds cur empty, between the running bit and
		// the context, leaves the cancel to begin.
		name: "begin does not check the canceled bit",
		want: "did not cancel it",
		t:    stateGo,
		flow: "begin does not check the canceled bit",
	},
	{
		name: "abort keeps the reservation",
		want: "without the running bit",
		t: with(func(t *transitions) {
			t.abort = func(s uint32) (uint32, exit) {
				n, e := abort(s)
				return n | s&reservedBit, e
			}
		}),
	},
	{
		name: "abort keeps the running bit",
		want: "no actor is inside f",
		t: with(func(t *transitions) {
			t.abort = func(s uint32) (uint32, exit) {
				n, e := abort(s)
				return n | runningBit, e
			}
		}),
	},
}

// with returns stateGo changed by change.
func with(change func(*transitions)) transitions {
	t := stateGo
	change(&t)
	return t
}

func TestExploreMutants(t *testing.T) {
	// Every mutant shows in a configuration of three actors, the default
	// depth (exBudget): the smallest budget keeps the mutants that only
	// fail across the wrap quick.
	const maxActors, ok, panics = 3, 1, 1
	for _, m := range exMutants {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			var found []string
			for _, v0 := range exBases {
				cfgs := exConfigs(v0, maxActors, ok, panics)
				if _, trace := exploreWith(m.t, m.flow, exSerial(v0)-2, cfgs, false); trace != "" {
					found = append(found, fmt.Sprintf("from v0=%#x, %s", v0, trace))
				}
			}
			if len(found) == 0 {
				t.Fatalf("the explorer accepts the mutant %q", m.name)
			}
			for _, trace := range found {
				if !strings.Contains(trace, m.want) {
					t.Errorf("want a violation containing %q, got\n%s", m.want, trace)
				}
			}
			t.Logf("caught %d of %d runs; first trace:\n%s", len(found), len(exBases), found[0])
		})
	}
}

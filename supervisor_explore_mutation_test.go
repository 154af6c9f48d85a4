package circulation

import (
	"strings"
	"testing"
)

// svMutants are plausible mistakes in supervisor_coord.go and in the
// control flow of supervisor.go, supervisor_loop.go and supervisor_stop.go.
// Each must make the explorer fail, with the violation named in want: this
// tests the explorer itself.
var svMutants = []struct {
	name string
	want string // in the violation
	t    svT
	flow string // the mistake in the Supervisor's control flow, if t is svCoord
}{
	{
		// Nothing lets a round that waits for the watchdog go: the Fire
		// ended chain, but the round's context is live.
		name: "FireAfter does not suspend the main Trigger first",
		want: "a round waits for a watchdog that will never tick",
		t:    svCoord,
		flow: "FireAfter does not suspend the main Trigger first",
	},
	{
		// The race the Supervisor's doc used to admit: a round the main
		// Trigger started before a Fire begins its attempt unmarked, and
		// its timeout starts a chain while the Fire's run is reserved.
		name: "begin ignores the round's context",
		want: "chain while the main Trigger has a schedule of its own",
		t:    svCoord,
		flow: "begin ignores the round's context",
	},
	{
		// The order of the checks before cancellations counted as such.
		name: "end counts a cancelled attempt's permanent error or panic as a failure",
		want: "was not counted as cancelled",
		t: svWith(func(t *svT) {
			t.end = func(c *coord, r result, ctxDone bool) (verdict, attemptFlags) {
				if f := c.cur; !f.abandoned && (r == returnedPermanent || r == returnedPanic) {
					v := verdictPanic
					if r == returnedPermanent {
						v = verdictPermanent
					}
					c.busy, c.cur = false, attemptFlags{}
					return v, f
				}
				return c.end(r, ctxDone)
			}
		}),
	},
	{
		name: "a permanent error returned before a Suspend drops the Fire after it",
		want: "lost schedule",
		t:    svCoord,
		flow: "a permanent error suspends after a Suspend",
	},
	{
		name: "end does not quiesce the watchdog",
		want: "the watchdog armed for attempt",
		t:    svCoord,
		flow: "end does not quiesce the watchdog",
	},
	{
		name: "supersede keeps chain",
		want: "chain while the main Trigger has a schedule of its own",
		t: svWith(func(t *svT) {
			t.supersede = func(c *coord, cancel bool) bool {
				chain, waiting := c.chain, c.waiting
				cc := c.supersede(cancel)
				c.chain, c.waiting = chain, waiting
				return cc
			}
		}),
	},
	{
		name: "tick starts a chain for a superseded attempt",
		want: "chain while the main Trigger has a schedule of its own",
		t: svWith(func(t *svT) {
			t.tick = func(c *coord) (tickAction, bool) {
				c.cur.superseded = false
				return c.tick()
			}
		}),
	},
	{
		name: "tick times out a cancelled attempt",
		want: "cancelled by Suspend, was timed out",
		t: svWith(func(t *svT) {
			t.tick = func(c *coord) (tickAction, bool) {
				canceled := c.cur.canceled
				c.cur.canceled = false
				a, again := c.tick()
				c.cur.canceled = canceled
				return a, again
			}
		}),
	},
	{
		name: "goexit arms whatever came since",
		want: "a timer is pending after a Suspend",
		t:    svCoord,
		flow: "goexit arms whatever came since",
	},
	{
		name: "goexit arms while a Stop is under way",
		want: "began after a Suspend took effect",
		t: svWith(func(t *svT) {
			t.current = func(c *coord, f attemptFlags) bool { return c.gen == f.gen }
		}),
	},
	{
		// The watchdog's chain tick for an attempt that a Fire concurrent
		// with Stop started is gone: its round waits for nothing.
		name: "Stop stops the watchdog too",
		want: "a round waits for a watchdog that will never tick",
		t:    svCoord,
		flow: "Stop stops the watchdog too",
	},
	{
		name: "a waiting round ignores its context",
		want: "a round waits for a watchdog that will never tick",
		t:    svCoord,
		flow: "a waiting round ignores its context",
	},
}

func svWith(f func(*svT)) svT {
	t := svCoord
	f(&t)
	return t
}

func TestExploreSupervisorMutants(t *testing.T) {
	budget, small := svBudget(t)
	if small {
		t.Skip("the mutants need every configuration: run without -race and -short, as check.sh does")
	}
	for _, m := range svMutants {
		t.Run(m.name, func(t *testing.T) {
			bad, config, trace, _, _ := svExplore(m.t, m.flow, budget, false)
			switch {
			case bad == "":
				t.Fatalf("the explorer found nothing wrong; want %q", m.want)
			case !strings.Contains(bad, m.want):
				t.Fatalf("violation %q in %s, want %q; after:\n  %s", bad, config, m.want, strings.Join(trace, "\n  "))
			}
			t.Logf("%s (in %s, after %d steps)", bad, config, len(trace))
		})
	}
}

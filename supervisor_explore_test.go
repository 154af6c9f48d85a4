package circulation

// An exhaustive explorer of a Supervisor's coordination: the callers of
// Fire, FireAfter, Suspend and Stop, the rounds of the main Trigger and the
// watchdog, in every interleaving of their steps, for small configurations.
//
// The Supervisor's side is the real code: each step that holds
// Supervisor.mu calls the transitions of supervisor_coord.go (through svT,
// so that the mutation tests can replace one), and does with their answers
// what supervisor.go, supervisor_loop.go and supervisor_stop.go do. What
// they do outside mu (cancelling a context, arming or stopping a Trigger,
// waiting) is a step of its own here, in the order they take them; that
// order is the part of the model that could drift from the code, and the
// comments on the phases (rBegin, uLock, ...) name the statement of those
// files each follows.
//
// The two Triggers are models of their contract (docs/guarantees.md), not
// their code, which the Trigger's own explorers check: one timer at most
// (the latest arming's; a superseded one is stopped), a run reserved by a
// Fire during a run or by a timer that falls due during it, a run's result
// ignored once a later call has come, the run's context cancelled by
// Suspend, and Stop waiting until nothing runs and no timer is pending.
// Time is abstract: a pending timer may fire at any step, which covers
// every order of delays, Timeouts and returns. A budget bounds how often
// timers fire, so that a schedule that would go on forever ends with its
// timer pending.
//
// After every step it checks:
//   - the watchdog keeps the schedule (chain) only while the main Trigger
//     has none of its own: no timer and no reserved run;
//   - an attempt in time, not cancelled, has its Timeout: the watchdog is
//     armed, or its tick is under way;
//   - chain only while an attempt is in flight or a round waits for it, and
//     a round waits only with chain;
//   - an attempt is in flight (coord.busy) exactly between begin and end;
//   - no attempt begins once a Suspend (or Stop) has taken effect, or a
//     permanent error has stopped the Supervisor, until the next Fire;
//   - the watchdog times out only the attempt it was armed for, and never
//     one that Suspend cancelled;
//   - Stats: Attempts is the sum of the outcomes plus one while an attempt
//     runs that has not timed out, and Late never exceeds Timeouts;
//   - an attempt that Suspend cancelled before it returned is counted in
//     Canceled (unless it returned nil), and Err is set only by one that was
//     not.
//
// When no step is possible it checks that no round waits for a watchdog
// that will never tick, that the schedule is what the latest call and the
// latest attempt left (a pending timer after a Fire or a run that asked for
// one, none after Suspend or a permanent error), so that no Fire is lost
// and no Suspend undone, and that after a Stop nothing runs or is pending.

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// svTrig is the model of a Trigger.
type svTrig struct {
	ver      uint8 // bumped by every FireAfter and Suspend
	running  bool  // the Func runs
	runVer   uint8 // ver when the run in flight began: its result counts if ver has not moved
	reserved bool  // one more run follows the one in flight at once
	canceled bool  // the context of the run in flight is cancelled
	armed    bool  // a timer for ver is pending
}

func (t *svTrig) fireAfter(now bool) {
	t.ver++
	if now && t.running {
		t.reserved, t.armed = true, false
	} else {
		t.reserved, t.armed = false, true
	}
}

func (t *svTrig) suspend() {
	t.ver++
	t.reserved, t.armed = false, false
	if t.running {
		t.canceled = true
	}
}

// fire is the callback of the pending timer; it reports whether a run
// starts.
func (t *svTrig) fire() bool {
	t.armed = false
	if t.running {
		t.reserved = true
		return false
	}
	t.start()
	return true
}

func (t *svTrig) start() { t.running, t.runVer, t.canceled, t.reserved = true, t.ver, false, false }

// ret is a run returning (d, ok); it reports whether the Func runs again at
// once. Whether d is zero does not matter to the model: either way a timer.
func (t *svTrig) ret(ok bool) bool {
	if t.reserved {
		t.start()
		return true
	}
	t.running = false
	if ok && t.runVer == t.ver {
		t.armed = true
	}
	return false
}

// abort is a run ending in runtime.Goexit: a reserved run is armed.
func (t *svTrig) abort() {
	t.running = false
	if t.reserved {
		t.reserved, t.armed = false, true
	}
}

func (t *svTrig) idle() bool { return !t.running && !t.armed }

// The phases of the main Trigger's run (a round), in supervisor_loop.go's order.
const (
	rNone     uint8 = iota // no run
	rBegin                 // round: begin, with mu
	rArm                   // round: s.watch.FireAfter(Timeout)
	rTask                  // the task runs; it returns (end: a.cancel, then random)
	rEnd                   // end, with mu
	rWait                  // end: ok = <-w
	rQuiesce               // end: quiesce, s.watch.Stop: the Suspend
	rQuiesced              // ... and the wait
	rGoexit                // goexit, with mu
	rReturn                // round returns to the main Trigger (or Goexit ends the goroutine)
)

// The phases of the watchdog's run (a tick).
const (
	tNone   uint8 = iota
	tLock         // tick, with mu
	tCancel       // tick: timedOut.cancel(context.DeadlineExceeded)
	tReturn       // tick returns to the watchdog
)

// The operations of a caller.
const (
	opFire      uint8 = iota + 1 // Fire: FireAfter(0)
	opFireAfter                  // FireAfter(d), d > 0
	opSuspend
	opStop
)

var svOpNames = [...]string{"", "Fire", "FireAfter", "Suspend", "Stop"}

// The phases of a caller.
const (
	uLock   uint8 = iota // the critical section of Fire, FireAfter, Suspend
	uCancel              // Suspend: a.cancel(context.Canceled)
	uStopM               // Stop: s.main.Stop: its Suspend
	uStopMW              // ... its wait
	uStopW               // s.watch.Stop: its Suspend
	uStopWW              // ... its wait
	uDone
)

const svMaxOps = 3

type svUser struct {
	ops    [svMaxOps]uint8
	pc, ph uint8
	target uint8 // Suspend: the attempt to cancel, 0 for none
}

// svStats mirrors the counters the steps update, in their critical
// sections, as supervisor_loop.go does.
type svStats struct {
	attempts, successes, errors, panics, timeouts, canceled, skipped, late uint8
}

// svWorld is one state of the explored system.
type svWorld struct {
	co          coord
	main, watch svTrig
	timeout     bool  // the policy has a Timeout
	results     uint8 // the results a task may return: bit r for result r, bit 4 for Goexit
	mainLeft    uint8 // how many more times the main Trigger's timer may fire
	watchLeft   uint8 // and the watchdog's

	round   uint8
	res     result
	goexit  bool // the task called runtime.Goexit
	ctxDone bool // the attempt's context was done when the task returned
	ok      bool // what the round returns
	flags   attemptFlags

	tick     uint8
	again    bool  // what the tick returns
	timedOut uint8 // the attempt the tick cancels
	tickFor  uint8 // the attempt whose Timeout armed the watchdog when this tick started

	waiter uint8 // s.waiter: 0 nil, 1 made, 2 true sent

	users [2]svUser
	nu    uint8

	// The past, for the checks.
	id       uint8 // attempts begun; the attempt in flight is id while busy
	actx     bool  // the context of attempt id is done
	actxSusp bool  // ... and Suspend or Stop cancelled it
	watchFor uint8 // the attempt whose Timeout armed the watchdog last
	sched    bool  // the Supervisor should have a schedule: a Fire came, or a run asked to run again, since the last Suspend or permanent error
	stopped  bool  // a permanent error has stopped the Supervisor, and no Fire came since
	halted   bool  // a Suspend has taken effect, and no Fire came since
	perm     bool  // Err reports a permanent error
	racy     bool  // a Fire came while a Stop was under way: the schedule it leaves is not checked
	quiet    bool  // the latest call is a Stop
	stopDone bool  // a Stop has returned, and no call came since it began
	st       svStats
}

// svT holds the transitions the explorer calls: coord's, or a mutant's.
type svT struct {
	supersede func(c *coord, cancel bool) bool
	begin     func(c *coord, roundCanceled bool) bool
	end       func(c *coord, r result, ctxDone bool) (verdict, attemptFlags)
	tick      func(c *coord) (tickAction, bool)
	current   func(c *coord, f attemptFlags) bool
}

var svCoord = svT{
	supersede: (*coord).supersede,
	begin:     (*coord).begin,
	end:       (*coord).end,
	tick:      (*coord).tick,
	current:   (*coord).current,
}

// svExplorer explores one configuration.
type svExplorer struct {
	t     svT
	flow  string // a mistake in the Supervisor's control flow, for the mutation tests
	memo  map[svWorld]uint8
	trace []string
	bad   string
	badAt []string
	edges uint64
}

const (
	svOnPath = 1
	svDone   = 2
)

func (x *svExplorer) failf(format string, args ...any) {
	if x.bad == "" {
		x.bad = fmt.Sprintf(format, args...)
		x.badAt = append([]string(nil), x.trace...)
	}
}

// A svMove is one possible step.
type svMove struct {
	name string
	do   func(w *svWorld)
}

// moves lists the steps possible in w.
func (x *svExplorer) moves(w *svWorld) []svMove {
	var ms []svMove
	if w.main.armed && w.mainLeft > 0 {
		ms = append(ms, svMove{"main timer fires", func(w *svWorld) {
			w.mainLeft--
			if w.main.fire() {
				w.round = rBegin
			}
		}})
	}
	if w.watch.armed && w.watchLeft > 0 {
		ms = append(ms, svMove{"watchdog timer fires", func(w *svWorld) {
			w.watchLeft--
			if w.watch.fire() {
				w.tick, w.tickFor = tLock, w.watchFor
			}
		}})
	}
	ms = x.roundMoves(w, ms)
	ms = x.tickMoves(w, ms)
	for i := range w.nu {
		ms = x.userMoves(w, int(i), ms)
	}
	return ms
}

func (x *svExplorer) roundMoves(w *svWorld, ms []svMove) []svMove {
	switch w.round {
	case rBegin:
		ms = append(ms, svMove{"round: begin", func(w *svWorld) {
			canceled := w.main.canceled
			if x.flow == "begin ignores the round's context" {
				canceled = false
			}
			if !x.t.begin(&w.co, canceled) {
				w.ok, w.round = false, rReturn
				return
			}
			w.id++
			switch {
			case w.halted:
				x.failf("attempt %d began after a Suspend took effect, with no Fire since", w.id)
			case w.stopped:
				x.failf("attempt %d began after a permanent error stopped the Supervisor, with no Fire since", w.id)
			}
			w.actx, w.actxSusp = false, false
			w.st.attempts++
			w.perm = false
			w.round = rTask
			if w.timeout {
				w.round = rArm
			}
		}})
	case rArm:
		ms = append(ms, svMove{"round: arm the watchdog", func(w *svWorld) {
			w.watch.fireAfter(false)
			w.watchFor = w.id
			w.round = rTask
		}})
	case rTask:
		for r := range 5 {
			if w.results&(1<<r) == 0 {
				continue
			}
			name := [...]string{"nil", "an error", "a permanent error", "a panic", "Goexit"}[r]
			ms = append(ms, svMove{"task returns " + name, func(w *svWorld) {
				w.res, w.goexit = result(min(r, 3)), r == 4
				w.ctxDone = w.actx // end: a.cancel(context.Canceled) reports it
				w.actx = true
				w.round = rEnd
			}})
		}
	case rEnd:
		ms = append(ms, svMove{"round: end", func(w *svWorld) { x.end(w) }})
	case rWait:
		if w.waiter == 2 {
			ms = append(ms, svMove{"round: the watchdog says due", func(w *svWorld) {
				w.ok, w.waiter = true, 0
				w.round = rQuiesce
			}})
		}
		if w.main.canceled && x.flow != "a waiting round ignores its context" {
			ms = append(ms, svMove{"round: its context is done: leaves", func(w *svWorld) {
				if w.waiter == 1 {
					w.co.leave()
				}
				w.ok, w.waiter = false, 0
				w.round = rQuiesce
			}})
		}
	case rQuiesce:
		ms = append(ms, svMove{"round: quiesce: suspend the watchdog", func(w *svWorld) {
			w.watch.suspend()
			w.round = rQuiesced
		}})
	case rQuiesced:
		if w.watch.idle() {
			ms = append(ms, svMove{"round: quiesce: watchdog idle", func(w *svWorld) {
				w.round = rReturn
				if w.goexit {
					w.round = rGoexit
				}
			}})
		}
	case rGoexit:
		ms = append(ms, svMove{"round: goexit", func(w *svWorld) {
			if w.ok && (x.flow == "goexit arms whatever came since" || x.t.current(&w.co, w.flags)) {
				w.main.fireAfter(false)
			}
			w.round = rReturn
		}})
	case rReturn:
		ms = append(ms, svMove{"round: returns", func(w *svWorld) {
			if w.goexit {
				w.main.abort()
				w.goexit = false
				w.round = rNone
				return
			}
			if w.ok && w.main.runVer == w.main.ver && !w.main.reserved {
				w.sched = true
			}
			w.round = rNone
			if w.main.ret(w.ok) {
				w.round = rBegin
			}
		}})
	}
	return ms
}

// end is supervisor_loop.go's end, from the critical section on.
func (x *svExplorer) end(w *svWorld) {
	canceledBefore := w.ctxDone && w.actxSusp
	v, f := x.t.end(&w.co, w.res, w.ctxDone)
	w.flags = f
	w.ok = false
	switch v {
	case verdictLate:
		w.st.late++
	case verdictLateWait:
		w.st.late++
		w.waiter = 1
	case verdictSuccess:
		w.st.successes++
		w.ok = true
	case verdictError:
		w.st.errors++
		w.ok = true
	case verdictPanic:
		w.st.panics++
		w.ok = true
	case verdictPermanent, verdictPermanentSuspended:
		w.st.errors++
		if v == verdictPermanent || x.flow == "a permanent error suspends after a Suspend" {
			w.main.suspend()
		}
		if v == verdictPermanent {
			w.stopped, w.sched = true, false
		}
		w.perm = true
	case verdictCanceled:
		w.st.canceled++
	}
	if canceledBefore && w.res != returnedNil && v != verdictCanceled && v != verdictLate && v != verdictLateWait {
		x.failf("attempt %d, cancelled by Suspend before it returned, was not counted as cancelled", w.id)
	}
	if w.perm && canceledBefore {
		x.failf("attempt %d, cancelled by Suspend before it returned, set Err", w.id)
	}
	w.round = rQuiesce
	if v == verdictLateWait {
		w.round = rWait
	}
	if !w.timeout {
		w.round = rReturn
		if w.goexit {
			w.round = rGoexit
		}
	}
	if x.flow == "end does not quiesce the watchdog" && w.round == rQuiesce {
		w.round = rReturn
		if w.goexit {
			w.round = rGoexit
		}
	}
}

func (x *svExplorer) tickMoves(w *svWorld, ms []svMove) []svMove {
	switch w.tick {
	case tLock:
		ms = append(ms, svMove{"tick", func(w *svWorld) {
			act, again := x.t.tick(&w.co)
			w.again = again
			w.tick = tReturn
			switch act {
			case tickTimeout:
				if w.id != w.tickFor {
					x.failf("the watchdog armed for attempt %d timed out attempt %d", w.tickFor, w.id)
				}
				if w.actxSusp {
					x.failf("attempt %d, cancelled by Suspend, was timed out", w.id)
				}
				w.st.timeouts++
				w.timedOut = w.id
				w.tick = tCancel
			case tickSkip:
				w.st.skipped++
			case tickDue:
				if w.waiter != 1 {
					x.failf("the watchdog lets a round go that does not wait")
				}
				w.waiter = 2
			}
		}})
	case tCancel:
		ms = append(ms, svMove{"tick: cancel the attempt", func(w *svWorld) {
			if w.timedOut == w.id && !w.actx {
				w.actx = true
			}
			w.tick = tReturn
		}})
	case tReturn:
		ms = append(ms, svMove{"tick: returns", func(w *svWorld) {
			w.tick = tNone
			if w.watch.ret(w.again) {
				w.tick, w.tickFor = tLock, w.watchFor
			}
		}})
	}
	return ms
}

func (x *svExplorer) userMoves(w *svWorld, i int, ms []svMove) []svMove {
	u := &w.users[i]
	if u.pc >= svMaxOps || u.ops[u.pc] == 0 {
		return ms
	}
	op := u.ops[u.pc]
	name := fmt.Sprintf("caller %d: %s", i+1, svOpNames[op])
	next := func(w *svWorld) {
		u := &w.users[i]
		u.pc, u.ph = u.pc+1, uLock
	}
	switch u.ph {
	case uLock:
		ms = append(ms, svMove{name, func(w *svWorld) {
			u := &w.users[i]
			cancel := op == opSuspend || op == opStop
			if op == opStop {
				w.co.stops++
			}
			if x.flow != "FireAfter does not suspend the main Trigger first" || cancel {
				w.main.suspend()
			}
			cancelCur := x.t.supersede(&w.co, cancel)
			if w.waiter == 1 && !w.co.waiting {
				w.waiter = 0 // s.waiter = nil, as leave
			}
			w.stopDone = false
			w.quiet = op == opStop // no call since this Stop's
			u.target = 0
			if cancelCur {
				u.target = w.id
			}
			if cancel {
				w.halted, w.sched = true, false
				u.ph = uCancel
				return
			}
			w.main.fireAfter(op == opFire)
			if w.co.stops > 0 {
				// A Fire concurrent with Stop: "stop whatever calls
				// Fire first". Stop may undo it, or wait for its runs.
				w.racy = true
			}
			w.halted, w.stopped, w.sched = false, false, true
			next(w)
		}})
	case uCancel:
		ms = append(ms, svMove{name + ": cancel the attempt", func(w *svWorld) {
			u := &w.users[i]
			if u.target != 0 && u.target == w.id && !w.actx {
				w.actx, w.actxSusp = true, true
			}
			if op == opStop {
				u.ph = uStopM
				return
			}
			next(w)
		}})
	case uStopM:
		ms = append(ms, svMove{name + ": main.Stop suspends", func(w *svWorld) {
			// The Suspend that takes effect: it may undo a Fire made
			// since this Stop's own, as if that Fire had come first.
			w.main.suspend()
			w.halted, w.sched = true, false
			w.users[i].ph = uStopMW
		}})
	case uStopMW:
		if w.main.idle() {
			ms = append(ms, svMove{name + ": main idle", func(w *svWorld) {
				w.co.stops--
				if x.flow == "Stop stops the watchdog too" {
					w.users[i].ph = uStopW
					return
				}
				next(w)
				w.stopDone = w.quiet
			}})
		}
	case uStopW:
		ms = append(ms, svMove{name + ": watch.Stop suspends", func(w *svWorld) {
			w.watch.suspend()
			w.users[i].ph = uStopWW
		}})
	case uStopWW:
		if w.watch.idle() {
			ms = append(ms, svMove{name + ": watchdog idle; Stop returns", func(w *svWorld) {
				next(w)
				w.stopDone = w.quiet
			}})
		}
	}
	return ms
}

// check is called after every step.
func (x *svExplorer) check(w *svWorld) {
	c := &w.co
	switch {
	case c.chain && (w.main.armed || w.main.reserved):
		x.failf("chain while the main Trigger has a schedule of its own (armed %v, reserved %v)", w.main.armed, w.main.reserved)
	case w.timeout && c.busy && !c.cur.abandoned && !c.cur.canceled && w.round != rArm &&
		!w.watch.armed && !w.watch.reserved && w.tick != tLock:
		x.failf("attempt %d lost its Timeout: the watchdog is not armed", w.id)
	case c.chain && !c.busy && !c.waiting:
		x.failf("chain with no attempt in flight and no round waiting")
	case c.waiting && !c.chain:
		x.failf("a round waits without chain")
	case c.busy != (w.round == rArm || w.round == rTask || w.round == rEnd):
		x.failf("coord.busy is %v in round phase %d", c.busy, w.round)
	}
	st := &w.st
	ended := int(st.successes) + int(st.errors) + int(st.panics) + int(st.timeouts) + int(st.canceled)
	inTime := 0
	if c.busy && !c.cur.abandoned {
		inTime = 1
	}
	if int(st.attempts) != ended+inTime || st.late > st.timeouts {
		x.failf("inconsistent Stats %+v (busy %v)", *st, c.busy)
	}
	if w.stopDone && (w.round != rNone || w.tick != tNone || !w.main.idle() || !w.watch.idle()) {
		x.failf("Stop returned with a run in flight or a timer pending")
	}
}

// final is called when no step is possible.
func (x *svExplorer) final(w *svWorld) {
	stopping := func(ph uint8) bool {
		for _, u := range w.users[:w.nu] {
			if u.pc < svMaxOps && u.ops[u.pc] != 0 && u.ph == ph {
				return true
			}
		}
		return false
	}
	if w.watch.armed && w.watchLeft == 0 && (w.round == rWait || stopping(uStopWW)) ||
		w.main.armed && w.mainLeft == 0 && stopping(uStopMW) {
		return // waits for a timer that the budget keeps from firing
	}
	switch {
	case w.round == rWait && !w.watch.armed && !w.watch.running:
		x.failf("a round waits for a watchdog that will never tick")
	case w.round == rWait:
		x.failf("a round waits for a watchdog that will never tick")
	case w.round != rNone || w.tick != tNone:
		x.failf("a run is stuck (round phase %d, tick phase %d)", w.round, w.tick)
	case w.sched && !w.main.armed && !w.racy:
		x.failf("lost schedule: the latest Fire, or the latest attempt, asked for another, and nothing is pending")
	case !w.sched && w.main.armed:
		x.failf("a timer is pending after a Suspend or a permanent error")
	case w.watch.armed:
		x.failf("the watchdog is armed with no attempt in flight")
	}
	for i, u := range w.users[:w.nu] {
		if u.pc < svMaxOps && u.ops[u.pc] != 0 {
			x.failf("caller %d is stuck in %s", i+1, svOpNames[u.ops[u.pc]])
		}
	}
}

// visit explores every interleaving from w, depth first.
func (x *svExplorer) visit(w *svWorld) {
	switch x.memo[*w] {
	case svOnPath:
		x.failf("cycle: an interleaving came back to a state it had been in")
		return
	case svDone:
		return
	}
	x.memo[*w] = svOnPath
	ms := x.moves(w)
	if len(ms) == 0 {
		x.final(w)
	}
	for _, m := range ms {
		n := *w
		m.do(&n)
		x.edges++
		x.trace = append(x.trace, m.name)
		x.check(&n)
		if x.bad != "" {
			return
		}
		x.visit(&n)
		x.trace = x.trace[:len(x.trace)-1]
		if x.bad != "" {
			return
		}
	}
	x.memo[*w] = svDone
}

// svConfig is one starting point.
type svConfig struct {
	name string
	w    svWorld
}

// svSituations are moments at which the callers start, each reached by
// the steps named (from an idle Supervisor with a pending timer: Fire).
var svSituations = []struct {
	name  string
	steps []string // moves to take, by name, from a fired Supervisor
}{
	{"timer pending", nil},
	{"round started", []string{"main timer fires"}},
	{"attempt running", []string{"main timer fires", "round: begin", "round: arm the watchdog"}},
	{"attempt abandoned", []string{"main timer fires", "round: begin", "round: arm the watchdog", "watchdog timer fires", "tick", "tick: cancel the attempt", "tick: returns"}},
}

// svScripts are the callers' operations.
var svScripts = [][2][svMaxOps]uint8{
	{{}},
	{{opFire}},
	{{opFireAfter}},
	{{opSuspend}},
	{{opStop}},
	{{opSuspend, opFire}},
	{{opFire, opSuspend}},
	{{opSuspend, opFireAfter}},
	{{opFire}, {opSuspend}},
	{{opFire}, {opFire}},
	{{opSuspend}, {opFireAfter}},
	{{opStop}, {opFire}},
}

// svResultSets are the results the tasks may return.
var svResultSets = []struct {
	name string
	bits uint8
}{
	{"nil or an error", 1<<returnedNil | 1<<returnedError},
	{"a permanent error or a panic", 1<<returnedPermanent | 1<<returnedPanic},
	{"Goexit or nil", 1<<4 | 1<<returnedNil},
}

// svConfigs builds every configuration, with and without a Timeout; if
// small, only those with one caller.
func svConfigs(budget uint8, small bool) []svConfig {
	var cs []svConfig
	for _, timeout := range []bool{true, false} {
		for _, rs := range svResultSets {
			for _, sit := range svSituations {
				if !timeout && sit.name == "attempt abandoned" {
					continue
				}
				for _, sc := range svScripts {
					if small && sc[1][0] != 0 {
						continue
					}
					w := svWorld{timeout: timeout, results: rs.bits, mainLeft: budget, watchLeft: budget + 1}
					w.main.fireAfter(true) // Fire on an idle Supervisor
					w.co.gen = 1
					w.sched = true
					x := &svExplorer{t: svCoord, memo: map[svWorld]uint8{}}
					if !x.walk(&w, sit.steps) {
						continue
					}
					w.mainLeft, w.watchLeft = budget, budget+1
					var names []string
					for i, ops := range sc {
						w.users[i].ops = ops
						if ops[0] != 0 {
							w.nu = uint8(i + 1)
							var s []string
							for _, op := range ops {
								if op != 0 {
									s = append(s, svOpNames[op])
								}
							}
							names = append(names, strings.Join(s, ", "))
						}
					}
					cs = append(cs, svConfig{
						name: fmt.Sprintf("timeout %v, tasks return %s, %s, callers [%s]", timeout, rs.name, sit.name, strings.Join(names, "] [")),
						w:    w,
					})
				}
			}
		}
	}
	return cs
}

// walk takes the named steps from w, reporting whether each was possible.
func (x *svExplorer) walk(w *svWorld, steps []string) bool {
	for _, s := range steps {
		found := false
		for _, m := range x.moves(w) {
			if m.name == s {
				m.do(w)
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// svExplore explores every configuration with transitions t and flow, and
// returns the first violation and its interleaving, with the number of
// states and steps.
func svExplore(t svT, flow string, budget uint8, small bool) (bad, config string, trace []string, states, edges uint64) {
	for _, c := range svConfigs(budget, small) {
		x := &svExplorer{t: t, flow: flow, memo: map[svWorld]uint8{}}
		w := c.w
		x.visit(&w)
		states += uint64(len(x.memo))
		edges += x.edges
		if x.bad != "" {
			return x.bad, c.name, x.badAt, states, edges
		}
	}
	return "", "", nil, states, edges
}

// svBudget is how often each Trigger's timer may fire in an interleaving
// (the watchdog's, once more: its first tick is the Timeout), and whether to
// explore the small set of configurations (with one caller) only.
//
// By default: once, every configuration (seconds). Under the race detector
// or with -short: once, the small set. "long" (exploreDepth): twice, every
// configuration (half a minute). SUPERVISOR_EXPLORE_BUDGET=n sets the
// budget to n, over every configuration.
func svBudget(t *testing.T) (budget uint8, small bool) {
	if s := os.Getenv("SUPERVISOR_EXPLORE_BUDGET"); s != "" {
		var b uint8
		if _, err := fmt.Sscan(s, &b); err != nil || b == 0 || b > 4 {
			t.Fatalf("SUPERVISOR_EXPLORE_BUDGET=%q: want 1 to 4", s)
		}
		return b, false
	}
	if exploreDepth() == "long" {
		return 2, false
	}
	return 1, svRace || testing.Short()
}

func TestExploreSupervisor(t *testing.T) {
	start := time.Now()
	budget, small := svBudget(t)
	bad, config, trace, states, edges := svExplore(svCoord, "", budget, small)
	if bad != "" {
		t.Fatalf("%s\nin %s, after:\n  %s", bad, config, strings.Join(trace, "\n  "))
	}
	t.Logf("%d configurations, budget %d: %d states, %d steps, in %v",
		len(svConfigs(budget, small)), budget, states, edges, time.Since(start).Round(time.Millisecond))
}

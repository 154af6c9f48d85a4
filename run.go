package circulation

import (
	"context"
	"time"
)

// This file is the running side of a Trigger: what happens on the goroutine
// of a timer callback that owns the running bit, from the first iteration to
// the last, and how Suspend reaches the context of the iteration in flight.

// run is the iteration in flight: the version it runs for and the cancel
// function of its context.
type run struct {
	version uint32
	cancel  context.CancelFunc
}

// start is a timer callback for version v: it either runs the Func, leaves
// a reservation for the run in flight, or finds itself stale.
func (t *Trigger) start(v uint32) {
	for {
		s := t.state.Load()
		n, e := enter(s, v)
		if e == entryStale {
			return
		}
		if t.state.CompareAndSwap(s, n) {
			if e == entryRun {
				t.loop(v)
			}
			return
		}
	}
}

// loop runs the Func for version v, then again for as long as runs were
// reserved meanwhile, and arms the next timer if the last run asked for one.
// The caller holds the running bit; loop gives it up on every way out,
// including a panic or runtime.Goexit in the Func.
func (t *Trigger) loop(v uint32) {
	normal := false
	defer func() {
		if !normal {
			t.abort()
		}
	}()
	for {
		next, ok := t.iterate(v)
		s, x := t.finish(v, ok)
		if x == exitAgain {
			v = version(s)
			continue
		}
		// The running bit is given up: from here on, abort would take it
		// from whoever holds it now.
		normal = true
		if testHookLoopEnd != nil {
			testHookLoopEnd()
		}
		t.forgetLate()
		if x == exitArm {
			t.arm(version(s), next)
		}
		return
	}
}

// forgetLate drops what cancelBefore recorded for an iteration that will not
// begin, once the loop has given up the running bit. If another loop has
// taken the bit meanwhile, a record is for that loop's first iteration and
// stays: cancelBefore sets records only while the bit is set, and both hold
// runMu, so the check and the drop are one step for it.
func (t *Trigger) forgetLate() {
	t.runMu.Lock()
	if !running(t.state.Load()) {
		t.hasLate = false
	}
	t.runMu.Unlock()
}

// iterate runs the Func once with a fresh context.
func (t *Trigger) iterate(v uint32) (next time.Duration, ok bool) {
	ctx, cancel := context.WithCancel(context.Background())
	if testHookBegin != nil {
		testHookBegin()
	}
	t.begin(v, cancel)
	defer t.end(cancel)
	if t.onPanic != nil {
		defer func() {
			if r := recover(); r != nil {
				next, ok = 0, false
				t.onPanic(r)
			}
		}()
	}
	return t.f(ctx)
}

// finish publishes the end of an iteration (see finish in state.go).
func (t *Trigger) finish(v uint32, ok bool) (uint32, exit) {
	for {
		s := t.state.Load()
		n, x := finish(s, v, ok)
		if t.state.CompareAndSwap(s, n) {
			return n, x
		}
	}
}

// abort gives up the running bit while the Func panics or exits the
// goroutine (see abort in state.go).
func (t *Trigger) abort() {
	for {
		s := t.state.Load()
		n, x := abort(s)
		if t.state.CompareAndSwap(s, n) {
			t.forgetLate()
			if x == exitArm {
				t.arm(version(n), 0)
			}
			return
		}
	}
}

// begin publishes the context of an iteration that runs for version v.
func (t *Trigger) begin(v uint32, cancel context.CancelFunc) {
	t.runMu.Lock()
	defer t.runMu.Unlock()
	t.cur = run{version: v, cancel: cancel}
	if t.hasLate && newer(t.late, v) {
		cancel()
	}
	t.hasLate = false
}

// end withdraws the context published by begin and releases it.
func (t *Trigger) end(cancel context.CancelFunc) {
	t.runMu.Lock()
	t.cur = run{}
	t.runMu.Unlock()
	cancel()
}

// cancelBefore cancels the context of the iteration in flight if it runs for
// a version older than v (the version of a Suspend).
func (t *Trigger) cancelBefore(v uint32) {
	t.runMu.Lock()
	defer t.runMu.Unlock()
	if t.cur.cancel == nil {
		// The running bit was set when Suspend published v, but no
		// iteration has published its context: the next one has not begun
		// yet, and begin cancels it. Unless the loop has ended meanwhile:
		// then there is nothing to cancel, and a record left behind could
		// cancel an unrelated run once the version has moved half the
		// version space on. The loop clears the record as it ends (see
		// forgetLate), so a Suspend that comes later must not set it.
		if running(t.state.Load()) {
			t.late, t.hasLate = v, true
		}
		return
	}
	if newer(v, t.cur.version) {
		t.cur.cancel()
	}
}

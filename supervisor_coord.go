package circulation

// This file is how a Supervisor's parties agree on who keeps the schedule:
// the callers of Fire, FireAfter and Suspend, the rounds of the main Trigger
// (one attempt each) and the watchdog Trigger. Its transitions are pure
// functions of a coord, called with Supervisor.mu held; they change the
// coord and say what the caller must do next. The explorer of
// supervisor_explore_test.go runs these very functions in every
// interleaving of small configurations.
//
// Who keeps the schedule:
//
//   - Normally the main Trigger: a round returns the delay before the next
//     attempt, and Fire, FireAfter and Suspend act on the main Trigger.
//   - While an attempt overstays its Timeout (it is abandoned), the
//     watchdog: the main Trigger is still running the round that waits for
//     the task, so the watchdog times the due attempts (each a skip), until
//     the attempt returns; then the round waits for the watchdog's next due
//     time and returns (0, true), which the main Trigger turns into the next
//     attempt at once. This is chain.
//   - A Fire, FireAfter or Suspend hands the schedule back to the main
//     Trigger at once: it ends chain, and marks the attempt in flight as
//     superseded, so that its timeout starts no chain. Suspending the main
//     Trigger cancels the context of its round in flight, which lets a
//     waiting round go.
//
// The one rule that makes this exact: a caller of Fire, FireAfter and
// Suspend (and Stop, for its Suspend) does all it does, to the main Trigger
// and to the coord, in one critical section of Supervisor.mu, and it
// suspends the main Trigger first. A round that the main Trigger started before that Suspend and that
// has not begun its attempt then finds its context cancelled in begin (the
// Trigger cancels the context of a run in flight when it is suspended), and
// begins nothing; so every attempt that begins has a round whose result
// the main Trigger will use, unless a later call marks it superseded.

// coord is a Supervisor's coordination state, guarded by Supervisor.mu.
//
// Invariants (each checked by the explorer after every step):
//   - chain only while busy or waiting: the watchdog keeps the schedule only
//     for an abandoned attempt that is running, or for the round that waits
//     after it returned;
//   - chain only while the main Trigger has no schedule of its own: no timer
//     armed and no run reserved (it may have been suspended, by the
//     Trigger.Stop inside a Supervisor.Stop: then the round's context is
//     cancelled, and a waiting round leaves at once);
//   - waiting only with chain.
type coord struct {
	gen     uint64       // counts the Fire, FireAfter and Suspend calls
	busy    bool         // an attempt is in flight, in time or abandoned
	cur     attemptFlags // the attempt in flight, while busy
	chain   bool         // the watchdog keeps the schedule (see above)
	waiting bool         // a round whose abandoned attempt returned waits for the watchdog's next due time
	stops   uint32       // calls of Stop under way: each suspends the main Trigger again, outside mu
}

// attemptFlags are what the coord knows of the attempt in flight.
type attemptFlags struct {
	gen        uint64 // coord.gen when it began
	abandoned  bool   // timed out: the Supervisor no longer waits for it
	superseded bool   // a Fire, FireAfter or Suspend came while it ran: the schedule is the main Trigger's
	canceled   bool   // Suspend or Stop cancelled it
}

// supersede is the coord's part of a Fire or FireAfter (cancel false) or a
// Suspend (cancel true). The caller has suspended the main Trigger, in the
// same critical section, which cancelled the context of the round in
// flight: a round waiting for the watchdog goes on at once (see leave). The
// caller gives the main Trigger its new schedule after this.
//
// It reports whether the attempt in flight must be cancelled.
func (c *coord) supersede(cancel bool) (cancelCur bool) {
	c.gen++
	c.chain, c.waiting = false, false
	if c.busy {
		c.cur.superseded = true
		if cancel && !c.cur.canceled {
			c.cur.canceled = true
			cancelCur = true
		}
	}
	return cancelCur
}

// begin starts an attempt, unless the round's context is cancelled: a
// Fire, FireAfter or Suspend has suspended the main Trigger since the round
// started, and the main Trigger will ignore what it returns. It reports
// whether the attempt begins.
func (c *coord) begin(roundCanceled bool) bool {
	if roundCanceled {
		return false
	}
	c.busy = true
	c.cur = attemptFlags{gen: c.gen}
	return true
}

// A result is how a task returned.
type result uint8

const (
	returnedNil       result = iota // returned nil
	returnedError                   // returned an error not matching ErrPermanent
	returnedPermanent               // returned an error matching ErrPermanent
	returnedPanic                   // panicked or called runtime.Goexit
)

// A verdict is how the Supervisor accounts for an attempt that has ended.
type verdict uint8

const (
	verdictSuccess            verdict = iota // returned nil in time: reset the interval, run again after Base
	verdictError                             // failed in time: grow the interval, run again
	verdictPanic                             // panicked in time: grow the interval, run again
	verdictPermanent                         // stop the Supervisor, and report the error in Err
	verdictPermanentSuspended                // report the error in Err; a Suspend since it returned has stopped the Supervisor already
	verdictCanceled                          // Suspend or Stop cancelled it before it returned: not a failure, and it changes nothing
	verdictLate                              // returned after its Timeout: changes nothing
	verdictLateWait                          // returned after its Timeout, and the watchdog keeps the schedule: wait for it
)

// end accounts for the attempt in flight, which has returned with r;
// ctxDone reports whether its context was done when it returned. It
// returns the verdict and the attempt's flags.
//
// An attempt that Suspend or Stop cancelled before it returned (canceled,
// and its context done: Suspend marks it canceled before it cancels the
// context, and a timeout marks it abandoned before) is verdictCanceled
// whatever it returned, a permanent error or a panic included, except nil:
// that is a success. A Suspend that came after the return, before end, does
// not make it a cancelled attempt, but has already stopped the Supervisor:
// the main Trigger is left as it and the calls after it made it.
func (c *coord) end(r result, ctxDone bool) (verdict, attemptFlags) {
	f := c.cur
	c.busy, c.cur = false, attemptFlags{}
	switch {
	case f.abandoned && c.chain:
		c.waiting = true
		return verdictLateWait, f
	case f.abandoned:
		return verdictLate, f
	case r == returnedNil:
		return verdictSuccess, f
	case f.canceled && ctxDone:
		return verdictCanceled, f
	case r == returnedPermanent && f.canceled:
		return verdictPermanentSuspended, f
	case r == returnedPermanent:
		return verdictPermanent, f
	case r == returnedPanic:
		return verdictPanic, f
	}
	return verdictError, f
}

// A tickAction is what the watchdog does when its timer fires.
type tickAction uint8

const (
	tickNothing tickAction = iota // a stale or superseded tick
	tickTimeout                   // abandon the attempt in flight: cancel it with context.DeadlineExceeded, count a timeout
	tickSkip                      // the abandoned attempt still runs at a due time: count a skip
	tickDue                       // the abandoned attempt has returned and the next one is due: let the waiting round go (send it true)
)

// tick is the watchdog's callback. It reports what to do, and whether the
// watchdog must run again after the next delay (it keeps the schedule).
func (c *coord) tick() (tickAction, bool) {
	switch {
	case c.busy && !c.cur.abandoned:
		if c.cur.canceled {
			return tickNothing, false // no longer timed out
		}
		c.cur.abandoned = true
		if c.cur.superseded {
			return tickTimeout, false // the main Trigger has a schedule of its own
		}
		c.chain = true
		return tickTimeout, true
	case c.busy && c.chain:
		return tickSkip, true
	case c.chain && c.waiting:
		c.chain, c.waiting = false, false
		return tickDue, false
	}
	return tickNothing, false
}

// leave is a waiting round giving up its wait because its context was
// cancelled: every Fire, FireAfter and Suspend suspends the main Trigger,
// and so does the Trigger.Stop inside Supervisor.Stop, outside mu (which
// a Fire concurrent with Stop may have come before). Either way the main
// Trigger ignores the round's result, so the schedule is no longer the
// watchdog's to keep.
func (c *coord) leave() {
	c.chain, c.waiting = false, false
}

// current reports whether the result of the attempt with flags f may still
// arm the main Trigger: no Fire, FireAfter or Suspend has come since it
// began, and no Stop is under way. (Trigger.Stop suspends the main Trigger
// again without mu, so an arming made while a Stop runs could undo that
// Suspend; the run's own result is ignored after it, and so is this.)
func (c *coord) current(f attemptFlags) bool { return c.gen == f.gen && c.stops == 0 }

package circulation

import (
	"context"
	"errors"
	"time"
)

// round is the main Trigger's Func: one attempt.
func (s *Supervisor) round(tctx context.Context) (time.Duration, bool) {
	if testHookRound != nil {
		testHookRound()
	}
	a := s.begin(tctx)
	if a == nil {
		return 0, false
	}
	if s.policy.Timeout > 0 {
		s.watch.FireAfter(s.policy.Timeout)
	}
	err, panicked := s.call(tctx, a)
	return s.end(tctx, a, err, panicked)
}

// call runs the task, recovering a panic. The common path stays shallow:
// a Trigger's callback runs on a fresh goroutine, whose stack would have to
// grow if end ran inside the deferred function, at a cost larger than the
// rest of the attempt.
func (s *Supervisor) call(tctx context.Context, a *attempt) (err error, panicked bool) {
	returned := false
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			if s.notify != nil {
				err = &panicError{value: r}
			}
		} else if !returned {
			s.goexit(tctx, a)
		}
	}()
	err = s.task(a)
	returned = true
	return err, false
}

// goexit ends an attempt whose task called runtime.Goexit, which carries on
// once the deferred call in call returns: the main Trigger never sees a
// result, so goexit arms it, unless a Fire, FireAfter or Suspend has come
// since the attempt began or a Stop is under way (see coord.current). It
// holds mu while it does, as they do: the main Trigger is still running, so
// no round can begin meanwhile.
func (s *Supervisor) goexit(tctx context.Context, a *attempt) {
	var err error
	if s.notify != nil {
		err = &panicError{goexit: true}
	}
	if next, ok := s.end(tctx, a, err, true); ok {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.co.current(a.flags) {
			s.main.FireAfter(next)
		}
	}
}

// begin starts an attempt, or returns nil if a Fire, FireAfter or Suspend
// has suspended the main Trigger since it started the round: it cancelled
// tctx before it released mu, and the main Trigger ignores the round's
// result. The attempt it asked for is a round of its own.
func (s *Supervisor) begin(tctx context.Context) *attempt {
	var deadline time.Time
	if s.policy.Timeout > 0 {
		deadline = time.Now().Add(s.policy.Timeout)
	}
	a := &attempt{deadline: deadline}
	s.mu.Lock()
	if !s.co.begin(tctx.Err() != nil) {
		s.mu.Unlock()
		return nil
	}
	a.flags = s.co.cur
	s.cur = a
	c := s.stats.write()
	n := c.attempts.Add(1)
	c.running.Store(true)
	c.done()
	s.due.Store(noDue) // this is the attempt that was due
	if s.notify != nil {
		s.start, s.number = time.Now(), n
	}
	if s.perm.Load() != nil {
		s.perm.Store(nil)
	}
	s.mu.Unlock()
	return a
}

// end accounts for an attempt whose task has returned (or panicked) and
// returns what round returns to the main Trigger. Before it returns, the
// watchdog is idle: no tick of this attempt can reach the next one.
func (s *Supervisor) end(tctx context.Context, a *attempt, err error, panicked bool) (time.Duration, bool) {
	ctxDone := !a.cancel(context.Canceled)
	if testHookEnd != nil {
		testHookEnd()
	}
	r := s.random() // before mu: f may call the Supervisor
	res := returnedNil
	var hint time.Duration // RetryAfter's, if hinted
	hinted := false
	switch {
	case panicked:
		res = returnedPanic
	case err == nil:
	case errors.Is(err, ErrPermanent):
		res = returnedPermanent
	default:
		res = returnedError
		hint, hinted = retryHint(err)
	}
	s.mu.Lock()
	v, f := s.co.end(res, ctxDone)
	a.flags = f
	s.cur = nil
	var (
		delay time.Duration
		ok    bool
		w     chan bool
	)
	c := s.stats.write()
	c.running.Store(false)
	switch v {
	case verdictLate:
		c.late.Add(1)
	case verdictLateWait:
		c.late.Add(1)
		w = make(chan bool, 1)
		s.waiter = w
	case verdictSuccess:
		c.successes.Add(1)
		c.consecutive.Store(0)
		s.interval = s.policy.next(s.interval, succeeded, false)
		delay, ok = s.delay(r), true
	case verdictError:
		c.errors.Add(1)
		delay, ok = s.fail(errored, r), true
		if hinted {
			delay = s.policy.hint(hint)
			s.stats.delay.Store(int64(delay))
		}
	case verdictPanic:
		c.panics.Add(1)
		delay, ok = s.fail(errored, r), true
	case verdictPermanent, verdictPermanentSuspended:
		c.errors.Add(1)
		c.consecutive.Add(1)
		c.delay.Store(0) // no delay is drawn: nothing is scheduled
	case verdictCanceled:
		c.canceled.Add(1) // Suspend or Stop has superseded this round anyway
	}
	c.done()
	switch v {
	case verdictSuccess, verdictError, verdictPanic:
		if s.co.current(f) {
			s.setDue(delay)
		}
	case verdictPermanent:
		s.due.Store(noDue)
	}
	if s.notify != nil {
		s.postEnd(v, f, err, delay)
	}
	if v == verdictPermanent || v == verdictPermanentSuspended {
		// Suspend before Err reports the error, and before any Fire can
		// come in after it: a Fire made once Err does starts the
		// Supervisor again.
		if v == verdictPermanent {
			s.main.Suspend()
		}
		perm := err // allocated only on this path
		s.perm.Store(&perm)
		s.signal(err)
	}
	s.mu.Unlock()
	if s.notify != nil {
		if spent := s.notify.deliver(); ok {
			delay = shorten(delay, spent)
		}
	}
	if w != nil {
		// The watchdog keeps the schedule: it sends true when the next
		// attempt falls due. Every Fire, FireAfter, Suspend and Stop
		// cancels tctx (see coord.leave).
		select {
		case ok = <-w:
		case <-tctx.Done():
			s.mu.Lock()
			if s.waiter == w {
				s.co.leave()
				s.waiter = nil
			}
			s.mu.Unlock()
		}
	}
	s.quiesce()
	return delay, ok
}

// tick is the watchdog's Func. Armed by round for the Timeout, it abandons
// the attempt in flight if it is still running; then, re-armed by its own
// results, it counts the due times that find it still running, and finally
// lets round go on when the next attempt falls due after the late one
// returned.
func (s *Supervisor) tick(context.Context) (time.Duration, bool) {
	r := s.random() // before mu: f may call the Supervisor
	s.mu.Lock()
	act, again := s.co.tick()
	var (
		d        time.Duration
		timedOut *attempt
	)
	switch act {
	case tickTimeout:
		timedOut = s.cur
		c := s.stats.write()
		c.timeouts.Add(1)
		d = s.fail(failed, r)
		c.done()
	case tickSkip:
		c := s.stats.write()
		c.skipped.Add(1)
		d = s.fail(failed, r)
		c.done()
	case tickDue:
		s.waiter <- true
		s.waiter = nil
		s.setDue(0)
	}
	if again {
		s.setDue(d)
	}
	if s.notify != nil && (act == tickTimeout || act == tickSkip) {
		s.postTick(act, d, again)
	}
	s.mu.Unlock()
	if timedOut != nil {
		timedOut.cancel(context.DeadlineExceeded) // without mu: it calls the cancels of derived contexts (see cancelContext.cancel)
	}
	if s.notify != nil {
		d = shorten(d, s.notify.deliver())
	}
	return d, again
}

// quiesce stops the watchdog and waits for a tick in flight, which needs mu:
// the caller must not hold it.
func (s *Supervisor) quiesce() {
	if s.policy.Timeout > 0 {
		_ = s.watch.Stop(context.Background())
	}
}

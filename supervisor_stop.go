package circulation

import "context"

// A stopSignal is closed, with err set before, at the next permanent stop
// (err is the error) or at Close (err is nil). Both are written with
// Supervisor.mu held; Wait reads err after done is closed.
type stopSignal struct {
	done chan struct{}
	err  error
}

// Stop suspends the Supervisor, then waits until no attempt is running (an
// abandoned one included) and none of its timers is pending or executing.
// It returns nil then, or ctx.Err() if ctx is done first.
//
// A stopped Supervisor holds no goroutine and no timer, and it can be fired
// again. As with Trigger.Stop, the task must not call Stop with a context
// that outlives it: it would wait for itself. (The task's own context is
// cancelled by the Suspend, so Stop with it returns at once.)
func (s *Supervisor) Stop(ctx context.Context) error {
	if a := s.suspend(true); a != nil {
		a.cancel(context.Canceled)
	}
	if testHookStop != nil {
		testHookStop()
	}
	// The watchdog is armed only by rounds, each of which stops it and
	// waits for its tick before it returns (see quiesce): once the main
	// Trigger is idle, so is the watchdog. Stopping it here as well would
	// take the Timeout away from an attempt that a Fire concurrent with
	// Stop started.
	err := s.main.Stop(ctx)
	s.mu.Lock()
	s.co.stops--
	s.mu.Unlock()
	return err
}

// Close stops the Supervisor as Stop does, and closes it: every later Fire
// and FireAfter does nothing, and Wait returns. It returns nil once no
// attempt is running and none of its timers is pending or executing, or
// ctx.Err() if ctx is done first. Close may be called more than once; each
// call waits as Stop does. Called from inside the task with the task's own
// context, it closes the Supervisor and returns nil without waiting for
// the attempt in flight, which is its caller.
func (s *Supervisor) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.co.stops++
	s.due.Store(noDue)
	var cur *attempt
	if s.supersede(true) {
		cur = s.cur
	}
	a, _ := ctx.(*attempt)
	inside := a != nil && a == s.cur
	s.signal(nil)
	s.mu.Unlock()
	if cur != nil {
		cur.cancel(context.Canceled)
	}
	// Close the main Trigger too, so that nothing can arm it again: an
	// arming from a round already under way is refused as well.
	err := s.main.Close(ctx)
	s.mu.Lock()
	s.co.stops--
	s.mu.Unlock()
	if inside {
		return nil
	}
	return err
}

// Wait waits until the Supervisor stops on a permanent error, and returns
// that error. If it has stopped on one already (Err reports it), Wait
// returns it at once. Otherwise it returns the error of the first
// permanent stop after the call, even if a Fire has started the
// Supervisor again by the time Wait returns; nil if the Supervisor is
// closed first (see Close), for then no attempt runs again; or ctx.Err()
// if ctx is done first. Any number of goroutines may wait at once. Wait
// may return before WithNotify's function has received the event of the
// permanent stop; Stop and Close wait for it.
func (s *Supervisor) Wait(ctx context.Context) error {
	s.mu.Lock()
	if err := s.Err(); err != nil || s.closed {
		s.mu.Unlock()
		return err
	}
	if s.sig == nil {
		s.sig = &stopSignal{done: make(chan struct{})}
	}
	sig := s.sig
	s.mu.Unlock()
	select {
	case <-sig.done:
		return sig.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// signal wakes the goroutines in Wait with err. It runs with mu held.
func (s *Supervisor) signal(err error) {
	if s.sig != nil {
		s.sig.err = err
		close(s.sig.done)
		s.sig = nil
	}
}

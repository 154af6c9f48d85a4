package circulation

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// ErrPermanent marks an error that retrying cannot fix. A task whose error
// matches it (errors.Is) stops its Supervisor. Wrap an error with Permanent,
// or with fmt.Errorf("...: %w", ErrPermanent).
var ErrPermanent = errors.New("circulation: permanent error")

// Permanent returns an error that wraps err and matches ErrPermanent.
// Its message is err's. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// A Supervisor runs a task again and again, waiting between attempts as its
// Backoff says, and never runs two attempts at once, not even when one
// overstays its Timeout. It is built on a Trigger: Fire runs an attempt now,
// and Suspend and Stop behave as the Trigger's.
//
// The rules, each checked by a test:
//
//   - Each attempt gets a context that is cancelled at the Timeout, with
//     context.DeadlineExceeded (its Deadline reports when). The delay after
//     an attempt is counted from its end, or from its Timeout.
//   - An attempt still running at its Timeout is abandoned: it counts as a
//     timeout and the interval grows, and the Supervisor stops waiting for
//     it, but no other attempt starts while it runs. Each time the next
//     attempt falls due meanwhile, it is skipped (counted in Skipped) and
//     the interval grows again. When the abandoned attempt returns, its
//     result is counted in Late and changes nothing else; the next attempt
//     starts when the last delay chosen runs out.
//   - An attempt that returns an error matching ErrPermanent stops the
//     Supervisor, as a Suspend at its return would: a Fire made while it
//     ran is dropped with the schedule, and one made once Err reports the
//     error starts the Supervisor again. A panic in the task (or
//     runtime.Goexit) is recovered, counted in Panics and treated as an
//     error. An attempt cancelled by Suspend or Stop is not a failure: if it
//     then returns an error, it is counted in Canceled.
//   - Fire and FireAfter follow the Trigger: the latest call wins, and an
//     attempt that falls due while another runs starts right after it,
//     without being counted as skipped. They supersede the backoff schedule,
//     not the Timeout of the attempt in flight.
//
// A Supervisor must be created with Supervise; the zero value is not
// usable. Its methods are safe for concurrent use, including from inside
// the task (but see Stop), and none of them blocks except Stop. Stats never
// waits for an attempt.
//
// An attempt that finishes in time costs no goroutine besides the one its
// Scheduler runs it on: the task runs there, directly, and a second Trigger
// (the watchdog, armed for Timeout) takes over only if it overstays.
type Supervisor struct {
	task   func(context.Context) error
	policy Backoff        // validated
	rand   func() float64 // called with mu held, so never concurrently
	main   *Trigger       // runs the attempts, on its own goroutine, one at a time
	watch  *Trigger       // times out the attempt in flight, then keeps the schedule while it overstays

	// mu guards the fields below and orders every update of stats. It is
	// held only for bookkeeping, never while the task runs or while waiting.
	mu       sync.Mutex
	cur      *attempt      // the attempt in flight, in time or abandoned; written by round, read by tick and supersede
	interval time.Duration // the delay rule's interval, before jitter
	chain    bool          // the watchdog keeps the schedule: the attempt in flight was abandoned, and no Fire, FireAfter or Suspend came since
	waiter   chan bool     // set by round after a late completion while chain is set: the watchdog sends true when the next attempt falls due, supersede sends false
	gen      uint64        // counts the calls of supersede

	stats counters
	perm  atomic.Pointer[error] // the permanent error that stopped the Supervisor; cleared when the next attempt starts
}

// A SuperviseOption configures a Supervisor in Supervise.
//
// It is a type of its own, not an Option: Bind's options configure a bare
// Trigger (WithPanicHandler makes no sense for a Supervisor, which always
// recovers panics), and the Backoff holds only the pure delay rule, so that
// it stays plain data. The options supply what the rule runs on.
type SuperviseOption interface {
	applySupervise(*superviseOptions)
}

type superviseOptions struct {
	sched Scheduler
	rand  func() float64
}

type superviseOptionFunc func(*superviseOptions)

func (f superviseOptionFunc) applySupervise(o *superviseOptions) { f(o) }

// WithScheduler makes the Supervisor run its attempts, time its delays and
// its Timeout on s. Without it, or with a nil s, it uses RuntimeScheduler.
func WithScheduler(s Scheduler) SuperviseOption {
	return superviseOptionFunc(func(o *superviseOptions) { o.sched = s })
}

// WithRand makes the Supervisor draw the random numbers of its jitter from
// f, which must return numbers in [0, 1): the Float64 method of a
// *rand.Rand from math/rand/v2 with a fixed seed, or a constant in tests.
// The Supervisor never calls f concurrently with itself. Without it, or
// with a nil f, it uses math/rand/v2's Float64.
func WithRand(f func() float64) SuperviseOption {
	return superviseOptionFunc(func(o *superviseOptions) { o.rand = f })
}

// Supervise returns a Supervisor that runs task under the policy b. It
// starts idle: nothing runs until the first Fire or FireAfter.
//
// Supervise panics if task is nil or if b is invalid (see Backoff); the
// message names the offending field.
func Supervise(task func(ctx context.Context) error, b Backoff, opts ...SuperviseOption) *Supervisor {
	if task == nil {
		panic("circulation: nil task")
	}
	o := superviseOptions{}
	for _, opt := range opts {
		opt.applySupervise(&o)
	}
	if o.rand == nil {
		o.rand = rand.Float64
	}
	s := &Supervisor{task: task, policy: b.validated(), rand: o.rand}
	s.interval = s.policy.Base
	s.main = Bind(o.sched, s.round)
	s.watch = Bind(o.sched, s.tick)
	return s
}

// Fire is shorthand for FireAfter(0).
func (s *Supervisor) Fire() { s.FireAfter(0) }

// FireAfter arranges for an attempt after d, superseding every earlier
// Fire, FireAfter and Suspend and the backoff schedule, as Trigger.FireAfter
// does. If an attempt is running when d has passed, the next one starts as
// soon as it returns. An attempt in flight keeps its Timeout.
func (s *Supervisor) FireAfter(d time.Duration) {
	s.supersede(false)
	s.main.FireAfter(d)
}

// Suspend supersedes every earlier Fire and FireAfter and the backoff
// schedule: nothing runs until the next Fire or FireAfter. If an attempt is
// running, its context is cancelled and it is no longer timed out, but
// Suspend does not wait for it to return: Stop does.
func (s *Supervisor) Suspend() {
	s.main.Suspend() // first: see begin
	s.supersede(true)
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
	s.Suspend()
	err := s.main.Stop(ctx)
	if werr := s.watch.Stop(ctx); err == nil {
		err = werr
	}
	return err
}

// Err returns the permanent error that stopped the Supervisor, as the task
// returned it, or nil. It is cleared when the next attempt starts.
func (s *Supervisor) Err() error {
	if p := s.perm.Load(); p != nil {
		return *p
	}
	return nil
}

// supersede is what Fire, FireAfter and Suspend do to the Supervisor's own
// state. The watchdog stops keeping the schedule, a round waiting for it is
// let go, and the attempt in flight is marked so that, if it times out, the
// watchdog does not start a schedule of its own: the caller is about to give
// the main Trigger one. With cancel (Suspend), the attempt is also cancelled
// and no longer timed out.
//
// supersede runs before the caller acts on the main Trigger, so that any
// attempt it does not mark begins after it, and ends with a schedule on the
// main Trigger or the watchdog: never with none. The price is one narrow
// race: an attempt of the old schedule whose round had started but not yet
// begun when supersede ran is not marked, so if it overstays, the watchdog
// keeps the old schedule until it returns (counting skips), and the attempt
// the caller asked for may start up to one delay late.
func (s *Supervisor) supersede(cancel bool) {
	s.mu.Lock()
	s.gen++
	stop := s.chain
	s.chain = false
	if s.waiter != nil {
		s.waiter <- false // buffered, and sent to only once: set to nil with it
		s.waiter = nil
	}
	var canceled *attempt
	if a := s.cur; a != nil {
		a.superseded = true
		if cancel && !a.canceled {
			a.canceled = true
			canceled = a
			stop = true
		}
	}
	s.mu.Unlock()
	if canceled != nil {
		canceled.cancel(context.Canceled) // without mu: see attempt.cancel
	}
	if stop {
		s.watch.Suspend()
	}
}

// round is the main Trigger's Func: one attempt.
func (s *Supervisor) round(tctx context.Context) (time.Duration, bool) {
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
		if recover() != nil {
			panicked = true
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
// result, so goexit arms it, unless a Fire, FireAfter or Suspend has given
// it a schedule since the attempt began. The main Trigger is running, so no
// callback of its can start round while mu is held.
func (s *Supervisor) goexit(tctx context.Context, a *attempt) {
	if next, ok := s.end(tctx, a, nil, true); ok {
		s.mu.Lock()
		if s.gen == a.gen {
			s.main.FireAfter(next)
		}
		s.mu.Unlock()
	}
}

// begin starts an attempt, or returns nil if the round's context is already
// cancelled. Suspend cancels the main Trigger's context before it takes mu,
// so a round that starts after Suspend's supersede sees it cancelled here,
// and a round that starts before is marked and cancelled by it.
func (s *Supervisor) begin(tctx context.Context) *attempt {
	var deadline time.Time
	if s.policy.Timeout > 0 {
		deadline = time.Now().Add(s.policy.Timeout)
	}
	a := &attempt{deadline: deadline}
	s.mu.Lock()
	if tctx.Err() != nil {
		s.mu.Unlock()
		return nil
	}
	a.gen = s.gen
	s.cur = a
	c := s.stats.write()
	c.attempts.Add(1)
	c.running.Store(true)
	c.done()
	s.mu.Unlock()
	if s.perm.Load() != nil {
		s.perm.Store(nil)
	}
	return a
}

// end accounts for an attempt whose task has returned (or panicked) and
// returns what round returns to the main Trigger. Before it returns, the
// watchdog is idle: no tick of this attempt can reach the next one.
func (s *Supervisor) end(tctx context.Context, a *attempt, err error, panicked bool) (time.Duration, bool) {
	a.cancel(context.Canceled)
	s.mu.Lock()
	s.cur = nil
	c := s.stats.write()
	c.running.Store(false)
	if a.abandoned {
		// A late completion: it resets nothing. If the watchdog still
		// keeps the schedule, wait for the next attempt's due time.
		c.late.Add(1)
		c.done()
		if !s.chain {
			s.mu.Unlock()
			s.quiesce()
			return 0, false
		}
		w := make(chan bool, 1)
		s.waiter = w
		s.mu.Unlock()
		due := false
		select {
		case due = <-w:
		case <-tctx.Done(): // Suspend or Stop
		}
		s.mu.Lock()
		s.chain, s.waiter = false, nil
		s.mu.Unlock()
		s.quiesce()
		return 0, due
	}
	var delay time.Duration
	ok := true
	switch {
	case panicked:
		c.panics.Add(1)
		delay = s.fail(errored)
	case err == nil:
		c.successes.Add(1)
		c.consecutive.Store(0)
		s.interval = s.policy.next(s.interval, succeeded)
		delay = s.draw()
	case errors.Is(err, ErrPermanent):
		c.errors.Add(1)
		c.consecutive.Add(1)
		// Suspend before Err reports the error: a Fire made once Err
		// does starts the Supervisor again.
		s.main.Suspend()
		perm := err // allocated only on this path
		s.perm.Store(&perm)
		ok = false
	case a.canceled:
		c.canceled.Add(1)
		ok = false // Suspend or Stop has superseded this round anyway
	default:
		c.errors.Add(1)
		delay = s.fail(errored)
	}
	c.done()
	s.mu.Unlock()
	s.quiesce()
	return delay, ok
}

// tick is the watchdog's Func. Armed by round for the Timeout, it abandons
// the attempt in flight if it is still running; then, re-armed by its own
// results, it counts the due times that find it still running, and finally
// lets round go on when the next attempt falls due after the late one
// returned.
func (s *Supervisor) tick(context.Context) (time.Duration, bool) {
	s.mu.Lock()
	d, ok, timedOut := s.due()
	s.mu.Unlock()
	if timedOut != nil {
		timedOut.cancel(context.DeadlineExceeded) // without mu: see attempt.cancel
	}
	return d, ok
}

// due does tick's work with mu held. It returns the attempt it abandons, if
// any, for tick to cancel.
func (s *Supervisor) due() (time.Duration, bool, *attempt) {
	a := s.cur
	switch {
	case a != nil && !a.abandoned:
		if a.canceled {
			return 0, false, nil
		}
		a.abandoned = true
		c := s.stats.write()
		c.timeouts.Add(1)
		d := s.fail(failed)
		c.done()
		if a.superseded {
			return 0, false, a // the main Trigger has a schedule of its own
		}
		s.chain = true
		return d, true, a
	case a != nil && s.chain:
		c := s.stats.write()
		c.skipped.Add(1)
		d := s.fail(failed)
		c.done()
		return d, true, nil
	case a == nil && s.chain && s.waiter != nil: // end sets waiter in the critical section that clears cur
		s.chain = false
		s.waiter <- true
		s.waiter = nil
	}
	return 0, false, nil
}

// quiesce stops the watchdog and waits for a tick in flight, which needs mu:
// the caller must not hold it.
func (s *Supervisor) quiesce() {
	if s.policy.Timeout > 0 {
		_ = s.watch.Stop(context.Background())
	}
}

// fail accounts for a failure: the interval follows the delay rule, and a
// new delay is drawn. It runs with mu held, inside a stats write.
func (s *Supervisor) fail(o outcome) time.Duration {
	s.stats.consecutive.Add(1)
	s.interval = s.policy.next(s.interval, o)
	return s.draw()
}

// draw returns the delay for the current interval and records it. It runs
// with mu held, inside a stats write.
func (s *Supervisor) draw() time.Duration {
	d := s.policy.delay(s.interval, s.rand())
	s.stats.delay.Store(int64(d))
	return d
}

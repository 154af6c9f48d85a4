package circulation

import (
	"context"
	"errors"
	"math"
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

// RetryAfter returns an error that wraps err and asks the Supervisor to
// make its next attempt after d, as an HTTP Retry-After header does. Its
// message is err's. RetryAfter(d, nil) is nil.
//
// A task that returns it (errors.As finds it through wraps) fails as with
// any other error: Errors, ConsecutiveFailures and the interval of the
// delay rule change as they would, but the delay waited is d, not the one
// the rule draws: at least zero, at most the Backoff's Max, and without
// jitter, since it is the server's instruction. An error that also
// matches ErrPermanent stops the Supervisor instead, and one returned
// after the Timeout, or after Suspend or Stop cancelled the attempt,
// changes nothing, as any other error would.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err, d}
}

type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// retryHint returns the delay RetryAfter put in err, if it did. It is a
// function of its own so that only an error pays for errors.As.
func retryHint(err error) (time.Duration, bool) {
	var e *retryAfterError
	if errors.As(err, &e) {
		return e.after, true
	}
	return 0, false
}

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
//     error.
//   - An attempt whose context Suspend or Stop cancelled before it returned
//     is not a failure, whatever it then returns: an error, a permanent one
//     included, a panic or runtime.Goexit counts in Canceled and nowhere
//     else, and changes neither the interval nor Err. (One that returns nil
//     counts as a success.) No Fire made after a Suspend is dropped: a
//     permanent error returned before the Suspend is still reported by Err,
//     but the schedule is the Suspend's and the calls' after it.
//   - Fire and FireAfter follow the Trigger: the latest call wins, and an
//     attempt that falls due while another runs starts right after it,
//     without being counted as skipped. They supersede the backoff schedule,
//     not the Timeout of the attempt in flight. An attempt has begun when
//     Stats counts it: a Fire that returns before then asks for that very
//     attempt (the one the schedule was about to begin is dropped), and one
//     that comes after asks for one more, right after it returns, even if
//     it returns late.
//   - Close is Stop for good: no Fire or FireAfter after it runs anything.
//     Wait returns the permanent error that stops the Supervisor, and
//     Running and Stats tell what it is doing, without a lock.
//
// A Supervisor must be created with Supervise; the zero value is not
// usable. Its methods are safe for concurrent use, including from inside
// the task and the random source (but see Stop), and none of them blocks
// except Stop. Stats never waits, and takes no lock. Fire, FireAfter and
// Suspend hold the Supervisor's mutex while they act on its Triggers, so a
// Scheduler given with WithScheduler must not call them from inside its
// AfterFunc or a Timer's Stop.
//
// An attempt that finishes in time costs no goroutine besides the one its
// Scheduler runs it on: the task runs there, directly, and a second Trigger
// (the watchdog, armed for Timeout) takes over only if it overstays.
type Supervisor struct {
	task     func(context.Context) error
	policy   Backoff        // validated
	jittered bool           // policy draws random numbers (see random)
	randMu   sync.Mutex     // held while rand runs, so that it never runs concurrently
	rand     func() float64 // called without mu
	main     *Trigger       // runs the attempts, on its own goroutine, one at a time
	watch    *Trigger       // times out the attempt in flight, then keeps the schedule while it overstays

	// mu guards the fields below and orders every update of stats. It is
	// held for bookkeeping, and by Fire, FireAfter and Suspend while they
	// act on main; never while the task or the random source runs, and
	// never while waiting. See supervisor_coord.go.
	mu       sync.Mutex
	co       coord         // who keeps the schedule
	cur      *attempt      // the attempt in flight while co.busy, for cancelling it
	interval time.Duration // the delay rule's interval, before jitter
	waiter   chan bool     // made by a round that waits for the watchdog; buffered, sent true once by tick; nil once it is sent to or left

	closed bool        // Close was called: Fire and FireAfter do nothing
	notify *notifier   // WithNotify's, or nil
	start  time.Time   // when the attempt in flight began, if notify is set
	number uint64      // the attempt in flight's number, if notify is set
	sig    *stopSignal // what Wait waits on; nil until a Wait needs it, and after it is signalled

	epoch time.Time    // when Supervise ran: due times are kept relative to it
	due   atomic.Int64 // the next attempt's due time, in nanoseconds since epoch, or noDue; written with mu held

	stats counters
	perm  atomic.Pointer[error] // the permanent error that stopped the Supervisor; cleared when the next attempt starts
}

// A stopSignal is closed, with err set before, at the next permanent stop
// (err is the error) or at Close (err is nil). Both are written with
// Supervisor.mu held; Wait reads err after done is closed.
type stopSignal struct {
	done chan struct{}
	err  error
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
	sched  Scheduler
	rand   func() float64
	notify func(AttemptEvent)
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
// Without it, or with a nil f, it uses math/rand/v2's Float64.
//
// The Supervisor never calls f concurrently with itself, and calls it
// holding none of its own locks, so f may call the Supervisor's methods.
// It calls f only with a policy that has jitter, once as each attempt ends
// and once each time the watchdog runs (at a Timeout, and at each due time
// while an attempt overstays); the delay those lead to, if any, uses that
// number.
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
	if o.notify != nil {
		s.notify = &notifier{f: o.notify}
	}
	s.jittered = s.policy.Jitter != 0 || s.policy.JitterMode == JitterFull
	s.interval = s.policy.Base
	s.epoch = time.Now()
	s.due.Store(noDue)
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
//
// On a closed Supervisor it does nothing.
func (s *Supervisor) FireAfter(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock() // also if the Scheduler panics
	if s.closed {
		return
	}
	s.supersede(false)
	s.setDue(d)
	s.main.FireAfter(d)
}

// Suspend supersedes every earlier Fire and FireAfter and the backoff
// schedule: nothing runs until the next Fire or FireAfter. If an attempt is
// running, its context is cancelled and it is no longer timed out, but
// Suspend does not wait for it to return: Stop does.
func (s *Supervisor) Suspend() {
	if a := s.suspend(false); a != nil {
		a.cancel(context.Canceled) // without mu: it calls the cancels of derived contexts (see cancelContext.cancel)
	}
}

// suspend is the critical section of Suspend, and of Stop, which also
// counts itself in co.stops. It returns the attempt to cancel, if any.
func (s *Supervisor) suspend(stop bool) *attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stop {
		s.co.stops++
	}
	s.due.Store(noDue)
	if s.supersede(true) {
		return s.cur
	}
	return nil
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

// noDue is Supervisor.due when no attempt is scheduled.
const noDue = math.MinInt64

// setDue records that the next attempt is due d from now. It runs with mu
// held. time.Since of a Time with a monotonic reading reads only the
// monotonic clock, which costs less than time.Now.
func (s *Supervisor) setDue(d time.Duration) {
	s.due.Store(int64(time.Since(s.epoch) + max(d, 0)))
}

// Next returns when the next attempt is due, by the runtime's clock, or the
// zero Time if none is scheduled: before the first Fire, while an attempt
// runs and nothing asked for another, after Suspend, Stop, Close or a
// permanent error. A due time may have passed: while an attempt runs, the
// next one starts when it returns. After an attempt, it is the attempt's
// end plus the delay drawn; while an abandoned attempt runs, the next due
// time of the watchdog, at which the attempt would be skipped. Next takes
// no lock, as Stats does.
func (s *Supervisor) Next() time.Time {
	d := s.due.Load()
	if d == noDue {
		return time.Time{}
	}
	return s.epoch.Add(time.Duration(d))
}

// Running reports whether an attempt is running, in time or abandoned. It
// takes no lock, as Stats does.
func (s *Supervisor) Running() bool { return s.stats.running.Load() }

// Err returns the permanent error that stopped the Supervisor, as the task
// returned it, or nil. It reports the error from the moment the attempt is
// accounted for in Stats, and is cleared when the next attempt starts. An
// attempt whose context Suspend or Stop cancelled before it returned never
// sets it.
func (s *Supervisor) Err() error {
	if p := s.perm.Load(); p != nil {
		return *p
	}
	return nil
}

// supersede is what Fire, FireAfter and Suspend do before they give the
// main Trigger its new schedule, with mu held: suspend the main Trigger
// first, so that a round it started earlier and that has not begun its
// attempt begins none (see begin), then hand the schedule back to it (see
// coord.supersede). It reports whether the attempt in flight, s.cur, must
// be cancelled.
func (s *Supervisor) supersede(cancel bool) bool {
	s.main.Suspend()
	return s.co.supersede(cancel)
}

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

// postEnd posts the event of an attempt that ended with verdict v, flags
// f, error err and drawn delay. It runs with mu held, after the stats
// write.
func (s *Supervisor) postEnd(v verdict, f attemptFlags, err error, delay time.Duration) {
	now := time.Now()
	ev := AttemptEvent{
		Attempt:             s.number,
		Err:                 err,
		Start:               s.start,
		Duration:            now.Sub(s.start),
		ConsecutiveFailures: s.stats.consecutive.Load(),
	}
	switch v {
	case verdictSuccess:
		ev.Outcome = AttemptSucceeded
	case verdictError:
		ev.Outcome = AttemptFailed
	case verdictPanic:
		ev.Outcome = AttemptPanicked
	case verdictPermanent, verdictPermanentSuspended:
		ev.Outcome = AttemptStopped
	case verdictCanceled:
		ev.Outcome = AttemptCanceled
	default:
		ev.Outcome = AttemptLate
	}
	switch v {
	case verdictSuccess, verdictError, verdictPanic:
		ev.Next, ev.Scheduled = delay, s.co.current(f)
	}
	s.notify.post(ev)
}

// postTick posts the event of a timeout or a skip, after which the watchdog
// runs again after d if again. It runs with mu held, after the stats write.
func (s *Supervisor) postTick(act tickAction, d time.Duration, again bool) {
	now := time.Now()
	ev := AttemptEvent{
		Outcome:             AttemptSkipped,
		Attempt:             s.number,
		Start:               now,
		ConsecutiveFailures: s.stats.consecutive.Load(),
		Next:                d,
		Scheduled:           again,
	}
	if act == tickTimeout {
		ev.Outcome, ev.Err, ev.Start, ev.Duration = AttemptTimedOut, context.DeadlineExceeded, s.start, now.Sub(s.start)
	}
	s.notify.post(ev)
}

// quiesce stops the watchdog and waits for a tick in flight, which needs mu:
// the caller must not hold it.
func (s *Supervisor) quiesce() {
	if s.policy.Timeout > 0 {
		_ = s.watch.Stop(context.Background())
	}
}

// random returns a random number for the next delay, from the random source
// if the policy has jitter. It runs without mu, and outside every write of
// stats, since the source may call the Supervisor.
func (s *Supervisor) random() float64 {
	if !s.jittered {
		return 0 // unused: the delay rule applies no jitter
	}
	s.randMu.Lock()
	defer s.randMu.Unlock()
	return s.rand()
}

// fail accounts for a failure: the interval follows the delay rule, and a
// new delay is drawn with the random number r. It runs with mu held, inside
// a stats write.
func (s *Supervisor) fail(o outcome, r float64) time.Duration {
	first := s.stats.consecutive.Add(1) == 1
	s.interval = s.policy.next(s.interval, o, first)
	return s.delay(r)
}

// delay returns the delay for the current interval and the random number r,
// and records it. It runs with mu held, inside a stats write.
func (s *Supervisor) delay(r float64) time.Duration {
	d := s.policy.delay(s.interval, r)
	s.stats.delay.Store(int64(d))
	return d
}

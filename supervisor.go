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

package circulation

import "time"

// A Scheduler runs functions after a delay. It is what a Trigger hands its
// timers to: the runtime's timers (RuntimeScheduler, the default), a timing
// wheel (package wheel), or a fake clock in tests.
//
// AfterFunc arranges for f to be called once, after at least d has elapsed,
// and returns a Timer that can cancel the call. A d of zero or less means as
// soon as possible. A Trigger runs its task inside f, so f may block for as
// long as the task runs: a Scheduler must not let one blocked callback delay
// the others (time.AfterFunc gives each its own goroutine).
// Implementations must be safe for concurrent use.
//
// A Trigger does not rely on a Scheduler behaving: a callback that runs late,
// early, twice, out of order or after its Timer was stopped never makes f run
// concurrently with itself or out of turn. It only costs a wasted callback.
// An AfterFunc that panics (as a stopped wheel.Wheel's does) arms nothing:
// the panic goes on to the Fire, or to the run that asked for its next
// iteration, and the Trigger is left as if that arming had been superseded.
type Scheduler interface {
	AfterFunc(d time.Duration, f func()) Timer
}

// A Timer is one pending call of a Scheduler.
//
// Stop prevents the call from happening. It reports whether the call stopped
// the timer, false if the callback has already been started or the timer
// was already stopped. Stop does not wait for the callback to complete.
//
// A Trigger counts on one promise: a call that will never happen (stopped,
// or dropped by a Scheduler that shut down) makes one Stop report true. A
// Timer whose Stop reports false must still call its function; otherwise a
// Trigger's Stop waits for that call until its context ends.
type Timer interface {
	Stop() bool
}

// RuntimeScheduler is the default Scheduler: it hands every delay to
// time.AfterFunc, so each callback runs in its own goroutine on the runtime's
// timers. Its zero value is ready to use and it is safe for concurrent use.
// A Trigger on it starts a run with no delay on a goroutine of its own,
// as time.AfterFunc(0, f) would, without the round trip through the timer
// heap, and reuses each *time.Timer it creates.
//
// The Go runtime keeps its timers in a per-P heap: scheduling and stopping
// cost O(log n) in the number of pending timers. For millions of timers of
// coarse resolution, package wheel is cheaper.
type RuntimeScheduler struct{}

// AfterFunc calls time.AfterFunc(d, f). The Timer it returns is the
// *time.Timer.
func (RuntimeScheduler) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, f)
}

var _ Scheduler = RuntimeScheduler{}

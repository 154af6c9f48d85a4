package circulation

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// An Outcome is what became of an attempt, as an AttemptEvent reports it.
type Outcome uint8

const (
	AttemptSucceeded Outcome = iota + 1 // returned nil within its Timeout
	AttemptFailed                       // returned an error within its Timeout (RetryAfter's too)
	AttemptPanicked                     // panicked or called runtime.Goexit within its Timeout
	AttemptTimedOut                     // still running at its Timeout: abandoned
	AttemptSkipped                      // fell due while an abandoned attempt still ran, and did not start
	AttemptLate                         // an abandoned attempt returned: its result changes nothing
	AttemptStopped                      // returned an error matching ErrPermanent: the Supervisor stopped
	AttemptCanceled                     // Suspend, Stop or Close cancelled it before it returned: not a failure
)

var outcomeNames = [...]string{"", "success", "error", "panic", "timeout", "skip", "late", "permanent", "canceled"}

// String returns the outcome's name: "success", "error", "panic",
// "timeout", "skip", "late", "permanent" or "canceled".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && o != 0 {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", o)
}

// An AttemptEvent reports the outcome of an attempt to the function given
// to WithNotify.
type AttemptEvent struct {
	Outcome Outcome

	// Attempt numbers the attempt, from 1, as Stats.Attempts counted it
	// when it began. For AttemptSkipped, it is the abandoned attempt that
	// still runs.
	Attempt uint64

	// Err is what the attempt returned for AttemptFailed, AttemptStopped,
	// AttemptCanceled and AttemptLate (nil if it returned nil); an error
	// naming the panic's value for AttemptPanicked (and for a late or
	// cancelled attempt that panicked); context.DeadlineExceeded for
	// AttemptTimedOut; nil for AttemptSucceeded and AttemptSkipped.
	Err error

	// Start is when the attempt began; for AttemptSkipped, when the
	// skipped attempt fell due. Duration runs from Start to the outcome:
	// the attempt's run time, its Timeout for AttemptTimedOut, zero for
	// AttemptSkipped.
	Start    time.Time
	Duration time.Duration

	// Next is the delay the Supervisor drew for the next attempt, counted
	// from the outcome (RetryAfter's delay after such an error). It is
	// meaningful only if Scheduled: the backoff schedule runs the next
	// attempt after Next. Scheduled is false after AttemptStopped,
	// AttemptCanceled and AttemptLate (which draw nothing), and after an
	// outcome whose schedule a Fire, FireAfter or Suspend made while the
	// attempt ran has superseded. A Fire after the event supersedes it too.
	Next      time.Duration
	Scheduled bool

	// ConsecutiveFailures is Stats.ConsecutiveFailures after the outcome.
	ConsecutiveFailures uint64
}

// WithNotify makes the Supervisor call f with the outcome of each attempt,
// and of each due attempt it skips, as it happens: once per outcome, in the
// order the Supervisor accounted for them (an attempt's AttemptTimedOut
// comes before its AttemptLate).
//
// The calls never overlap, and f runs without any of the Supervisor's locks
// held, so it may call Fire, Suspend, Stats, Err, even Close (Stop and Close
// with a context that outlives f would wait for f's own goroutine). f runs
// on the goroutine that made the outcome: the attempt's, after the task has
// returned, and the watchdog's for a timeout and a skip. If an outcome
// comes while f runs for another, the goroutine already in f delivers it
// after it, and the new one goes on without waiting for it, with one
// exception: an attempt that returns while f runs on the watchdog's
// goroutine waits for that call before it ends. A slow f does not stretch
// the delays: the next attempt is still due Next after the outcome, or as
// soon as f returns if that is later. Stop and Close wait for the calls f
// gets from the attempts they wait for. f must not panic.
//
// Without WithNotify, the Supervisor builds no event and reads no clock
// for one.
func WithNotify(f func(AttemptEvent)) SuperviseOption {
	return superviseOptionFunc(func(o *superviseOptions) { o.notify = f })
}

// A notifier delivers AttemptEvents one at a time, in the order they were
// posted. post runs with Supervisor.mu held, which orders the events;
// deliver runs without it.
type notifier struct {
	f     func(AttemptEvent)
	mu    sync.Mutex     // guards the fields below; never held while f runs
	queue []AttemptEvent // posted, not yet delivered
	spare []AttemptEvent // a delivered batch, reused
	busy  bool           // a goroutine is delivering: it will deliver the queue too
}

func (n *notifier) post(ev AttemptEvent) {
	n.mu.Lock()
	n.queue = append(n.queue, ev)
	n.mu.Unlock()
}

// deliver calls f with every posted event, unless another goroutine is
// doing so: that one delivers them. It returns how long it spent.
func (n *notifier) deliver() time.Duration {
	n.mu.Lock()
	if n.busy || len(n.queue) == 0 {
		n.mu.Unlock()
		return 0
	}
	n.busy = true
	start := time.Now()
	defer func() { // also if f panics
		n.busy = false
		n.mu.Unlock()
	}()
	for len(n.queue) > 0 {
		q := n.queue
		n.queue, n.spare = n.spare[:0], nil
		n.mu.Unlock()
		for i := range q {
			n.f(q[i])
			q[i] = AttemptEvent{}
		}
		n.mu.Lock()
		n.spare = q[:0]
	}
	return time.Since(start)
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

// panicError describes a panic (or runtime.Goexit) for AttemptEvent.Err.
type panicError struct {
	value  any
	goexit bool
}

func (e *panicError) Error() string {
	if e.goexit {
		return "circulation: task called runtime.Goexit"
	}
	return fmt.Sprintf("circulation: task panicked: %v", e.value)
}

// shorten returns d less the time spent delivering events, at least zero.
func shorten(d, spent time.Duration) time.Duration { return max(d-spent, 0) }

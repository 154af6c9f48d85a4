package circulation

import "time"

// An attempt is one call of a Supervisor's task, and the context the task
// gets: a cancelContext with the attempt's deadline. It is done at the
// Timeout, with Err context.DeadlineExceeded, and when Suspend or Stop
// cancels it or the task returns, with Err context.Canceled. It carries no
// values.
type attempt struct {
	cancelContext
	deadline time.Time // zero without a Timeout; written before the task starts

	// flags is written with Supervisor.mu held: by begin, and by end with
	// what the coord knew of the attempt when it ended; goexit reads it.
	flags attemptFlags
}

// Deadline reports when the attempt times out: its start plus the Timeout,
// by the runtime's clock. The Scheduler decides when the timeout happens.
func (a *attempt) Deadline() (time.Time, bool) { return a.deadline, !a.deadline.IsZero() }

// String names the context.
func (*attempt) String() string { return "circulation.attempt" }

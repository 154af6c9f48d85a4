package schedule

import (
	"context"
	"time"
)

// WithSince says that the job has been scheduled since t, as a task defined
// at t is: a job with no record in its store then owes, at its first Start,
// the slots due from t on, by its Misfire policy, as if it had run just
// before t. Without it, a job that has no record owes the slots from its
// first Start on a SinceStore, and none on any other Store. A t after the
// Start, or zero, is the Start.
func WithSince(t time.Time) Option {
	return optionFunc(func(c *config) { c.since = t })
}

// A SinceStore is a Store that remembers, for each job, since when it has
// been scheduled, so that a job that has never run still owes, after a
// restart, the slots due while no process ran it (a once task due during
// the downtime, a new task's first slots). A Job on a SinceStore with no
// record calls Since at Start.
type SinceStore interface {
	Store
	// Since records t as the time job has been scheduled since, unless an
	// earlier one is recorded, and returns the earliest recorded.
	Since(ctx context.Context, job string, t time.Time) (time.Time, error)
}

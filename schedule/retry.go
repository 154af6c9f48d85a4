package schedule

import (
	"context"
	"time"
)

// WithRetry runs a slot again when its run fails (its Func returned an
// error, panicked or timed out): up to attempts runs of the slot in all,
// the first retry backoff after the failure, each next one after twice the
// pause before it, up to an hour. A retry is a run of the same slot, with
// the same Due and Reason and the next Run.Attempt; on a RetryStore, the
// slot's record shows the attempt in progress, and the slot's outcome is
// its last attempt's. Each attempt's outcome reaches the Observer. A retry
// waiting for its pause counts as a run in flight (to the overlap policy,
// Pause and Stop): Stop and Pause end the wait, and the slot keeps the
// outcome of its last attempt. A run that was cancelled (Stop, Replace, a
// lost lease) is not retried. attempts below 2 means no retry; a negative
// backoff means zero.
func WithRetry(attempts int, backoff time.Duration) Option {
	return optionFunc(func(c *config) {
		c.attempts = max(attempts, 1)
		if c.attempts == 1 {
			c.attempts = 0
		}
		c.backoff = max(backoff, 0)
	})
}

// maxRetryPause bounds the pause before a retry.
const maxRetryPause = time.Hour

// A RetryStore is a Store that records the attempts of a slot's run: a Job
// with WithRetry on a RetryStore records each failed attempt and claims the
// next in one call, so that the slot's record shows the attempt in
// progress, and a write of an earlier attempt is refused, as after a
// takeover. On a Store that is not a RetryStore, the retries keep the first
// claim, and the slot's record, written once at the end, shows the last
// attempt.
type RetryStore interface {
	Store
	// Retry records r, a failed attempt of a run that r.Node claimed, and
	// claims the slot's next attempt, r.Attempt+1, for r.Node, with a fresh
	// lease on a LeaseStore. It returns ErrLeaseLost if the slot's record is
	// no longer r.Node's at r.Attempt.
	Retry(ctx context.Context, r Record) error
}

package sqlstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// failed returns r as its attempt's failure.
func failed(r schedule.Record, msg string) schedule.Record {
	r.Status, r.End, r.Err = schedule.Failed, r.Start.Add(10*time.Millisecond), msg
	return r
}

// TestRetry runs a slot in three attempts: each Retry hands the slot to
// the next attempt, whose Renew and Finish match, while those of the
// earlier attempts are refused, as after a takeover.
func TestRetry(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t))
		r := running("j", 0, "a")
		r.Attempt = 1
		require.NoError(t, s.Claim(ctx, r))

		require.NoError(t, s.Retry(ctx, failed(r, "boom")))
		last, err := s.Last(ctx, "j")
		require.NoError(t, err)
		assert.Equal(t, 2, last.Attempt)
		assert.Equal(t, schedule.Running, last.Status, "the next attempt is in progress")
		assert.Equal(t, "boom", last.Err, "with the failed attempt's message")
		assert.True(t, last.End.IsZero(), "a running record has no End")
		assert.True(t, last.Start.Equal(r.Start))
		assert.Equal(t, "a", last.Node)
		assert.Equal(t, schedule.Scheduled, last.Reason)

		second := r
		second.Attempt = 2
		require.ErrorIs(t, s.Retry(ctx, failed(r, "again")), schedule.ErrLeaseLost, "the old attempt retried again")
		require.ErrorIs(t, s.Renew(ctx, r), schedule.ErrLeaseLost, "the old attempt renewed")
		require.ErrorIs(t, s.Finish(ctx, failed(r, "late")), schedule.ErrLeaseLost, "the old attempt finished")
		other := second
		other.Node = "b"
		require.ErrorIs(t, s.Retry(ctx, failed(other, "not mine")), schedule.ErrLeaseLost, "another node")
		require.ErrorIs(t, s.Renew(ctx, other), schedule.ErrLeaseLost)
		require.NoError(t, s.Renew(ctx, second), "the new attempt renews")

		require.NoError(t, s.Retry(ctx, failed(second, "boom 2")))
		third := second
		third.Attempt = 3
		third.Start = r.Start.Add(time.Second)
		require.ErrorIs(t, s.Finish(ctx, failed(second, "late")), schedule.ErrLeaseLost)
		done := third
		done.Status, done.End = schedule.Succeeded, third.Start.Add(time.Millisecond)
		require.NoError(t, s.Finish(ctx, done))
		last, err = s.Last(ctx, "j")
		require.NoError(t, err)
		assert.Equal(t, 3, last.Attempt)
		assert.Equal(t, schedule.Succeeded, last.Status, "the slot's outcome is its last attempt's")
		assert.Empty(t, last.Err)
		assert.True(t, last.Start.Equal(done.Start))
		assert.True(t, last.End.Equal(done.End))
		require.ErrorIs(t, s.Retry(ctx, failed(third, "after the end")), schedule.ErrLeaseLost, "a finished slot")

		require.ErrorIs(t, s.Retry(ctx, failed(running("never", 0, "a"), "x")), schedule.ErrLeaseLost, "a slot never claimed")
		_, err = s.Last(ctx, "never")
		require.ErrorIs(t, err, schedule.ErrNoRecord)
		require.ErrorContains(t, s.Retry(ctx, failed(running("", 0, "a"), "x")), "empty")
	})
}

// TestRetryRenewsTheLease lets a claim's lease expire, then retries it:
// the next attempt holds a fresh lease, which no replica takes over; once
// that lease expires, a replica does, and the retrying node's later writes
// are refused.
func TestRetryRenewsTheLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const lease = time.Second
		s := newStore(t, b, b.dsn(t), sqlstore.WithLease(lease))
		expired := func() bool {
			jobs, err := s.Expired(ctx, 10)
			require.NoError(t, err)
			return slices.Contains(jobs, "j")
		}
		r := running("j", 0, "a")
		r.Attempt = 1
		require.NoError(t, s.Claim(ctx, r))
		eventually(t, "the claim's lease expires", expired)

		require.NoError(t, s.Retry(ctx, failed(r, "boom")), "a lease expired but not taken over")
		assert.False(t, expired(), "the retry's lease is fresh")
		_, err := s.Reclaim(ctx, "j", "b", schedule.Concurrency{})
		require.ErrorIs(t, err, schedule.ErrNoRecord, "no takeover of a fresh lease")

		eventually(t, "the retry's lease expires", expired)
		rec, err := s.Reclaim(ctx, "j", "b", schedule.Concurrency{})
		require.NoError(t, err)
		assert.Equal(t, 3, rec.Attempt)
		assert.Equal(t, schedule.Recovered, rec.Reason)
		second := r
		second.Attempt = 2
		require.ErrorIs(t, s.Retry(ctx, failed(second, "too late")), schedule.ErrLeaseLost, "fenced by the takeover")
		require.ErrorIs(t, s.Renew(ctx, second), schedule.ErrLeaseLost)
		require.NoError(t, s.Retry(ctx, failed(rec, "b failed")), "the new owner retries")
		last, err := s.Last(ctx, "j")
		require.NoError(t, err)
		assert.Equal(t, 4, last.Attempt)
		assert.Equal(t, "b", last.Node)
	})
}

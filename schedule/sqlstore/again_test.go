package sqlstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// Two Jobs of one name on two Stores of one database backfill a range
// that has its records with RunAgain, at once: each slot runs again once,
// and its record shows Attempt 2 and Reason Backfill; a third Backfill
// with RunAgain, called before those runs ended, runs none of them.
func TestBackfillRunAgainAcrossStores(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		stores, jobs, counts := backfillers(t, b)
		to := time.Now().Truncate(time.Hour)
		from := to.Add(-24 * time.Hour)
		p, err := jobs[0].Backfill(ctx, from, to)
		require.NoError(t, err)
		require.Equal(t, 24, p.Done-p.HadRecord)
		time.Sleep(time.Millisecond) // the runs ended before the Backfills below are called
		late := time.Now()

		var wg sync.WaitGroup
		again := make([]int, len(jobs))
		for i, j := range jobs {
			wg.Go(func() {
				p, err := j.Backfill(ctx, from, to, schedule.RunAgain())
				assert.NoError(t, err)
				assert.Equal(t, 24, p.Done)
				again[i] = p.RanAgain
				assert.Equal(t, 24, p.RanAgain+p.HadRecord)
			})
		}
		wg.Wait()
		assert.Equal(t, 24, again[0]+again[1], "by node: %v", again)
		runs := counts()
		assert.Len(t, runs, 24)
		for due, n := range runs {
			assert.Equal(t, 2, n, "slot %v: its first run, and one again", due)
		}
		h, err := stores[0].History(ctx, "j", 100)
		require.NoError(t, err)
		backfilled := 0
		for _, r := range h {
			if !r.Due.Before(to) {
				continue
			}
			backfilled++
			assert.Equal(t, schedule.Backfill, r.Reason, "%+v", r)
			assert.Equal(t, schedule.Succeeded, r.Status, "%+v", r)
			assert.Equal(t, 2, r.Attempt, "%+v", r)
			assert.True(t, r.End.After(late), "%+v", r)
		}
		assert.Equal(t, 24, backfilled)

		// A request made before those runs ended: each ended after it.
		for _, r := range h {
			if r.Due.Before(to) {
				_, err := stores[1].ClaimAgain(ctx, schedule.Record{Job: "j", Due: r.Due, Reason: schedule.Backfill,
					Status: schedule.Running, Node: "c", Start: time.Now()}, schedule.Concurrency{Max: 1}, late)
				assert.ErrorIs(t, err, schedule.ErrClaimed, "%v", r.Due)
			}
		}
		for _, j := range jobs {
			require.NoError(t, j.Stop(ctx))
		}
	})
}

// ClaimAgain claims a finished slot again under the job's limit, as
// ClaimRun counts it, and never a slot that pruning passed, even one whose
// record pruning kept.
func TestClaimAgain(t *testing.T) {
	for _, max := range []int{1, 2} {
		t.Run(map[int]string{1: "Max1", 2: "Max2"}[max], func(t *testing.T) {
			eachBackend(t, func(t *testing.T, b backend) {
				s := newStore(t, b, b.dsn(t), sqlstore.WithHistory(1, 100), sqlstore.WithRetention(0), sqlstore.WithLease(time.Minute))
				c := schedule.Concurrency{Max: max}
				now := time.Now()
				// Slots 0 to 4 ran, 1 failed; pruning leaves 1 and 4.
				for i := range 5 {
					r := running("j", i, "a")
					r.Status, r.Attempt, r.End = schedule.Succeeded, 1, now.Add(-time.Minute)
					if i == 1 {
						r.Status = schedule.Failed
					}
					require.NoError(t, s.Claim(ctx, r))
				}
				_, err := s.Prune(ctx, "j")
				require.NoError(t, err)
				h, err := s.History(ctx, "j", 10)
				require.NoError(t, err)
				require.Len(t, h, 2)
				require.True(t, h[1].Due.Equal(slot(1)), "the failed record is kept: %+v", h)
				_, err = s.ClaimAgain(ctx, running("j", 1, "b"), c, now)
				assert.ErrorIs(t, err, schedule.ErrClaimed, "pruning passed slot 1")
				_, err = s.ClaimAgain(ctx, running("j", 2, "b"), c, now)
				assert.ErrorIs(t, err, schedule.ErrClaimed, "slot 2 has no record")

				// Runs in flight up to the limit: the job is busy.
				for i := range max {
					_, err := s.ClaimRun(ctx, running("j", 10+i, "a"), c)
					require.NoError(t, err)
				}
				_, err = s.ClaimAgain(ctx, running("j", 4, "b"), c, now)
				assert.ErrorIs(t, err, schedule.ErrBusy)
				for i := range max {
					r := running("j", 10+i, "a")
					r.Attempt, r.Status, r.End = 1, schedule.Succeeded, time.Now()
					require.NoError(t, s.Finish(ctx, r))
				}
				got, err := s.ClaimAgain(ctx, running("j", 4, "b"), c, now)
				require.NoError(t, err)
				assert.Equal(t, 2, got.Attempt)
				assert.Equal(t, "b", got.Node)
				assert.NoError(t, s.Renew(ctx, got), "the claim again is b's, at attempt 2")
				_, err = s.ClaimAgain(ctx, running("j", 4, "c"), schedule.Concurrency{}, time.Now())
				assert.ErrorIs(t, err, schedule.ErrClaimed, "in flight")
				if max == 1 {
					_, err = s.ClaimRun(ctx, running("j", 20, "a"), c)
					assert.ErrorIs(t, err, schedule.ErrBusy, "the claim again holds the lane")
				}
				got.Status, got.End = schedule.Succeeded, time.Now()
				require.NoError(t, s.Finish(ctx, got))
				_, err = s.ClaimAgain(ctx, running("j", 4, "c"), c, got.End)
				assert.ErrorIs(t, err, schedule.ErrClaimed, "it ended at the request, not before")
				got, err = s.ClaimAgain(ctx, running("j", 4, "c"), c, got.End.Add(time.Nanosecond))
				require.NoError(t, err)
				assert.Equal(t, 3, got.Attempt)
			})
		})
	}
}

// Under Max 1, a claim again takes the job's lane from a run whose lease
// expired, as a claim does: that run can no longer be renewed, and is
// taken over once the job is free.
func TestClaimAgainTakesAnExpiredLane(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithLease(100*time.Millisecond))
		one := schedule.Concurrency{Max: 1}
		done := running("j", 1, "a")
		done.Status, done.Attempt, done.End = schedule.Succeeded, 1, time.Now().Add(-time.Minute)
		require.NoError(t, s.Claim(ctx, done))
		dead := running("j", 2, "dead")
		_, err := s.ClaimRun(ctx, dead, one)
		require.NoError(t, err)
		_, err = s.ClaimAgain(ctx, running("j", 1, "b"), one, time.Now())
		require.ErrorIs(t, err, schedule.ErrBusy, "a run in flight holds the lane")
		time.Sleep(150 * time.Millisecond)
		got, err := s.ClaimAgain(ctx, running("j", 1, "b"), one, time.Now())
		require.NoError(t, err)
		assert.Equal(t, 2, got.Attempt)
		dead.Attempt = 1
		assert.ErrorIs(t, s.Renew(ctx, dead), schedule.ErrLeaseLost, "put out of the lane")
	})
}

package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// Many jobs claiming, renewing and finishing at once, on two Stores as two
// replicas: the calls go in batches, a statement for many of them, and each
// call gets its own answer: each slot is won once, each winner's renewal and
// finish match its claim, and the loser's do not.
func TestBatchedCallsGetTheirOwnAnswers(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		stores := []*sqlstore.Store{newStore(t, b, dsn, sqlstore.WithHistory(100, 100)), newStore(t, b, dsn, sqlstore.WithHistory(100, 100))}
		const jobs = 500
		var mu sync.Mutex
		wins := map[string]int{}
		var wg sync.WaitGroup
		errs := make(chan error, 2*jobs)
		for n, s := range stores {
			node := fmt.Sprint("n", n)
			for i := range jobs {
				wg.Go(func() {
					job := fmt.Sprint("job-", i)
					r := running(job, 0, node)
					err := s.Claim(ctx, r)
					if err == schedule.ErrClaimed {
						// The loser's renewal and finish are refused.
						if err := s.Renew(ctx, r); err != schedule.ErrLeaseLost {
							errs <- fmt.Errorf("%s %s: loser's Renew: %v", job, node, err)
						}
						return
					}
					if err != nil {
						errs <- fmt.Errorf("%s %s: Claim: %w", job, node, err)
						return
					}
					mu.Lock()
					wins[job]++
					mu.Unlock()
					if err := s.Renew(ctx, r); err != nil {
						errs <- fmt.Errorf("%s %s: Renew: %w", job, node, err)
					}
					r.Status, r.End, r.Err = schedule.Succeeded, slot(1), "quote \" backslash \\ tab \t é"
					if err := s.Finish(ctx, r); err != nil {
						errs <- fmt.Errorf("%s %s: Finish: %w", job, node, err)
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for i := range jobs {
			job := fmt.Sprint("job-", i)
			assert.Equal(t, 1, wins[job], job)
			last, err := stores[0].Last(ctx, job)
			require.NoError(t, err)
			assert.Equal(t, schedule.Succeeded, last.Status, job)
			assert.Equal(t, "quote \" backslash \\ tab \t é", last.Err)
		}
		var st sqlstore.Stats
		for _, s := range stores {
			x := s.Stats()
			st.Claims += x.Claims
			st.ClaimBatches += x.ClaimBatches
			st.Finishes += x.Finishes
			st.FinishBatches += x.FinishBatches
		}
		t.Logf("%d claims in %d statements, %d finishes in %d", st.Claims, st.ClaimBatches, st.Finishes, st.FinishBatches)
		assert.EqualValues(t, 2*jobs, st.Claims)
		assert.Less(t, st.ClaimBatches, st.Claims/4, "claims were batched")
	})
}

// A claim whose context ends while it waits for its batch leaves the queue
// and claims nothing: here every lane is busy with a claim held up by a
// row lock (PostgreSQL), and the claim behind them is cancelled.
func TestQueuedClaimWithdrawn(t *testing.T) {
	b := backends()[1]
	dsn := b.dsn(t)
	db := openDB(t, b.driver, dsn)
	db.SetMaxOpenConns(2) // one lane
	s, err := sqlstore.New(ctx, db, b.dialect, sqlstore.WithTable(tableFor(t)))
	require.NoError(t, err)
	other := openDB(t, b.driver, dsn)
	conn, err := other.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "INSERT INTO "+tableFor(t)+" (job, due, reason, status, node, err, attempt) VALUES ('j', $1, 0, 0, 'x', '', 1)", slot(0).UnixNano())
	require.NoError(t, err)
	first := make(chan error, 1)
	go func() { first <- s.Claim(ctx, running("j", 0, "a")) }()
	waitForLock(t, other, "INSERT INTO "+tableFor(t))
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Claim(cctx, running("j", 1, "a"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), time.Second, "the queued claim left at its context's end")
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, <-first)
	h, err := s.History(ctx, "j", 10)
	require.NoError(t, err)
	require.Len(t, h, 1, "the withdrawn claim was never sent")
	assert.True(t, h[0].Due.Equal(slot(0)))
}

// Finishes prune in the background, many jobs in two statements: each
// job keeps its newest records and its last one, and a pruned slot cannot
// be claimed again.
func TestBatchedPrune(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithHistory(2, 0), sqlstore.WithRetention(0))
		const jobs, slots = 40, 40
		var wg sync.WaitGroup
		for j := range jobs {
			wg.Go(func() {
				job := fmt.Sprint("job-", j)
				for i := range slots {
					r := running(job, i, "a")
					if err := s.Claim(ctx, r); err != nil {
						t.Error(err)
						return
					}
					r.Status = schedule.Succeeded
					if i == slots-1 {
						r.Status = schedule.Failed // the last record, kept though no failed one is
					}
					if err := s.Finish(ctx, r); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		eventually(t, "the background prunes", func() bool { return s.Stats().Prunes >= jobs*slots/16 })
		left := 0
		for j := range jobs {
			h, err := s.History(ctx, fmt.Sprint("job-", j), 100)
			require.NoError(t, err)
			left += len(h)
		}
		assert.Less(t, left, jobs*slots, "the background pruned")
		for j := range jobs {
			job := fmt.Sprint("job-", j)
			_, err := s.Prune(ctx, job) // whatever the background left
			require.NoError(t, err)
			h, err := s.History(ctx, job, 100)
			require.NoError(t, err)
			require.Len(t, h, 3, job)
			assert.Equal(t, schedule.Failed, h[0].Status, "the last record stays")
			assert.True(t, h[0].Due.Equal(slot(slots-1)))
			require.ErrorIs(t, s.Claim(ctx, running(job, 3, "late")), schedule.ErrClaimed, "a pruned slot")
		}
		st := s.Stats()
		t.Logf("%d jobs pruned in %d batches", st.Prunes, st.PruneBatches)
	})
}

// Expired lists the jobs with a running claim whose lease has expired,
// once each, up to its limit.
func TestExpired(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		withLease(t, 100*time.Millisecond, func(lease time.Duration) bool {
			s := newStore(t, b, b.dsn(t), sqlstore.WithLease(lease))
			first := time.Now() // before any lease was stamped
			for _, job := range []string{"a", "b", "c"} {
				if !within(t, s.Claim(ctx, running(job, 0, "n"))) || !within(t, s.Claim(ctx, running(job, 1, "n"))) {
					return false
				}
			}
			done := running("c", 0, "n")
			done.Status = schedule.Succeeded
			require.NoError(t, s.Finish(ctx, done))
			names, err := s.Expired(ctx, 10)
			require.NoError(t, err)
			if time.Since(first) >= lease {
				return false
			}
			assert.Empty(t, names, "no lease has expired yet")
			time.Sleep(lease * 3 / 2) // every lease stamped so far expires
			renewed := time.Now()
			if !within(t, s.Renew(ctx, running("c", 1, "n")), "c's lease is alive again") {
				return false
			}
			names, err = s.Expired(ctx, 10)
			require.NoError(t, err)
			if time.Since(renewed) >= lease {
				return false
			}
			assert.ElementsMatch(t, []string{"a", "b"}, names)
			names, err = s.Expired(ctx, 1)
			require.NoError(t, err)
			assert.Len(t, names, 1)
			names, err = s.Expired(ctx, 0)
			require.NoError(t, err)
			assert.Empty(t, names)
			return true
		})
	})
}

// LastOf reads the last records of many jobs at once, the same as Last
// reads them one by one; StartAll starts jobs on it.
func TestLastOf(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithHistory(10, 10))
		var names []string
		for i := range 2500 {
			names = append(names, fmt.Sprint("job-", i))
		}
		var wg sync.WaitGroup
		for i, job := range names[:2000] {
			wg.Go(func() {
				for k := range i%3 + 1 {
					r := running(job, k, "n")
					if err := s.Claim(ctx, r); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		last, err := s.LastOf(ctx, append(names, "quote \" and \\"))
		require.NoError(t, err)
		assert.Len(t, last, 2000, "the 500 jobs without records are absent")
		for _, job := range names[:2000] {
			want, err := s.Last(ctx, job)
			require.NoError(t, err)
			assert.Equal(t, want, last[job], job)
		}
	})
}

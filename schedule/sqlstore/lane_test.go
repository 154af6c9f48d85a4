package sqlstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

var one = schedule.Concurrency{Max: 1}

// A run under Max 1 whose lease expired no longer holds its job: a claim
// of the next slot runs, and the expired run is taken over only once that
// one is done, by a Reclaim that then holds the job in turn.
func TestLaneOfAnExpiredRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		withLease(t, 200*time.Millisecond, func(lease time.Duration) bool {
			dsn := b.dsn(t)
			sa := newStore(t, b, dsn, sqlstore.WithLease(lease))
			sb := newStore(t, b, dsn, sqlstore.WithLease(lease))
			_, err := sa.ClaimRun(ctx, running("j", 1, "a"), one)
			if !within(t, err) {
				return false
			}
			time.Sleep(lease + 50*time.Millisecond) // a's lease expires
			next := running("j", 2, "b")
			claimed := time.Now()
			_, err = sb.ClaimRun(ctx, next, one)
			if !within(t, err, "the expired run holds the job no more") {
				return false
			}
			_, err = sb.Reclaim(ctx, "j", "c", one)
			if time.Since(claimed) >= lease {
				return false // b's lease may have expired before the Reclaim
			}
			if outlived(err) {
				return false
			}
			require.ErrorIs(t, err, schedule.ErrBusy, "b's run is in flight")
			next.Status, next.End, next.Attempt = schedule.Succeeded, time.Now(), 1
			if !within(t, sb.Finish(ctx, next)) {
				return false
			}
			claimed = time.Now()
			r, err := sb.Reclaim(ctx, "j", "c", one)
			if !within(t, err) {
				return false
			}
			assert.Truef(t, slot(1).Equal(r.Due), "the expired run is taken over: %v", r.Due)
			_, err = sa.ClaimRun(ctx, running("j", 3, "a"), one)
			if time.Since(claimed) >= lease {
				return false
			}
			if outlived(err) {
				return false
			}
			assert.ErrorIs(t, err, schedule.ErrBusy, "the run taken over holds the job")
			return true
		})
	})
}

// Of the claims to take over of a job under Max 1, a Reclaim takes the one
// that holds the job first, Released, though an older one expired: the
// older one would not get the job while the other waits to be taken over,
// and neither would ever run. Both are taken over, one after the other.
func TestReclaimTakesTheHeldClaimFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		withLease(t, 200*time.Millisecond, func(lease time.Duration) bool {
			dsn := b.dsn(t)
			sa := newStore(t, b, dsn, sqlstore.WithLease(lease))
			sb := newStore(t, b, dsn, sqlstore.WithLease(lease))
			_, err := sa.ClaimRun(ctx, running("j", 1, "a"), one)
			if !within(t, err) {
				return false
			}
			time.Sleep(lease + 50*time.Millisecond) // a's lease expires
			held := running("j", 2, "b")
			claimed := time.Now()
			_, err = sb.ClaimRun(ctx, held, one)
			if !within(t, err) {
				return false
			}
			held.Attempt = 1
			err = sb.Release(ctx, held)
			if time.Since(claimed) >= lease {
				return false
			}
			if !within(t, err) {
				return false
			}

			r, err := sb.Reclaim(ctx, "j", "c", one)
			if !within(t, err) {
				return false
			}
			assert.Truef(t, slot(2).Equal(r.Due), "the claim that holds the job is taken over first: %v", r.Due)
			_, err = sb.Reclaim(ctx, "j", "c", one)
			if time.Since(r.Start) >= lease {
				return false
			}
			if outlived(err) {
				return false
			}
			require.ErrorIs(t, err, schedule.ErrBusy, "the claim taken over holds the job")
			r.Status, r.End = schedule.Succeeded, time.Now()
			if !within(t, sb.Finish(ctx, r)) {
				return false
			}
			r, err = sb.Reclaim(ctx, "j", "c", one)
			if !within(t, err, "the older claim, the job free") {
				return false
			}
			assert.Truef(t, slot(1).Equal(r.Due), "taken over: %v", r.Due)
			r.Status, r.End = schedule.Succeeded, time.Now()
			if !within(t, sb.Finish(ctx, r)) {
				return false
			}
			_, err = sb.Reclaim(ctx, "j", "c", one)
			if outlived(err) {
				return false
			}
			assert.ErrorIs(t, err, schedule.ErrNoRecord)
			return true
		})
	})
}

// Reclaims and claims of a job under Max 1 at once: one wins. In even
// rounds the claim to take over is a run whose lease expired, which a
// claim may take the job from; in odd rounds a Released run claimed
// without a limit, which holds no lane, so that a Reclaim that takes it
// over contends with the claims for the job. Without a lock, the mutant,
// they do not see each other.
func TestReclaimRacesClaims(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		if over := racingReclaims(t, b); over != 0 {
			t.Errorf("%d rounds of 30 had more than one won", over)
		}
	})
	t.Run("mutant", func(t *testing.T) {
		needPostgres(t)
		restore := sqlstore.SetMutant(sqlstore.Mutants["claims without a lock"])
		defer restore()
		over := racingReclaims(t, backends()[1])
		t.Logf("without a lock, %d rounds of 30 had more than one won", over)
		if over == 0 {
			t.Error("without a lock, no round had more than one won: the test proves nothing")
		}
	})
}

// racingReclaims makes 30 rounds of three Stores reclaiming a run of a
// job and three claiming slots after it, all under Max 1, and returns the
// rounds where more than one won.
func racingReclaims(t *testing.T, b backend) int {
	dsn := b.dsn(t)
	// A lease of a second, not less: each statement is bounded by the
	// Store's lease, and a claim of 100ms timed out on a busy machine.
	short := newStore(t, b, dsn, sqlstore.WithLease(time.Second))
	var stores []*sqlstore.Store
	for range 6 {
		stores = append(stores, newStore(t, b, dsn, sqlstore.WithLease(time.Minute)))
	}
	const rounds = 30
	for round := range rounds {
		first := running(fmt.Sprint("race", round), 0, "first")
		if round%2 == 0 {
			_, err := short.ClaimRun(ctx, first, one)
			require.NoError(t, err)
			continue
		}
		_, err := stores[0].ClaimRun(ctx, first, schedule.Concurrency{})
		require.NoError(t, err)
		first.Attempt = 1
		require.NoError(t, stores[0].Release(ctx, first))
	}
	time.Sleep(1100 * time.Millisecond) // the leases of the even rounds' runs expire
	bad := 0
	for round := range rounds {
		job := fmt.Sprint("race", round)
		switch n := raceStores(t, stores, func(i int, s *sqlstore.Store) error {
			if i%2 == 0 {
				_, err := s.Reclaim(ctx, job, fmt.Sprint(i), one)
				return err
			}
			_, err := s.ClaimRun(ctx, running(job, i, fmt.Sprint(i)), one)
			return err
		}, schedule.ErrBusy, schedule.ErrNoRecord); {
		case n > 1:
			bad++
		case n == 0:
			t.Errorf("round %d: none won", round)
		}
	}
	return bad
}

// A run put out of its job's lane (its lease expired, and a claim of
// another slot cleared the lane) can no longer be renewed nor retried: its
// node hears ErrLeaseLost and ends it, where it would otherwise run on
// beside the claim that took the lane, and after it every claim of the
// job.
func TestRunOutOfItsLaneIsLost(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		withLease(t, 200*time.Millisecond, func(lease time.Duration) bool {
			dsn := b.dsn(t)
			sa := newStore(t, b, dsn, sqlstore.WithLease(lease))
			sb := newStore(t, b, dsn, sqlstore.WithLease(time.Minute))
			r1 := running("j", 1, "a")
			_, err := sa.ClaimRun(ctx, r1, one)
			require.NoError(t, err)
			time.Sleep(lease + 50*time.Millisecond) // a's renewal is late
			_, err = sb.ClaimRun(ctx, running("j", 2, "b"), one)
			require.NoError(t, err, "the expired run holds the job no more")
			r1.Attempt = 1
			assert.ErrorIs(t, sa.Renew(ctx, r1), schedule.ErrLeaseLost, "renewed out of its lane")
			assert.ErrorIs(t, sa.Retry(ctx, failed(r1, "boom")), schedule.ErrLeaseLost, "retried out of its lane")
			return true
		})
	})
}

// A claim under Max 1 finds its job busy with a run in flight that holds
// no lane: claimed under another limit (the job's Concurrency lowered
// during a rolling deploy), or by a replica of schema version 2.
func TestLaneClaimSeesRunsOutOfTheLane(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithLease(time.Minute))
		_, err := s.ClaimRun(ctx, running("j", 1, "a"), schedule.Concurrency{Max: 2})
		require.NoError(t, err)
		_, err = s.ClaimRun(ctx, running("j", 2, "b"), one)
		assert.ErrorIs(t, err, schedule.ErrBusy, "slot 1 is in flight")
		assert.Equal(t, []string{"busy", "busy"}, sqlstore.ClaimBatch(s,
			[]schedule.Record{running("j", 3, "b"), running("j", 4, "b")}, 1))
	})
}

// Claims of several slots of one job in one batch under Max 1, as a
// catch-up sends them, settle as one at a time would: the earliest slot
// without a record wins, the others are busy, whichever slots before it
// are taken; on both dialects alike.
func TestLaneClaimsOfOneJobInABatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithLease(time.Minute))
		for i := 1; i <= 2; i++ {
			r := running("j", i, "x")
			require.NoError(t, s.Claim(ctx, r))
			r.Attempt, r.Status, r.End = 1, schedule.Succeeded, time.Now()
			require.NoError(t, s.Finish(ctx, r))
		}
		var recs []schedule.Record
		for i := 1; i <= 5; i++ {
			recs = append(recs, running("j", i, "n"))
		}
		assert.Equal(t, []string{"taken", "taken", "won", "busy", "busy"}, sqlstore.ClaimBatch(s, recs, 1))
		assert.Equal(t, []string{"won", "busy", "busy"}, sqlstore.ClaimBatch(s,
			[]schedule.Record{running("k", 1, "n"), running("k", 2, "n"), running("k", 3, "n")}, 1))
	})
}

// A claim under Max 1 that finds its job busy costs one statement on
// PostgreSQL, which tells the outcome as it inserts, and two on SQLite,
// the insert and a read of the slot: the lane is cleared only when a run
// whose lease expired holds it.
func TestBusyLaneClaimStatements(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithLease(time.Minute))
		_, err := s.ClaimRun(ctx, running("j", 1, "a"), one)
		require.NoError(t, err)
		before := s.Stats().Statements
		_, err = s.ClaimRun(ctx, running("j", 2, "a"), one)
		require.ErrorIs(t, err, schedule.ErrBusy)
		want := map[string]uint64{"SQLite": 2, "PostgreSQL": 1}[b.name]
		assert.Equal(t, want, s.Stats().Statements-before)
	})
}

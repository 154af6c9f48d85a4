package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

var ctx = context.Background()

// slot returns the i-th slot of a 100ms schedule from a fixed origin.
func slot(i int) time.Time {
	return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(i) * 100 * time.Millisecond)
}

func running(job string, i int, node string) schedule.Record {
	return schedule.Record{Job: job, Due: slot(i), Reason: schedule.Scheduled, Status: schedule.Running,
		Start: slot(i).Add(time.Millisecond), Node: node}
}

func TestClaimFinishLastHistory(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithHistory(100, 100))
		_, err := s.Last(ctx, "j")
		require.ErrorIs(t, err, schedule.ErrNoRecord)

		for i := range 5 {
			require.NoError(t, s.Claim(ctx, running("j", i, "a")))
		}
		require.ErrorIs(t, s.Claim(ctx, running("j", 2, "b")), schedule.ErrClaimed)
		require.ErrorIs(t, s.Claim(ctx, running("j", 2, "a")), schedule.ErrClaimed, "the same node claims a slot once too")
		require.NoError(t, s.Claim(ctx, running("other", 2, "b")), "slots are per job")

		r := running("j", 4, "a")
		r.Status, r.End, r.Err = schedule.Failed, slot(4).Add(50*time.Millisecond), "boom"
		require.NoError(t, s.Finish(ctx, r))
		require.NoError(t, s.Finish(ctx, r), "Finish may be repeated")

		last, err := s.Last(ctx, "j")
		require.NoError(t, err)
		assert.Equal(t, "j", last.Job)
		assert.True(t, last.Due.Equal(slot(4)), "Due %v", last.Due)
		assert.True(t, last.Start.Equal(r.Start), "Start %v", last.Start)
		assert.True(t, last.End.Equal(r.End), "End %v", last.End)
		assert.Equal(t, schedule.Failed, last.Status)
		assert.Equal(t, schedule.Scheduled, last.Reason)
		assert.Equal(t, "boom", last.Err)
		assert.Equal(t, "a", last.Node)
		assert.Equal(t, 1, last.Attempt, "a first claim is attempt 1")

		h, err := s.History(ctx, "j", 3)
		require.NoError(t, err)
		require.Len(t, h, 3)
		for k, rec := range h {
			assert.True(t, rec.Due.Equal(slot(4-k)), "newest first: %d: %v", k, rec.Due)
		}
		assert.True(t, h[1].End.IsZero(), "a running record has no End")
		h, err = s.History(ctx, "j", 100)
		require.NoError(t, err)
		assert.Len(t, h, 5)
		h, err = s.History(ctx, "j", 0)
		require.NoError(t, err)
		assert.Empty(t, h)
		_, err = s.History(ctx, "j", -1)
		assert.ErrorContains(t, err, "-1")
	})
}

func TestFinishFencing(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t))
		require.NoError(t, s.Claim(ctx, running("j", 0, "a")))
		r := running("j", 0, "b")
		r.Status = schedule.Succeeded
		require.ErrorIs(t, s.Finish(ctx, r), schedule.ErrLeaseLost, "another node's Finish")
		r.Node, r.Attempt = "a", 2
		require.ErrorIs(t, s.Finish(ctx, r), schedule.ErrLeaseLost, "another attempt's Finish")
		r.Attempt = 0
		require.NoError(t, s.Finish(ctx, r), "Attempt 0 is the first claim")

		// A Finish without a claim records the slot, once.
		m := schedule.Record{Job: "j", Due: slot(1), Status: schedule.Missed, Reason: schedule.CatchUp, Node: "a"}
		require.NoError(t, s.Finish(ctx, m))
		m.Node = "b"
		require.ErrorIs(t, s.Finish(ctx, m), schedule.ErrLeaseLost)
		last, err := s.Last(ctx, "j")
		require.NoError(t, err)
		assert.Equal(t, schedule.Missed, last.Status)
		assert.Equal(t, "a", last.Node)
	})
}

// TestClaimRace claims the same slots from many goroutines on three pools,
// as three replicas would: each slot is won exactly once.
func TestClaimRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		var stores [3]*sqlstore.Store
		for i := range stores {
			stores[i] = newStore(t, b, dsn)
		}
		const slots, workers = 200, 6
		var wins [slots]int
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() {
				s := stores[w%len(stores)]
				for i := range slots {
					switch err := s.Claim(ctx, running("race", i, fmt.Sprint(w))); {
					case err == nil:
						mu.Lock()
						wins[i]++
						mu.Unlock()
					case !errors.Is(err, schedule.ErrClaimed):
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for i, n := range wins {
			if n != 1 {
				t.Errorf("slot %d claimed %d times", i, n)
			}
		}
	})
}

// TestLeaseTakeover: a claim renewed within its lease is not taken over;
// once its renewals stop, it is, a lease after the last one, and the
// first owner's writes are refused. The renewals and the takeover are
// timed by the calls' own instants, as in TestLeaseIgnoresNodeClocks.
func TestLeaseTakeover(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		withLease(t, 300*time.Millisecond, func(lease time.Duration) bool {
			const precision = time.Millisecond // of the database's timestamps, with room to spare
			dsn := b.dsn(t)
			sa := newStore(t, b, dsn, sqlstore.WithLease(lease))
			sb := newStore(t, b, dsn, sqlstore.WithLease(lease))
			assert.Equal(t, lease, sb.Lease())

			_, err := sb.Reclaim(ctx, "j", "b", schedule.Concurrency{})
			if outlived(err) {
				return false
			}
			require.ErrorIs(t, err, schedule.ErrNoRecord, "nothing claimed")
			r := running("j", 0, "a")
			renewCalled := time.Now()
			if !within(t, sa.Claim(ctx, r)) {
				return false
			}
			renewed := time.Now()
			_, err = sb.Reclaim(ctx, "j", "b", schedule.Concurrency{})
			if outlived(err) || time.Since(renewCalled) >= lease {
				return false
			}
			require.ErrorIs(t, err, schedule.ErrNoRecord, "the lease is fresh")

			// Renewing keeps the slot for longer than one lease.
			for range 4 {
				time.Sleep(lease / 3)
				renewCalled = time.Now()
				if !within(t, sa.Renew(ctx, r)) {
					return false
				}
				renewed = time.Now()
				_, err = sb.Reclaim(ctx, "j", "b", schedule.Concurrency{})
				if outlived(err) || time.Since(renewCalled) >= lease {
					return false
				}
				require.ErrorIs(t, err, schedule.ErrNoRecord, "the lease was renewed")
			}

			// Without renewals, b takes the slot over once the lease expired.
			var got schedule.Record
			for {
				called := time.Now()
				got, err = sb.Reclaim(ctx, "j", "b", schedule.Concurrency{})
				if err == nil {
					break
				}
				if outlived(err) {
					return false
				}
				require.ErrorIs(t, err, schedule.ErrNoRecord)
				require.Less(t, called.Sub(renewed), lease+precision,
					"not taken over by a Reclaim called after the lease ran out")
				time.Sleep(lease / 20)
			}
			assert.GreaterOrEqual(t, time.Since(renewCalled), lease-precision, "taken over before the lease expired")
			assert.True(t, got.Due.Equal(r.Due))
			assert.Equal(t, "b", got.Node)
			assert.Equal(t, 2, got.Attempt)
			assert.Equal(t, schedule.Recovered, got.Reason)
			assert.Equal(t, schedule.Running, got.Status)

			reclaimed := time.Now()
			_, err = sa.Reclaim(ctx, "j", "a", schedule.Concurrency{})
			if outlived(err) || time.Since(reclaimed) >= lease {
				return false
			}
			require.ErrorIs(t, err, schedule.ErrNoRecord, "the new claim has a fresh lease")
			require.ErrorIs(t, sa.Renew(ctx, r), schedule.ErrLeaseLost)
			r.Status = schedule.Succeeded
			require.ErrorIs(t, sa.Finish(ctx, r), schedule.ErrLeaseLost)

			require.NoError(t, sb.Renew(ctx, got))
			got.Status, got.End = schedule.Succeeded, time.Now()
			require.NoError(t, sb.Finish(ctx, got))
			require.ErrorIs(t, sb.Renew(ctx, got), schedule.ErrLeaseLost, "a finished run has no lease")
			last, err := sa.Last(ctx, "j")
			require.NoError(t, err)
			assert.Equal(t, schedule.Succeeded, last.Status)
			assert.Equal(t, "b", last.Node)
			assert.Equal(t, 2, last.Attempt)
			return true
		})
	})
}

// TestReclaimRace lets several nodes reclaim many expired claims at once:
// each goes to exactly one, oldest first.
func TestReclaimRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		// The dead node's claims expire quickly; the reclaimers' leases
		// outlast the test, so that each claim is taken over once.
		const n = 30
		var stores [3]*sqlstore.Store
		withLease(t, 100*time.Millisecond, func(lease time.Duration) bool {
			dsn := b.dsn(t)
			dead := newStore(t, b, dsn, sqlstore.WithLease(lease))
			for i := range stores {
				stores[i] = newStore(t, b, dsn, sqlstore.WithLease(time.Minute))
			}
			for i := range n {
				if !within(t, dead.Claim(ctx, running("j", i, "dead"))) {
					return false
				}
			}
			time.Sleep(lease + 20*time.Millisecond)
			return true
		})
		var mu sync.Mutex
		got := map[int64]int{}
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				var prev time.Time
				for {
					r, err := stores[w%3].Reclaim(ctx, "j", fmt.Sprint(w), schedule.Concurrency{})
					if errors.Is(err, schedule.ErrNoRecord) {
						return
					}
					if !assert.NoError(t, err) {
						return
					}
					assert.True(t, r.Due.After(prev), "oldest first")
					prev = r.Due
					assert.Equal(t, 2, r.Attempt)
					mu.Lock()
					got[r.Due.UnixNano()]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		assert.Len(t, got, n)
		for due, k := range got {
			assert.Equal(t, 1, k, "slot %v reclaimed %d times", time.Unix(0, due), k)
		}
	})
}

func TestPrune(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithHistory(3, 1), sqlstore.WithRetention(0))
		// Claim records any status: finished records without Finish,
		// which would prune on its own.
		for i := range 20 {
			r := running("j", i, "a")
			switch {
			case i == 19: // still running
			case i%5 == 0:
				r.Status = schedule.Failed
			default:
				r.Status = schedule.Succeeded
			}
			require.NoError(t, s.Claim(ctx, r))
		}
		h, err := s.History(ctx, "j", 100)
		require.NoError(t, err)
		require.Len(t, h, 20)

		n, err := s.Prune(ctx, "j")
		require.NoError(t, err)
		h, err = s.History(ctx, "j", 100)
		require.NoError(t, err)
		var dues []int
		for _, r := range h {
			dues = append(dues, int(r.Due.Sub(slot(0))/(100*time.Millisecond)))
		}
		// Kept: the running 19, succeeded 18, 17, 16, failed 15.
		assert.Equal(t, []int{19, 18, 17, 16, 15}, dues)
		assert.EqualValues(t, 15, n)

		// A pruned slot cannot be claimed again, nor an older one.
		require.ErrorIs(t, s.Claim(ctx, running("j", 3, "late")), schedule.ErrClaimed)
		require.ErrorIs(t, s.Claim(ctx, running("j", -7, "late")), schedule.ErrClaimed)
		require.NoError(t, s.Claim(ctx, running("j", 20, "a")))
		n, err = s.Prune(ctx, "j")
		require.NoError(t, err)
		assert.Zero(t, n, "nothing more to prune")

		// Finish prunes on its own, every 16th call, in the background.
		for i := 21; i < 60; i++ {
			r := running("j", i, "a")
			require.NoError(t, s.Claim(ctx, r))
			r.Status = schedule.Succeeded
			require.NoError(t, s.Finish(ctx, r))
		}
		eventually(t, "the background pruning", func() bool {
			h, err = s.History(ctx, "j", 100)
			require.NoError(t, err)
			return len(h) < 3+1+2+16
		})
	})
}

// TestPruneKeepsTheLastRecord prunes with no failed record kept: a job's
// last record survives whatever its status, so that Last still tells a
// restart where the job stopped.
func TestPruneKeepsTheLastRecord(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithHistory(1, 0), sqlstore.WithRetention(0))
		finish := func(job string, i int, st schedule.Status) {
			r := running(job, i, "a")
			require.NoError(t, s.Claim(ctx, r))
			r.Status, r.End = st, slot(i).Add(time.Millisecond)
			require.NoError(t, s.Finish(ctx, r))
		}
		finish("ok-then-failed", 0, schedule.Succeeded)
		finish("ok-then-failed", 1, schedule.Succeeded)
		finish("ok-then-failed", 2, schedule.Failed)
		finish("only-failed", 0, schedule.Failed)
		finish("only-failed", 1, schedule.Missed)
		for _, job := range []string{"ok-then-failed", "only-failed"} {
			_, err := s.Prune(ctx, job)
			require.NoError(t, err)
			last, err := s.Last(ctx, job)
			require.NoError(t, err, job)
			assert.True(t, last.Due.Equal(slot(map[string]int{"ok-then-failed": 2, "only-failed": 1}[job])), "%s: last %v", job, last.Due)
		}
		h, err := s.History(ctx, "ok-then-failed", 10)
		require.NoError(t, err)
		assert.Len(t, h, 2, "the last record, failed, and one succeeded")
		h, err = s.History(ctx, "only-failed", 10)
		require.NoError(t, err)
		assert.Len(t, h, 2, "no record succeeded: the others are kept, up to 432, for a count of failures")
	})
}

// TestPruneKeepsTheFailuresInARow prunes, alone and in batches, a job
// whose records after its latest Succeeded one are more than the failed
// ones kept: they stay, up to 432, since schedule.WithPauseOnFailures
// counts them; those before it go, as the counts say.
func TestPruneKeepsTheFailuresInARow(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithHistory(1, 1), sqlstore.WithRetention(0))
		statuses := []schedule.Status{schedule.Succeeded, schedule.Failed, schedule.Failed, schedule.Succeeded,
			schedule.Failed, schedule.Skipped, schedule.Failed, schedule.Failed}
		for i, st := range statuses {
			r := running("j", i, "a")
			r.Status = st
			require.NoError(t, s.Claim(ctx, r))
		}
		_, err := s.Prune(ctx, "j")
		require.NoError(t, err)
		dues := func(job string) []int {
			h, err := s.History(ctx, job, 1000)
			require.NoError(t, err)
			var d []int
			for _, r := range h {
				d = append(d, int(r.Due.Sub(slot(0))/(100*time.Millisecond)))
			}
			return d
		}
		assert.Equal(t, []int{7, 6, 5, 4, 3}, dues("j"))

		// The batched pruning after Finishes, and the bound: of kept+20
		// failures in a row, the newest kept stay.
		kept, _ := strconv.Atoi(sqlstore.KeptStreak)
		n := kept + 21
		for i := range n {
			r := running("k", i, "a")
			require.NoError(t, s.Claim(ctx, r))
			r.Status = schedule.Failed
			if i == 0 {
				r.Status = schedule.Succeeded
			}
			require.NoError(t, s.Finish(ctx, r))
		}
		// Prunes counts a pruning as it is sent: the records are read
		// until one has pruned.
		eventually(t, "the background prunes", func() bool { return s.Stats().Prunes >= uint64(n/16) && len(dues("k")) < n })
		d := dues("k")
		assert.Subset(t, d, []int{0, 21, n / 2, n - 1}, "the background pruned only what the counts and the failures in a row leave")
		_, err = s.Prune(ctx, "k")
		require.NoError(t, err)
		d = dues("k")
		require.Len(t, d, kept+1)
		assert.Equal(t, n-1, d[0])
		assert.Equal(t, 21, d[kept-1])
		assert.Equal(t, 0, d[kept], "the latest Succeeded")
	})
}

// TestClaimRacesPrune makes a Claim race a pruning of its slot on
// PostgreSQL, step by step: the claim reads the old watermark, then waits
// on the row the pruning deletes; the pruning raises the watermark and
// deletes. The claim's insert then finds no conflict, and must withdraw.
func TestClaimRacesPrune(t *testing.T) {
	b := backends()[1]
	dsn := b.dsn(t)
	s := newStore(t, b, dsn)
	tb := tableFor(t)
	r := running("j", 0, "a")
	r.Status = schedule.Succeeded
	require.NoError(t, s.Claim(ctx, r))

	db := openDB(t, b.driver, dsn)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	_, err = tx.Exec("DELETE FROM "+tb+" WHERE job = 'j' AND due = $1", r.Due.UnixNano())
	require.NoError(t, err)

	claimed := make(chan error, 1)
	go func() { claimed <- s.Claim(ctx, running("j", 0, "late")) }()
	waitForLock(t, db, "INSERT INTO "+tb)
	_, err = db.Exec("INSERT INTO "+tb+"_jobs (job, pruned_until) VALUES ('j', $1)", r.Due.UnixNano())
	require.NoError(t, err)
	require.NoError(t, tx.Commit())

	require.ErrorIs(t, <-claimed, schedule.ErrClaimed, "a pruned slot was claimed again")
	_, err = s.Last(ctx, "j")
	require.ErrorIs(t, err, schedule.ErrNoRecord, "the withdrawn claim left a record")
}

// TestClaimOutlivesCancel cancels a Claim's context while the Claim waits
// for another writer: it goes on, and reports the claim it made. A
// cancelled statement may have committed; a caller told it failed would
// leave its slot claimed and not run.
func TestClaimOutlivesCancel(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		s := newStore(t, b, dsn)
		db := openDB(t, b.driver, dsn)
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		defer conn.Close()
		// Another writer holds the slot's key (PostgreSQL) or the whole
		// database (SQLite) in an open transaction.
		if b.dialect == sqlstore.PostgreSQL {
			_, err = conn.ExecContext(ctx, "BEGIN")
			require.NoError(t, err)
			_, err = conn.ExecContext(ctx, "INSERT INTO "+tableFor(t)+" (job, due, reason, status, node, err, attempt) VALUES ('j', $1, 0, 0, 'x', '', 1)", slot(0).UnixNano())
		} else {
			_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		}
		require.NoError(t, err)

		cctx, cancel := context.WithCancel(ctx)
		claimed := make(chan error, 1)
		sent := s.Stats().Statements
		go func() { claimed <- s.Claim(cctx, running("j", 0, "a")) }()
		if b.dialect == sqlstore.PostgreSQL {
			waitForLock(t, db, "INSERT INTO "+tableFor(t))
		} else {
			// SQLite's busy wait shows in the Store's count of
			// statements, which counts each retry of one that found
			// the database busy.
			eventually(t, "the Claim found the database busy", func() bool { return s.Stats().Statements >= sent+2 })
		}
		cancel()
		select {
		case err := <-claimed:
			t.Fatalf("the Claim returned while the other writer held on: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		_, err = conn.ExecContext(ctx, "ROLLBACK")
		require.NoError(t, err)
		require.NoError(t, <-claimed, "the claim was made: it must say so")
		last, err := s.Last(ctx, "j")
		require.NoError(t, err)
		assert.Equal(t, "a", last.Node)

		require.ErrorIs(t, s.Claim(cctx, running("j", 1, "a")), context.Canceled, "a Claim whose context is done does not start")
		_, err = s.Reclaim(cctx, "j", "a", schedule.Concurrency{})
		require.ErrorIs(t, err, context.Canceled)
	})
}

// waitForLock waits until a PostgreSQL statement starting with prefix
// waits on a lock.
func waitForLock(t *testing.T, db *sql.DB, prefix string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		var waiting int
		require.NoError(t, db.QueryRow(
			"SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND starts_with(query, $1)", prefix).Scan(&waiting))
		if waiting > 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "no statement %q waited on a lock", prefix)
		time.Sleep(5 * time.Millisecond)
	}
}

package sqlstore_test

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// randomText returns n bytes of hex that no database compresses.
func randomText(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// TestLongJobName: a job name up to the limit round-trips on both
// dialects; a longer one gets the same short error on both, where
// PostgreSQL alone would refuse an index entry over 2704 bytes with a
// message holding the whole name.
func TestLongJobName(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		var s *sqlstore.Store
		long := randomText(sqlstore.MaxJobLen)
		withLease(t, 100*time.Millisecond, func(lease time.Duration) bool {
			s = newStore(t, b, b.dsn(t), sqlstore.WithLease(lease))
			r := running(long, 0, "a")
			if !within(t, s.Claim(ctx, r)) || !within(t, s.Renew(ctx, r)) {
				return false
			}
			time.Sleep(lease * 3 / 2)
			got, err := s.Reclaim(ctx, long, "b", schedule.Concurrency{})
			if !within(t, err) {
				return false
			}
			assert.Equal(t, long, got.Job)
			got.Status = schedule.Succeeded
			require.NoError(t, s.Finish(ctx, got))
			last, err := s.Last(ctx, long)
			require.NoError(t, err)
			assert.Equal(t, long, last.Job)
			return true
		})

		for _, n := range []int{sqlstore.MaxJobLen + 1, 5000, 1 << 20} {
			r := running(randomText(n), 0, "a")
			want := fmt.Sprintf("sqlstore: Record.Job is %d bytes, want at most %d", n, sqlstore.MaxJobLen)
			for name, err := range map[string]error{
				"Claim":  s.Claim(ctx, r),
				"Renew":  s.Renew(ctx, r),
				"Finish": s.Finish(ctx, func() schedule.Record { r.Status = schedule.Missed; return r }()),
			} {
				if assert.Error(t, err, name) {
					assert.True(t, strings.HasPrefix(err.Error(), want), "%s: %.200s", name, err)
					assert.Less(t, len(err.Error()), 200, "%s: the error quotes the name", name)
				}
			}
		}
	})
}

// TestSQLiteInMemory: a plain in-memory SQLite database is one per
// connection, and a pool opens several: New refuses it, unless the pool
// holds one connection, rather than answer "no such table" on some calls
// later. A shared-cache one is shared by the pool's connections.
func TestSQLiteInMemory(t *testing.T) {
	db := openDB(t, "sqlite", ":memory:")
	_, err := sqlstore.New(ctx, db, sqlstore.SQLite)
	require.ErrorContains(t, err, "SetMaxOpenConns(1)")

	db = openDB(t, "sqlite", ":memory:")
	db.SetMaxOpenConns(1)
	s, err := sqlstore.New(ctx, db, sqlstore.SQLite)
	require.NoError(t, err)
	require.NoError(t, s.Claim(ctx, running("j", 0, "a")))

	db = openDB(t, "sqlite", "file:shared_mem_test?mode=memory&cache=shared")
	s, err = sqlstore.New(ctx, db, sqlstore.SQLite)
	require.NoError(t, err)
	// Several connections at once, each must see the table.
	conns := make([]*sql.Conn, 3)
	for i := range conns {
		conns[i], err = db.Conn(ctx)
		require.NoError(t, err)
	}
	for _, c := range conns {
		c.Close()
	}
	for i := range 6 {
		require.NoError(t, s.Claim(ctx, running("j", i, "a")))
	}
}

// TestZeroStore: a Store not made by New is misuse, and panics with a
// message that says so, not a nil dereference inside database/sql.
func TestZeroStore(t *testing.T) {
	var zero sqlstore.Store
	var nilStore *sqlstore.Store
	for name, s := range map[string]*sqlstore.Store{"zero": &zero, "nil": nilStore} {
		for call, f := range map[string]func(){
			"Claim":   func() { _ = s.Claim(ctx, running("j", 0, "a")) },
			"Finish":  func() { _ = s.Finish(ctx, schedule.Record{Job: "j", Due: slot(0), Status: schedule.Missed}) },
			"Renew":   func() { _ = s.Renew(ctx, running("j", 0, "a")) },
			"Reclaim": func() { _, _ = s.Reclaim(ctx, "j", "a", schedule.Concurrency{}) },
			"Last":    func() { _, _ = s.Last(ctx, "j") },
			"History": func() { _, _ = s.History(ctx, "j", 1) },
			"Prune":   func() { _, _ = s.Prune(ctx, "j") },
		} {
			assert.PanicsWithValue(t, "sqlstore: Store not made by New", f, "%s Store, %s", name, call)
		}
	}
}

// TestLeaseIgnoresNodeClocks: nodes whose clocks are an hour ahead or
// behind write Due and Start by them; the lease is the database's, so a
// claim is taken over one lease after its last renewal whatever they say.
//
// The database stamps the claim at some instant between the call of Claim
// and its return, and tells each Reclaim whether the lease has run out at
// some instant between its call and its return. So, however late the calls
// run on a busy machine, a Reclaim that succeeds has returned at least a
// lease after Claim was called, and one that fails was called less than a
// lease after Claim returned.
func TestLeaseIgnoresNodeClocks(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		withLease(t, 300*time.Millisecond, func(lease time.Duration) bool {
			const precision = time.Millisecond // of the database's timestamps, with room to spare
			dsn := b.dsn(t)
			ahead := newStore(t, b, dsn, sqlstore.WithLease(lease))
			behind := newStore(t, b, dsn, sqlstore.WithLease(lease))
			now := time.Now()
			for i, skew := range []time.Duration{time.Hour, -time.Hour} {
				job := fmt.Sprint("j", i)
				r := schedule.Record{Job: job, Due: now.Add(skew).Truncate(time.Second), Status: schedule.Running,
					Start: now.Add(skew), Node: "skewed", Attempt: 1}
				claimCalled := time.Now()
				if !within(t, ahead.Claim(ctx, r)) {
					return false
				}
				claimed := time.Now()
				// The other node's clock, an hour off the other way, does
				// not expire the lease early.
				_, err := behind.Reclaim(ctx, job, "other", schedule.Concurrency{})
				if outlived(err) {
					return false
				}
				require.ErrorIs(t, err, schedule.ErrNoRecord, "skew %v: taken over at once", skew)
				var got schedule.Record
				for {
					called := time.Now()
					got, err = behind.Reclaim(ctx, job, "other", schedule.Concurrency{})
					if err == nil {
						assert.GreaterOrEqual(t, time.Since(claimCalled), lease-precision,
							"skew %v: taken over before the lease ran out", skew)
						break
					}
					if outlived(err) {
						return false
					}
					require.ErrorIs(t, err, schedule.ErrNoRecord)
					require.Less(t, called.Sub(claimed), lease+precision,
						"skew %v: not taken over by a Reclaim called after the lease ran out", skew)
					time.Sleep(lease / 20)
				}
				t.Logf("skew %v: taken over %v after the claim returned", skew, time.Since(claimed).Round(time.Millisecond))
				assert.True(t, got.Due.Equal(r.Due), "the slot is the node's, skewed")
				r.Status = schedule.Succeeded
				require.ErrorIs(t, ahead.Finish(ctx, r), schedule.ErrLeaseLost, "a Finish after the lease was lost")
				rec, err := ahead.Last(ctx, job)
				require.NoError(t, err)
				assert.Equal(t, schedule.Running, rec.Status, "the refused Finish changed nothing")
				assert.Equal(t, "other", rec.Node)
			}
			return true
		})
	})
}

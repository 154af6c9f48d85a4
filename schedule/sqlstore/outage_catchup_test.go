package sqlstore_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// TestLockOutageCatchUp holds SQLite's write lock for 2s under a Job with
// MisfireRunAll: the claims made meanwhile time out after a lease, and
// their slots are Skipped; once the lock is released, the Job must catch
// every one of them up. Claims that were still waiting when the lock was
// released succeed; one of them must not stand for the catch-up of the
// others: the Job catches up from the first slot whose claim failed.
//
// The test waits for the catch-up, for up to patience, rather than a fixed
// time: on a loaded machine it took longer than the 2s it once allowed. A
// slot Skipped after the test saw every earlier one caught up is not the
// outage's (its claim began after the lock was released, and waited past
// its lease on a busy machine): it may be caught up after the Job stops.
func TestLockOutageCatchUp(t *testing.T) {
	b := backends()[0]
	dsn := b.dsn(t)
	const lease = 300 * time.Millisecond
	s := newStore(t, b, dsn, sqlstore.WithLease(lease), sqlstore.WithHistory(1000, 1000))

	var mu sync.Mutex
	skipped := map[int64]bool{}
	j := schedule.NewJob("j", schedule.Every(100*time.Millisecond), func(ctx context.Context, r schedule.Run) error {
		return nil
	}, schedule.WithStore(s), schedule.WithNode("n"), schedule.WithOverlap(schedule.OverlapAllow),
		schedule.WithMisfire(schedule.MisfireRunAll),
		schedule.WithObserver(func(r schedule.Record) {
			if r.Status == schedule.Skipped {
				mu.Lock()
				skipped[r.Due.UnixNano()] = true
				mu.Unlock()
			}
		}))
	require.NoError(t, j.Start(ctx))
	time.Sleep(500 * time.Millisecond)

	db := openDB(t, b.driver, dsn)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	// The Job's writes hold the lock too, for longer than the connection's
	// busy timeout on a loaded machine: take it between two of them.
	eventually(t, "SQLite's write lock taken", func() bool {
		_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err != nil {
			require.ErrorContains(t, err, "SQLITE_BUSY")
		}
		return err == nil
	})
	time.Sleep(2 * time.Second)
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)

	// succeeded returns the slots the store holds as Succeeded.
	succeeded := func() map[int64]bool {
		h, err := s.History(ctx, "j", 1000)
		require.NoError(t, err)
		done := map[int64]bool{}
		for _, r := range h {
			if r.Status == schedule.Succeeded {
				done[r.Due.UnixNano()] = true
			}
		}
		return done
	}
	// lost returns the slots of skipped that are not in done.
	lost := func(skipped, done map[int64]bool) int {
		n := 0
		for due := range skipped {
			if !done[due] {
				n++
			}
		}
		return n
	}
	eventually(t, "a claim timed out while the lock was held", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(skipped) > 0
	})
	var outage map[int64]bool // the slots Skipped up to the check that saw them caught up
	eventually(t, "every Skipped slot caught up", func() bool {
		mu.Lock()
		outage = maps.Clone(skipped)
		mu.Unlock()
		return lost(outage, succeeded()) == 0
	})
	require.NoError(t, j.Stop(ctx))

	n := lost(outage, succeeded())
	t.Logf("%d slots Skipped during the outage, %d of them never caught up", len(outage), n)
	if n > 0 {
		t.Errorf("%d of %d slots Skipped while the database was locked were not caught up (MisfireRunAll)", n, len(outage))
	}
}

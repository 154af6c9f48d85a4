package sqlstore_test

import (
	"context"
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
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err)
	time.Sleep(2 * time.Second)
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)
	time.Sleep(2 * time.Second)
	require.NoError(t, j.Stop(ctx))

	h, err := s.History(ctx, "j", 1000)
	require.NoError(t, err)
	done := map[int64]bool{}
	for _, r := range h {
		if r.Status == schedule.Succeeded {
			done[r.Due.UnixNano()] = true
		}
	}
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, skipped, "no claim timed out: the lock did not hold")
	lost := 0
	for due := range skipped {
		if !done[due] {
			lost++
		}
	}
	t.Logf("%d slots Skipped during the outage, %d of them never caught up", len(skipped), lost)
	if lost > 0 {
		t.Errorf("%d of %d slots Skipped while the database was locked were not caught up (MisfireRunAll)", lost, len(skipped))
	}
}

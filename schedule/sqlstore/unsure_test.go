package sqlstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// A Claim that failed is unsure: it may have committed. A later Claim of
// the slot through the same Store that succeeds makes the slot held, and a
// third Claim of it must get ErrClaimed, not adopt the live claim: that
// ran the slot twice at once on one node, both runs renewing one lease.
func TestUnsureClaimIsNotAdoptedOnceHeld(t *testing.T) {
	b := backends()[1]
	dsn := b.dsn(t)
	s := newStore(t, b, dsn, sqlstore.WithLease(200*time.Millisecond))
	db := openDB(t, b.driver, dsn)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	// Another writer holds the slot's key in an open transaction: the
	// first Claim waits on it past its lease, and fails.
	_, err = conn.ExecContext(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "INSERT INTO "+tableFor(t)+" (job, due, reason, status, node, err, attempt) VALUES ('j', $1, 0, 0, 'x', '', 1)", slot(0).UnixNano())
	require.NoError(t, err)
	err = s.Claim(ctx, running("j", 0, "a"))
	require.Error(t, err)
	require.NotErrorIs(t, err, schedule.ErrClaimed)
	// The server cancels the statement: the claim did not commit.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var waiting int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND starts_with(query, $1)",
			"INSERT INTO "+tableFor(t)).Scan(&waiting))
		if waiting == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the failed claim still waits")
	}
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)

	require.NoError(t, s.Claim(ctx, running("j", 0, "a")), "the catch-up's claim of the slot")
	require.ErrorIs(t, s.Claim(ctx, running("j", 0, "a")), schedule.ErrClaimed, "a second pass's claim of the slot it holds")
}

package sqlstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// A Claim on SQLite while another connection holds the write lock ends
// within its lease, as a claim on PostgreSQL waiting on a row lock does:
// the driver's busy timeout, which SQLiteDSN keeps short (it was 10s),
// does not hold it longer. The bound leaves a loaded machine two seconds
// to end the claim once its lease is over, far less than that busy
// timeout, or the Store's own wait for the lock (busyWait, 30s).
func TestSQLiteBusyClaimIsBoundedByTheLease(t *testing.T) {
	b := backends()[0]
	dsn := b.dsn(t)
	const lease = 300 * time.Millisecond
	s := newStore(t, b, dsn, sqlstore.WithLease(lease))
	db := openDB(t, b.driver, dsn)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err)
	defer conn.ExecContext(ctx, "ROLLBACK")
	start := time.Now()
	err = s.Claim(ctx, running("j", 0, "a"))
	took := time.Since(start)
	require.Error(t, err)
	t.Logf("claim failed after %v: %v", took, err)
	assert.GreaterOrEqual(t, took, lease-time.Millisecond, "the claim gave up before its lease ended")
	assert.Less(t, took, lease+2*time.Second, "the claim waited past its lease")
}

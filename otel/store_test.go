package otelcirculation_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// A job on a SQLite store whose run loses its lease (another node's name
// written over its claim): the lease lost is counted, the run ends
// Canceled, and the store's statements are recorded by operation, the
// answer that the claim is no longer the node's not counted as an error.
// (On the real clock: the lease is the database's.)
func TestStoreStatementsAndLeaseLost(t *testing.T) {
	s := newSDK(t)
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(filepath.Join(t.TempDir(), "runs.db")))
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	store, err := sqlstore.New(ctx, db, sqlstore.SQLite, sqlstore.WithLease(time.Second),
		sqlstore.WithStatementHook(s.tel.Statement))
	require.NoError(t, err)

	started, cause := make(chan struct{}), make(chan error, 1)
	j := schedule.NewJob("j", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return context.Cause(ctx)
	}, schedule.WithStore(store), schedule.WithNode("n"), schedule.WithLogger(quiet), s.tel.JobOption())
	require.NoError(t, j.Start(ctx))
	j.RunNow()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not start")
	}
	_, err = db.ExecContext(ctx, `UPDATE schedule_runs SET node = 'thief' WHERE job = 'j'`)
	require.NoError(t, err)
	select {
	case err := <-cause:
		assert.True(t, errors.Is(err, schedule.ErrLeaseLost) || errors.Is(err, schedule.ErrLeaseNotRenewed), "%v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not lose its lease")
	}
	require.NoError(t, j.Stop(ctx))

	m := s.collect(t)
	assert.Equal(t, map[string]int64{"job=j": 1}, ints(t, m["circulation.lease.lost"]))
	assert.Equal(t, map[string]int64{"job=j,reason=Manual,status=Canceled": 1}, ints(t, m["circulation.runs"]))
	assert.Equal(t, map[string]uint64{"job=j,reason=Manual": 1}, counts(t, m["circulation.run.lateness"]))
	got := counts(t, m["circulation.store.duration"])
	for _, op := range []string{"claim", "renew", "finish"} {
		assert.Positive(t, got["error=false,op="+op], "%s in %v", op, got)
	}
	for k := range got {
		assert.NotContains(t, k, "error=true")
	}
	calls := ints(t, m["circulation.store.calls"])
	// The run's claim, and the claim of its Finish, which matched no claim
	// of the node's and found the slot another's.
	assert.Equal(t, int64(2), calls["op=claim"], "%v", calls)
	assert.Equal(t, int64(1), calls["op=finish"], "%v", calls)
}

package sqlstoretest_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/circulation-go/circulation/schedule/sqlstore/sqlstoretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The server answers at its DSN; Stop cuts it off and Start brings it
// back on the same port; Remove removes its directory.
func TestPostgres(t *testing.T) {
	_, err := sqlstoretest.StartPostgres("shared_buffers 1MB")
	assert.ErrorContains(t, err, `setting "shared_buffers 1MB"`)
	pg, err := sqlstoretest.StartPostgres("shared_buffers=16MB")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer pg.Remove()
	db, err := sql.Open("pgx", pg.DSN())
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	var one int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT 1").Scan(&one))
	assert.Equal(t, 1, one)
	assert.NotZero(t, pg.Port())
	var buffers string
	require.NoError(t, db.QueryRowContext(ctx, "SHOW shared_buffers").Scan(&buffers))
	assert.Equal(t, "16MB", buffers, "the setting given")

	require.NoError(t, pg.Stop())
	db.SetMaxIdleConns(0) // a new connection for each query
	assert.Error(t, db.PingContext(ctx), "stopped")
	require.NoError(t, pg.Start())
	require.NoError(t, db.PingContext(ctx), "started again")
}

package sqlstore_test

import (
	"context"
	"database/sql"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// New against a server that accepts connections but never answers returns
// an error in its own time when its context has no deadline.
func TestNewGivesUpOnASilentServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	})
	defer func() {
		l.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	db, err := sql.Open("pgx", "postgres://u:p@"+l.Addr().String()+"/db?sslmode=disable")
	require.NoError(t, err)
	defer db.Close()
	defer sqlstore.SetNewTimeout(300 * time.Millisecond)()
	start := time.Now()
	_, err = sqlstore.New(context.Background(), db, sqlstore.PostgreSQL)
	took := time.Since(start)
	require.Error(t, err)
	assert.Less(t, took, 5*time.Second)
	assert.ErrorContains(t, err, "no answer within 300ms")
}

// OpenSQLite names the path of a database it cannot open, and why.
func TestOpenSQLiteNamesThePath(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such", "dir", "jobs.db")
	_, err := sqlstore.OpenSQLite(missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
	assert.Contains(t, err.Error(), filepath.Join(dir, "no", "such", "dir"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = sqlstore.OpenSQLite(filepath.Join(file, "jobs.db"))
	assert.ErrorContains(t, err, "is not a directory")

	path := filepath.Join(dir, "jobs.db")
	db, err := sqlstore.OpenSQLite(path)
	require.NoError(t, err)
	defer db.Close()
	s, err := sqlstore.New(ctx, db, sqlstore.SQLite)
	require.NoError(t, err)
	require.NoError(t, s.Claim(ctx, running("j", 0, "a")))
	_, err = os.Stat(path)
	require.NoError(t, err)
}

// A job whose name the store cannot hold does not start: Start returns an
// error naming the limit, where every slot would otherwise have been
// Skipped with the reason only in an Observer.
func TestJobNameTooLongForTheStore(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t))
		j := schedule.NewJob(strings.Repeat("x", 2000), schedule.Every(time.Second),
			func(context.Context, schedule.Run) error { return nil }, schedule.WithStore(s))
		err := j.Start(ctx)
		require.Error(t, err)
		assert.ErrorContains(t, err, "sqlstore: Record.Job is 2000 bytes, want at most 1024")
		assert.Less(t, len(err.Error()), 200)
		require.NoError(t, j.Stop(ctx))
		assert.ErrorContains(t, s.CheckJob("a\x00b"), "not UTF-8 text without NUL")
		assert.NoError(t, s.CheckJob("report"))
	})
}

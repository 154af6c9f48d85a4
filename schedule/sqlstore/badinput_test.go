package sqlstore_test

import (
	"errors"
	"fmt"
	"math"
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

func TestNewBadInput(t *testing.T) {
	_, err := sqlstore.New(ctx, nil, sqlstore.SQLite)
	assert.ErrorContains(t, err, "nil *sql.DB")

	b := backends()[0]
	db := openDB(t, b.driver, b.dsn(t))
	_, err = sqlstore.New(ctx, db, 0)
	assert.ErrorContains(t, err, "unknown dialect 0")
	_, err = sqlstore.New(ctx, db, 9)
	assert.ErrorContains(t, err, "unknown dialect 9")

	for _, c := range []struct {
		opt  sqlstore.Option
		want string
	}{
		{sqlstore.WithTable(""), `WithTable("")`},
		{sqlstore.WithTable("runs; DROP TABLE x"), `WithTable("runs; DROP TABLE x")`},
		{sqlstore.WithTable("Runs"), `WithTable("Runs")`},
		{sqlstore.WithTable("1runs"), `WithTable("1runs")`},
		{sqlstore.WithLease(0), "WithLease(0s)"},
		{sqlstore.WithLease(-time.Second), "WithLease(-1s)"},
		{sqlstore.WithLease(time.Duration(math.MaxInt64)), "WithLease(2562047h47m16.854775807s)"},
		{sqlstore.WithHistory(0, 1), "WithHistory(0, 1)"},
		{sqlstore.WithHistory(3, -1), "WithHistory(3, -1)"},
		{sqlstore.WithRetention(-time.Second), "WithRetention(-1s)"},
	} {
		_, err := sqlstore.New(ctx, db, sqlstore.SQLite, c.opt)
		assert.ErrorContains(t, err, c.want)
	}
	s, err := sqlstore.New(ctx, db, sqlstore.SQLite, nil, sqlstore.WithTable("ok_1"))
	require.NoError(t, err, "a nil Option is ignored")
	assert.Equal(t, sqlstore.SQLite, s.Dialect())
	assert.Equal(t, 30*time.Second, s.Lease(), "the default lease")
}

func TestSchemaTooNew(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		newStore(t, b, dsn)
		db := openDB(t, b.driver, dsn)
		_, err := db.Exec(fmt.Sprintf("UPDATE %s_schema SET version = %d", tableFor(t), sqlstore.SchemaVersion()+1))
		require.NoError(t, err)
		_, err = sqlstore.New(ctx, db, b.dialect, sqlstore.WithTable(tableFor(t)))
		require.ErrorIs(t, err, sqlstore.ErrSchemaTooNew)
		assert.ErrorContains(t, err, fmt.Sprintf("version %d", sqlstore.SchemaVersion()+1))
	})
}

// TestMigrateRace creates the schema from several pools at once, as
// replicas starting together do.
func TestMigrateRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		var wg sync.WaitGroup
		stores := make([]*sqlstore.Store, 4)
		for i := range stores {
			db := openDB(t, b.driver, dsn)
			wg.Go(func() {
				s, err := sqlstore.New(ctx, db, b.dialect, sqlstore.WithTable(tableFor(t)))
				assert.NoError(t, err)
				stores[i] = s
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		require.NoError(t, stores[0].Claim(ctx, running("j", 0, "a")))
		require.ErrorIs(t, stores[3].Claim(ctx, running("j", 0, "b")), schedule.ErrClaimed)
	})
}

func TestRecordBadInput(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t))
		ok := running("j", 0, "a")
		for _, c := range []struct {
			edit func(*schedule.Record)
			want string
		}{
			{func(r *schedule.Record) { r.Job = "" }, "Record.Job is empty"},
			{func(r *schedule.Record) { r.Due = time.Time{} }, "Record.Due is the zero Time"},
			{func(r *schedule.Record) { r.Due = time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC) }, "Record.Due 1600-01-01"},
			{func(r *schedule.Record) { r.Due = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }, "Record.Due 2300-01-01"},
			{func(r *schedule.Record) { r.Start = time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC) }, "Record.Start 0001-01-02"},
			{func(r *schedule.Record) { r.End = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }, "Record.End 9999-01-01"},
			{func(r *schedule.Record) { r.Status = 200 }, "Record.Status 200"},
			{func(r *schedule.Record) { r.Job = "a\x00b" }, `Record.Job "a\x00b" is not UTF-8`},
			{func(r *schedule.Record) { r.Node = "\xff" }, `Record.Node "\xff" is not UTF-8`},
			{func(r *schedule.Record) { r.Reason = 9 }, "Record.Reason 9"},
		} {
			r := ok
			c.edit(&r)
			assert.ErrorContains(t, s.Claim(ctx, r), c.want)
			assert.ErrorContains(t, s.Finish(ctx, r), c.want)
			assert.ErrorContains(t, s.Renew(ctx, r), c.want)
		}
		assert.ErrorContains(t, s.Finish(ctx, ok), "Finish with Record.Status Running")
		_, err := s.Last(ctx, "j")
		require.ErrorIs(t, err, schedule.ErrNoRecord, "nothing was written")

		// Odd but valid values round-trip.
		odd := ok
		odd.Job = "名前 with 'quotes'; DROP TABLE x; --"
		odd.Node = "nœud 🙂"
		odd.Err = "bad \xff bytes \x00 and " + strings.Repeat("long ", 20_000)
		odd.Due = time.Unix(0, math.MaxInt64)
		odd.Attempt = math.MaxInt32
		require.NoError(t, s.Claim(ctx, odd))
		last, err := s.Last(ctx, odd.Job)
		require.NoError(t, err)
		assert.Equal(t, odd.Job, last.Job)
		assert.True(t, last.Due.Equal(odd.Due))
		assert.Equal(t, math.MaxInt32, last.Attempt)
		assert.Equal(t, odd.Node, last.Node)
		assert.Equal(t, "bad \uFFFD bytes \uFFFD and "+strings.Repeat("long ", 20_000), last.Err,
			"an Err that is not text is stored with U+FFFD, not refused")
	})
}

// TestUnreachable: a Store whose database is gone returns errors, not
// ErrClaimed, and does not hang past its context.
func TestUnreachable(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		db := openDB(t, b.driver, dsn)
		// Finish retries for a lease: a short one.
		s, err := sqlstore.New(ctx, db, b.dialect, sqlstore.WithTable(tableFor(t)), sqlstore.WithLease(200*time.Millisecond))
		require.NoError(t, err)
		db.Close()
		err = s.Claim(ctx, running("j", 0, "a"))
		require.Error(t, err)
		assert.False(t, errors.Is(err, schedule.ErrClaimed))
		assert.ErrorContains(t, err, "sqlstore: claiming j")
		done := running("j", 0, "a")
		done.Status = schedule.Succeeded
		err = s.Finish(ctx, done)
		assert.ErrorContains(t, err, "sqlstore: finishing j")
		assert.False(t, errors.Is(err, schedule.ErrLeaseLost))
		assert.Error(t, s.Renew(ctx, running("j", 0, "a")))
		_, err = s.Reclaim(ctx, "j", "a", schedule.Concurrency{})
		assert.Error(t, err)
		assert.False(t, errors.Is(err, schedule.ErrNoRecord))
		_, err = s.Last(ctx, "j")
		assert.Error(t, err)
		assert.False(t, errors.Is(err, schedule.ErrNoRecord))
		_, err = s.History(ctx, "j", 1)
		assert.Error(t, err)
		_, err = s.Prune(ctx, "j")
		assert.Error(t, err)
	})
}

// TestSQLiteDSN opens a file whose name has the characters of a URI.
func TestSQLiteDSN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd ?name#100%.db")
	db := openDB(t, "sqlite", sqlstore.SQLiteDSN(path))
	s, err := sqlstore.New(ctx, db, sqlstore.SQLite)
	require.NoError(t, err)
	require.NoError(t, s.Claim(ctx, running("j", 0, "a")))
	_, err = os.Stat(path)
	require.NoError(t, err, "the file is where the path says")
}

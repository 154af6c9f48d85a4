package sqlstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// TestMigrateFromVersion1 makes a database of schema version 1 with
// records, then opens it with New: it is migrated to the current version,
// its records are kept, and the Store of version 1 goes on working beside
// the new one, as a replica not yet upgraded does.
func TestMigrateFromVersion1(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		tb := tableFor(t)
		db := openDB(t, b.driver, dsn)
		old, err := sqlstore.NewAtVersion(ctx, db, b.dialect, 1, sqlstore.WithTable(tb), sqlstore.WithHistory(100, 100))
		require.NoError(t, err)
		version := func() int {
			var v int
			require.NoError(t, db.QueryRow("SELECT version FROM "+tb+"_schema").Scan(&v))
			return v
		}
		require.Equal(t, 1, version())
		_, err = db.Exec("SELECT 1 FROM " + tb + "_tasks")
		require.Error(t, err, "version 1 has no definitions")

		// A replica of version 1 writes the columns of version 1: this
		// package's statements name those of later versions.
		writeV1 := func(r schedule.Record) {
			end := any(nil)
			if !r.End.IsZero() {
				end = r.End.UnixNano()
			}
			_, err := db.Exec(v1Insert(b.dialect, tb),
				r.Job, r.Due.UnixNano(), int(r.Reason), int(r.Status), r.Start.UnixNano(), end, r.Node, r.Err, r.Attempt,
				time.Now().Add(time.Hour).UnixMicro())
			require.NoError(t, err)
		}
		var wrote []schedule.Record
		for i, st := range []schedule.Status{schedule.Succeeded, schedule.Failed, schedule.Missed, schedule.Running} {
			r := running("j", i, "old")
			r.Attempt = 1
			if st != schedule.Running {
				r.Status, r.End, r.Err = st, r.Start.Add(5e6), st.String()
			}
			writeV1(r)
			wrote = append(wrote, r)
		}
		_, err = old.Prune(ctx, "j")
		require.NoError(t, err)

		s := newStore(t, b, dsn, sqlstore.WithHistory(100, 100))
		require.Equal(t, sqlstore.SchemaVersion(), version())
		require.Equal(t, 11, sqlstore.SchemaVersion())
		h, err := s.History(ctx, "j", 10)
		require.NoError(t, err)
		require.Len(t, h, len(wrote), "the records are kept")
		for k, rec := range h {
			w := wrote[len(wrote)-1-k]
			assert.True(t, rec.Due.Equal(w.Due) && rec.Start.Equal(w.Start) && rec.End.Equal(w.End), "%d: %v", k, rec)
			assert.Equal(t, w.Status, rec.Status)
			assert.Equal(t, w.Err, rec.Err)
			assert.Equal(t, "old", rec.Node)
		}

		// The old replica's statements still work on the new schema, and
		// the new one's on the old records.
		writeV1(running("j", 4, "old"))
		require.ErrorIs(t, s.Claim(ctx, running("j", 4, "new")), schedule.ErrClaimed)
		require.NoError(t, s.Retry(ctx, failed(wrote[3], "boom")), "a claim of version 1 retried")
		last, err := s.Last(ctx, "j")
		require.NoError(t, err)
		assert.True(t, last.Due.Equal(slot(4)))
		_, err = s.Since(ctx, "j", slot(0))
		require.NoError(t, err)
		v, err := s.Definitions().Create(ctx, task("t"))
		require.NoError(t, err)
		assert.Equal(t, int64(1), v)
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+tb+"_readable WHERE job = 'j'").Scan(&n))
		assert.Equal(t, 5, n)

		newStore(t, b, dsn)
		assert.Equal(t, sqlstore.SchemaVersion(), version(), "New on the current version changes nothing")
		tasks, _, err := s.Definitions().Tasks(ctx)
		require.NoError(t, err)
		assert.Len(t, tasks, 1)
	})
}

// v1Insert is the insert of a claim by a replica of schema version 1.
func v1Insert(d sqlstore.Dialect, table string) string {
	q := `INSERT INTO ` + table + ` (job, due, reason, status, start_ns, end_ns, node, err, attempt, lease_until)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	if d == sqlstore.SQLite {
		q = strings.NewReplacer("$10", "?10", "$1", "?1", "$2", "?2", "$3", "?3", "$4", "?4", "$5", "?5",
			"$6", "?6", "$7", "?7", "$8", "?8", "$9", "?9").Replace(q)
	}
	return q
}

// A definition written by a replica of schema version 4, which knows no
// catch-up window, reads as one without, once the table is at version 5;
// and such a replica, which names its columns, still writes definitions.
func TestMigrateTheCatchUpWindow(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		tb := tableFor(t)
		db := openDB(t, b.driver, dsn)
		_, err := sqlstore.NewAtVersion(ctx, db, b.dialect, 4, sqlstore.WithTable(tb))
		require.NoError(t, err)
		insert := func(name string) {
			now := "2030-01-01T00:00:00.000000Z"
			q := `INSERT INTO ` + tb + `_tasks (name, handler, business_id, spec, zone, permanent, once, paused, overlap, misfire,
	timeout, retry_attempts, retry_backoff, version, created_at, updated_at)
VALUES ('` + name + `', 'h', '', '@hourly', '', true, false, false, '', '', '0s', 0, '0s', 1, '` + now + `', '` + now + `')`
			_, err := db.Exec(q)
			require.NoError(t, err)
		}
		insert("old")

		s := newStore(t, b, dsn)
		got, _, err := s.Definitions().Get(ctx, "old")
		require.NoError(t, err)
		assert.Zero(t, got.CatchUpWindow, "a definition of version 4 has none")
		insert("written by version 4 after the migration")
		got, _, err = s.Definitions().Get(ctx, "written by version 4 after the migration")
		require.NoError(t, err)
		assert.Zero(t, got.CatchUpWindow)

		d := task("new")
		d.CatchUpWindow = cron.Duration(90 * time.Minute)
		_, err = s.Definitions().Create(ctx, d)
		require.NoError(t, err)
		got, v, err := s.Definitions().Get(ctx, "new")
		require.NoError(t, err)
		assert.Equal(t, cron.Duration(90*time.Minute), got.CatchUpWindow)
		got.CatchUpWindow = cron.Duration(time.Hour)
		_, err = s.Definitions().Update(ctx, got, v)
		require.NoError(t, err)
		got, _, err = s.Definitions().Get(ctx, "new")
		require.NoError(t, err)
		assert.Equal(t, cron.Duration(time.Hour), got.CatchUpWindow, "updated")
	})
}

// A Store migrates a table of version 5 that holds definitions to
// version 6: they read with no MaxRuns and no Jitter, and so do those a
// replica of version 5 writes after the migration; a definition with both
// is saved, read and updated.
func TestMigrateMaxRunsAndJitter(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		tb := tableFor(t)
		db := openDB(t, b.driver, dsn)
		_, err := sqlstore.NewAtVersion(ctx, db, b.dialect, 5, sqlstore.WithTable(tb))
		require.NoError(t, err)
		insert := func(name string) {
			now := "2030-01-01T00:00:00.000000Z"
			q := `INSERT INTO ` + tb + `_tasks (name, handler, business_id, spec, zone, permanent, once, paused, overlap, misfire,
	timeout, retry_attempts, retry_backoff, version, created_at, updated_at, catch_up_window)
VALUES ('` + name + `', 'h', '', '@hourly', '', true, false, false, '', '', '0s', 0, '0s', 1, '` + now + `', '` + now + `', '1h0m0s')`
			_, err := db.Exec(q)
			require.NoError(t, err)
		}
		insert("old")
		require.NoError(t, func() error {
			_, err := db.Exec(`INSERT INTO ` + tb + ` (job, due, reason, status, start_ns, end_ns, node, err, attempt)
VALUES ('j', 1000, 0, 1, 1000, 2000, 'n', '', 1)`)
			return err
		}())

		s := newStore(t, b, dsn)
		got, _, err := s.Definitions().Get(ctx, "old")
		require.NoError(t, err)
		assert.Zero(t, got.MaxRuns, "a definition of version 5 has none")
		assert.Zero(t, got.Jitter)
		assert.Equal(t, cron.Duration(time.Hour), got.CatchUpWindow, "and keeps its window")
		insert("written by version 5 after the migration")
		got, _, err = s.Definitions().Get(ctx, "written by version 5 after the migration")
		require.NoError(t, err)
		assert.Zero(t, got.MaxRuns)
		assert.Zero(t, got.Jitter)
		last, err := s.Last(ctx, "j")
		require.NoError(t, err)
		assert.Equal(t, int64(1000), last.Due.UnixNano(), "a record of version 5 reads")
		assert.True(t, last.Planned.IsZero())

		d := task("new")
		d.MaxRuns, d.Jitter = cron.MaxMaxRuns, cron.Duration(90*time.Second)
		_, err = s.Definitions().Create(ctx, d)
		require.NoError(t, err)
		got, v, err := s.Definitions().Get(ctx, "new")
		require.NoError(t, err)
		assert.Equal(t, cron.MaxMaxRuns, got.MaxRuns)
		assert.Equal(t, cron.Duration(90*time.Second), got.Jitter)
		got.MaxRuns, got.Jitter = 3, cron.Duration(time.Minute)
		_, err = s.Definitions().Update(ctx, got, v)
		require.NoError(t, err)
		got, _, err = s.Definitions().Get(ctx, "new")
		require.NoError(t, err)
		assert.Equal(t, 3, got.MaxRuns, "updated")
		assert.Equal(t, cron.Duration(time.Minute), got.Jitter, "updated")
	})
}

// TestLongestTableName makes the schema under the longest table name
// WithTable takes: every name derived from it (name_tasks_version, the
// longest) fits PostgreSQL's 63 bytes.
func TestLongestTableName(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		db := openDB(t, b.driver, dsn)
		tb := strings.Repeat("t", 48)
		if b.dialect == sqlstore.PostgreSQL {
			require.NoError(t, sqlstore.Drop(ctx, db, sqlstore.PostgreSQL, tb))
		}
		s, err := sqlstore.New(ctx, db, b.dialect, sqlstore.WithTable(tb))
		require.NoError(t, err)
		_, err = s.Definitions().Create(ctx, task("t"))
		require.NoError(t, err)
		v, err := s.Definitions().Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), v)
		require.NoError(t, s.Claim(ctx, running("j", 0, "a")))
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+tb+"_readable").Scan(&n))
		assert.Equal(t, 1, n)
	})
}

// TestMigratePauseNotes migrates a schema of version 7 holding a paused
// definition to version 8: it reads with no note, no end and no
// PauseOnFailures, as do those a replica of version 7 writes after the
// migration, and a pause with a note is kept.
func TestMigratePauseNotes(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		tb := tableFor(t)
		db := openDB(t, b.driver, dsn)
		_, err := sqlstore.NewAtVersion(ctx, db, b.dialect, 7, sqlstore.WithTable(tb))
		require.NoError(t, err)
		insert := func(name string) {
			now := "2030-01-01T00:00:00.000000Z"
			q := `INSERT INTO ` + tb + `_tasks (name, handler, business_id, spec, zone, permanent, once, paused, overlap, misfire,
	timeout, retry_attempts, retry_backoff, version, created_at, updated_at, catch_up_window, max_runs, jitter)
VALUES ('` + name + `', 'h', '', '@hourly', '', true, false, true, '', '', '0s', 0, '0s', 1, '` + now + `', '` + now + `', '0s', 0, '0s')`
			_, err := db.Exec(q)
			require.NoError(t, err)
		}
		insert("old")
		s := newStore(t, b, dsn)
		for _, name := range []string{"old", "written by version 7 after the migration"} {
			if name != "old" {
				insert(name)
			}
			got, _, err := s.Definitions().Get(ctx, name)
			require.NoError(t, err)
			assert.True(t, got.Paused, name)
			assert.Empty(t, got.PauseNote, name)
			assert.True(t, got.PausedUntil.IsZero(), name)
			assert.Zero(t, got.PauseOnFailures, name)
		}
		until := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
		require.NoError(t, s.Definitions().SetPaused(ctx, "old", true, schedule.PauseNote{Note: "upgrade", Until: until}))
		got, _, err := s.Definitions().Get(ctx, "old")
		require.NoError(t, err)
		assert.Equal(t, "upgrade", got.PauseNote)
		assert.True(t, until.Equal(got.PausedUntil))
	})
}

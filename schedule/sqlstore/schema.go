package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// A migration takes the schema from one version to the next: its
// statements for every dialect, then those of the Store's dialect.
type migration struct {
	all              []string
	postgres, sqlite []string
}

// statements returns the statements of m for d, with {t} the table name.
func (m migration) statements(d Dialect, table string) []string {
	stmts := m.all
	if d == PostgreSQL {
		stmts = append(slices.Clip(stmts), m.postgres...)
	} else {
		stmts = append(slices.Clip(stmts), m.sqlite...)
	}
	out := make([]string, len(stmts))
	for i, s := range stmts {
		out[i] = strings.ReplaceAll(s, "{t}", table)
		if testMutant == mutantNoClaimLock {
			out[i] = strings.Replace(out[i], "ORDER BY w.job FOR UPDATE", "ORDER BY w.job", 1)
		}
	}
	return out
}

// migrations[v-1] takes the schema from version v-1 to v. Versions only
// grow: a released statement is never edited, a change is a new version.
// {t} is the table name.
//
// Version 1: the run records. Times are integers: due, start_ns and end_ns
// in Unix nanoseconds by the nodes' clocks, lease_until in Unix
// microseconds by the database's clock; status and reason are
// schedule.Status and schedule.Reason.
//
// Version 2: the task definitions ({t}_tasks, see Definitions) and their
// change marker ({t}_tasks_version, one row, bumped by every write of a
// definition in its transaction), since when each job has been scheduled
// ({t}_since, Unix nanoseconds, see Since), and {t}_readable, a view of
// the run records with readable times and the names of statuses and
// reasons, for people. On PostgreSQL the times of definitions are
// timestamptz; on SQLite, text in RFC 3339, UTC, to the microsecond, fixed
// width ("2030-01-02T03:04:05.000000Z"), so that they sort as text.
//
// Version 3: runs across replicas (schedule.SharedStore). lane is 0 on the
// records of the runs of a job that allows one at a time (Concurrency.Max
// 1), and the unique index {t}_lane of the running ones keeps one run of
// the job in flight: a claim of another slot conflicts, as a claim of a
// slot that has a record does. A run that ends leaves the index with its
// status; a claim puts a run whose lease expired out of the lane (lane 1),
// after which it can be neither renewed nor retried, only taken over. stop_asked
// is 1 on a running record that a claim under OverlapReplace asked to end
// (Renew answers schedule.ErrReplaced); released is 1 on a running record
// (status 0, lease_until NULL) that a stopping node handed over, which
// Reclaim takes over and reads as schedule.Released: a replica of version 2
// neither prunes it nor takes it over. The view names it. The rows of
// {t}_jobs are also each job's lock for the claims that count its runs in
// flight under a limit above 1, on PostgreSQL.
//
// Version 4: the nodes that run jobs on the table ({t}_nodes, see
// Store.Nodes): one row a node, its heartbeat and when it started in Unix
// microseconds by the database's clock, its runs in flight and its run
// limit at its last heartbeat, and the version of this package it runs.
//
// Version 5: a task's catch-up window (cron.Task.CatchUpWindow), as
// time.Duration's String, "0s" for none: the default of the rows that a
// replica of version 4 writes.
//
// Version 6: a task's run limit (cron.Task.MaxRuns, 0 for none) and
// jitter (cron.Task.Jitter, as time.Duration's String, "0s" for none),
// the defaults of the rows that a replica of version 5 writes; and a run
// record's planned start (schedule.Record.Planned) in Unix nanoseconds,
// NULL for none.
//
// Version 7: {t}_readable names the reason schedule.Backfill (4), which a
// replica of version 6 shows as Reason(4).
//
// Version 8: a task's pause note and end (cron.Task.PauseNote, ” for
// none, and PausedUntil, NULL for none), and its PauseOnFailures (0 for
// never), the defaults of the rows that a replica of version 7 writes.
//
// Version 9: the calendars of the definitions ({t}_calendars, see
// Definitions.CreateCalendar): one row a cron.Calendar, its days joined
// by commas (empty for none: a day or range has no comma), with a version
// each, and its times as the tasks' are; and the calendars a task names
// (cron.Task.Calendars), joined by commas (empty for none: a calendar's name
// has no comma), the default of the rows that a replica of version 8
// writes.
//
// Version 10: the audit log of the definitions ({t}_audit, see
// Definitions.Audit): one row a cron.AuditEntry, its time in Unix
// nanoseconds, numbered in the order rows are kept; a replica of version
// 9 writes none.
//
// Version 11: an index of the records by due time, with their status, so
// that CountRuns counts the records of a range of slots by status from
// the index alone; a replica of version 10 keeps it as it writes.
var migrations = []migration{{all: []string{
	`CREATE TABLE {t} (
	job         TEXT     NOT NULL,
	due         BIGINT   NOT NULL,
	reason      SMALLINT NOT NULL,
	status      SMALLINT NOT NULL,
	start_ns    BIGINT,
	end_ns      BIGINT,
	node        TEXT     NOT NULL,
	err         TEXT     NOT NULL,
	attempt     INTEGER  NOT NULL,
	lease_until BIGINT,
	PRIMARY KEY (job, due)
)`,
	`CREATE INDEX {t}_running ON {t} (job, due) WHERE status = 0`,
	`CREATE TABLE {t}_jobs (
	job          TEXT   NOT NULL PRIMARY KEY,
	pruned_until BIGINT NOT NULL
)`,
}}, {
	all: []string{
		`CREATE TABLE {t}_tasks_version (version BIGINT NOT NULL)`,
		`INSERT INTO {t}_tasks_version (version) VALUES (0)`,
		`CREATE TABLE {t}_since (
	job   TEXT   NOT NULL PRIMARY KEY,
	since BIGINT NOT NULL
)`,
	},
	postgres: []string{
		`CREATE TABLE {t}_tasks (
	name           TEXT        NOT NULL PRIMARY KEY,
	handler        TEXT        NOT NULL,
	business_id    TEXT        NOT NULL,
	spec           TEXT        NOT NULL,
	zone           TEXT        NOT NULL,
	start_at       TIMESTAMPTZ,
	end_at         TIMESTAMPTZ,
	permanent      BOOLEAN     NOT NULL,
	once           BOOLEAN     NOT NULL,
	paused         BOOLEAN     NOT NULL,
	overlap        TEXT        NOT NULL,
	misfire        TEXT        NOT NULL,
	timeout        TEXT        NOT NULL,
	retry_attempts INTEGER     NOT NULL,
	retry_backoff  TEXT        NOT NULL,
	version        BIGINT      NOT NULL,
	created_at     TIMESTAMPTZ NOT NULL,
	updated_at     TIMESTAMPTZ NOT NULL
)`,
		// A time in Unix ns, x, is floored to the microsecond.
		`CREATE VIEW {t}_readable AS
SELECT job,
	TIMESTAMPTZ 'epoch' + (due - (due % 1000 + 1000) % 1000) / 1000 * INTERVAL '1 microsecond' AS due,
	CASE status WHEN 0 THEN 'Running' WHEN 1 THEN 'Succeeded' WHEN 2 THEN 'Failed'
		WHEN 3 THEN 'Canceled' WHEN 4 THEN 'Skipped' WHEN 5 THEN 'Missed'
		ELSE 'Status(' || status || ')' END AS status,
	CASE reason WHEN 0 THEN 'Scheduled' WHEN 1 THEN 'CatchUp' WHEN 2 THEN 'Manual'
		WHEN 3 THEN 'Recovered' ELSE 'Reason(' || reason || ')' END AS reason,
	attempt,
	node,
	TIMESTAMPTZ 'epoch' + (start_ns - (start_ns % 1000 + 1000) % 1000) / 1000 * INTERVAL '1 microsecond' AS start_at,
	TIMESTAMPTZ 'epoch' + (end_ns - (end_ns % 1000 + 1000) % 1000) / 1000 * INTERVAL '1 microsecond' AS end_at,
	(end_ns - start_ns) / 1000 * INTERVAL '1 microsecond' AS duration,
	err,
	CASE WHEN status = 0 THEN TIMESTAMPTZ 'epoch' + lease_until * INTERVAL '1 microsecond' END AS lease_until
FROM {t}`,
	},
	sqlite: []string{
		`CREATE TABLE {t}_tasks (
	name           TEXT    NOT NULL PRIMARY KEY,
	handler        TEXT    NOT NULL,
	business_id    TEXT    NOT NULL,
	spec           TEXT    NOT NULL,
	zone           TEXT    NOT NULL,
	start_at       TEXT,
	end_at         TEXT,
	permanent      BOOLEAN NOT NULL,
	once           BOOLEAN NOT NULL,
	paused         BOOLEAN NOT NULL,
	overlap        TEXT    NOT NULL,
	misfire        TEXT    NOT NULL,
	timeout        TEXT    NOT NULL,
	retry_attempts INTEGER NOT NULL,
	retry_backoff  TEXT    NOT NULL,
	version        BIGINT  NOT NULL,
	created_at     TEXT    NOT NULL,
	updated_at     TEXT    NOT NULL
)`,
		// A time in Unix ns, x, is floored to the second for strftime
		// and its fraction printed apart, exactly, to the microsecond.
		`CREATE VIEW {t}_readable AS
SELECT job,
	strftime('%Y-%m-%dT%H:%M:%S', (due - (due % 1000000000 + 1000000000) % 1000000000) / 1000000000, 'unixepoch')
		|| printf('.%06dZ', (due % 1000000000 + 1000000000) % 1000000000 / 1000) AS due,
	CASE status WHEN 0 THEN 'Running' WHEN 1 THEN 'Succeeded' WHEN 2 THEN 'Failed'
		WHEN 3 THEN 'Canceled' WHEN 4 THEN 'Skipped' WHEN 5 THEN 'Missed'
		ELSE 'Status(' || status || ')' END AS status,
	CASE reason WHEN 0 THEN 'Scheduled' WHEN 1 THEN 'CatchUp' WHEN 2 THEN 'Manual'
		WHEN 3 THEN 'Recovered' ELSE 'Reason(' || reason || ')' END AS reason,
	attempt,
	node,
	strftime('%Y-%m-%dT%H:%M:%S', (start_ns - (start_ns % 1000000000 + 1000000000) % 1000000000) / 1000000000, 'unixepoch')
		|| printf('.%06dZ', (start_ns % 1000000000 + 1000000000) % 1000000000 / 1000) AS start_at,
	strftime('%Y-%m-%dT%H:%M:%S', (end_ns - (end_ns % 1000000000 + 1000000000) % 1000000000) / 1000000000, 'unixepoch')
		|| printf('.%06dZ', (end_ns % 1000000000 + 1000000000) % 1000000000 / 1000) AS end_at,
	CASE WHEN start_ns IS NOT NULL AND end_ns IS NOT NULL
		THEN printf('%.3fs', (end_ns - start_ns) / 1e9) END AS duration,
	err,
	CASE WHEN status = 0 THEN
		strftime('%Y-%m-%dT%H:%M:%S', (lease_until - (lease_until % 1000000 + 1000000) % 1000000) / 1000000, 'unixepoch')
		|| printf('.%06dZ', (lease_until % 1000000 + 1000000) % 1000000) END AS lease_until
FROM {t}`,
	},
}, {
	all: []string{
		`ALTER TABLE {t} ADD COLUMN stop_asked SMALLINT NOT NULL DEFAULT 0`,
		`ALTER TABLE {t} ADD COLUMN released SMALLINT NOT NULL DEFAULT 0`,
		`ALTER TABLE {t} ADD COLUMN lane SMALLINT`,
		`CREATE UNIQUE INDEX {t}_lane ON {t} (job) WHERE lane = 0 AND status = 0`,
		`DROP VIEW {t}_readable`,
	},
	postgres: []string{claimCountedFuncSQL},
}, {
	all: []string{
		`CREATE TABLE {t}_nodes (
	node      TEXT    NOT NULL PRIMARY KEY,
	started   BIGINT  NOT NULL,
	heartbeat BIGINT  NOT NULL,
	running   INTEGER NOT NULL,
	run_limit INTEGER NOT NULL,
	version   TEXT    NOT NULL
)`,
	},
}, {
	all: []string{`ALTER TABLE {t}_tasks ADD COLUMN catch_up_window TEXT NOT NULL DEFAULT '0s'`},
}, {
	all: []string{
		`ALTER TABLE {t}_tasks ADD COLUMN max_runs BIGINT NOT NULL DEFAULT 0`,
		`ALTER TABLE {t}_tasks ADD COLUMN jitter TEXT NOT NULL DEFAULT '0s'`,
		`ALTER TABLE {t} ADD COLUMN planned_ns BIGINT`,
	},
}, {
	all: []string{`DROP VIEW {t}_readable`}, // its CREATE VIEW, version 3's with Backfill, is made by init
}, {
	all: []string{
		`ALTER TABLE {t}_tasks ADD COLUMN pause_note TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE {t}_tasks ADD COLUMN pause_on_failures INTEGER NOT NULL DEFAULT 0`,
	},
	postgres: []string{`ALTER TABLE {t}_tasks ADD COLUMN paused_until TIMESTAMPTZ`},
	sqlite:   []string{`ALTER TABLE {t}_tasks ADD COLUMN paused_until TEXT`},
}, {
	all: []string{`ALTER TABLE {t}_tasks ADD COLUMN calendars TEXT NOT NULL DEFAULT ''`},
	postgres: []string{`CREATE TABLE {t}_calendars (
	name       TEXT        NOT NULL PRIMARY KEY,
	zone       TEXT        NOT NULL,
	days       TEXT        NOT NULL,
	note       TEXT        NOT NULL,
	version    BIGINT      NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL
)`},
	sqlite: []string{`CREATE TABLE {t}_calendars (
	name       TEXT   NOT NULL PRIMARY KEY,
	zone       TEXT   NOT NULL,
	days       TEXT   NOT NULL,
	note       TEXT   NOT NULL,
	version    BIGINT NOT NULL,
	created_at TEXT   NOT NULL,
	updated_at TEXT   NOT NULL
)`},
}, {
	postgres: []string{`CREATE TABLE {t}_audit (
	id     BIGSERIAL PRIMARY KEY,
	at_ns  BIGINT    NOT NULL,
	actor  TEXT      NOT NULL,
	action TEXT      NOT NULL,
	kind   TEXT      NOT NULL,
	name   TEXT      NOT NULL,
	detail TEXT      NOT NULL
)`, `CREATE INDEX {t}_audit_name ON {t}_audit (name, id)`},
	sqlite: []string{`CREATE TABLE {t}_audit (
	id     INTEGER PRIMARY KEY AUTOINCREMENT,
	at_ns  BIGINT  NOT NULL,
	actor  TEXT    NOT NULL,
	action TEXT    NOT NULL,
	kind   TEXT    NOT NULL,
	name   TEXT    NOT NULL,
	detail TEXT    NOT NULL
)`, `CREATE INDEX {t}_audit_name ON {t}_audit (name, id)`},
}, {
	all: []string{`CREATE INDEX IF NOT EXISTS {t}_due ON {t} (due, status, released)`},
}}

func init() {
	// Version 3's view is version 2's, with the Released status.
	released := func(stmts []string) []string {
		for _, s := range stmts {
			if strings.HasPrefix(s, "CREATE VIEW") {
				s = strings.Replace(s, "CASE status WHEN 0 THEN 'Running'",
					"CASE WHEN released = 1 THEN 'Released' ELSE CASE status WHEN 0 THEN 'Running'", 1)
				s = strings.Replace(s, "ELSE 'Status(' || status || ')' END AS status",
					"ELSE 'Status(' || status || ')' END END AS status", 1)
				s = strings.Replace(s, "CASE WHEN status = 0 THEN", "CASE WHEN status = 0 AND released = 0 THEN", 1)
				return []string{s}
			}
		}
		panic("sqlstore: no view in schema version 2")
	}
	migrations[2].postgres = append(released(migrations[1].postgres), migrations[2].postgres...)
	migrations[2].sqlite = released(migrations[1].sqlite)
	// Version 6's claims under a limit keep the planned start, p.
	f := strings.NewReplacer(
		"a integer, m bigint)", "a integer, m bigint, p bigint)",
		"node, err, attempt, lease_until)", "node, err, attempt, planned_ns, lease_until)",
		"c.x, c.a, now_us + lease", "c.x, c.a, c.p, now_us + lease").Replace(claimCountedFuncSQL)
	if f == claimCountedFuncSQL || strings.Count(f, "planned_ns")+strings.Count(f, "c.p,")+strings.Count(f, "p bigint)") != 3 {
		panic("sqlstore: the claims function of schema version 3 changed")
	}
	migrations[5].postgres = []string{f}
	// Version 7's view is version 3's, with the Backfill reason.
	backfill := func(stmts []string) []string {
		const recovered = "WHEN 3 THEN 'Recovered'"
		for _, s := range stmts {
			if strings.HasPrefix(s, "CREATE VIEW") && strings.Contains(s, recovered) {
				return []string{strings.Replace(s, recovered, recovered+" WHEN 4 THEN 'Backfill'", 1)}
			}
		}
		panic("sqlstore: no view in schema version 3")
	}
	migrations[6].postgres = backfill(migrations[2].postgres)
	migrations[6].sqlite = backfill(migrations[2].sqlite)
}

// SchemaVersion is the version of the schema this package creates and
// reads.
func SchemaVersion() int { return len(migrations) }

// migrate creates the schema table, checks its version and applies the
// missing migrations up to version target, all in one transaction that excludes other migrating
// Stores: an advisory lock on PostgreSQL, BEGIN IMMEDIATE on SQLite.
func (s *Store) migrate(ctx context.Context, target int) error {
	// Opening a connection runs the DSN's pragmas; on SQLite, switching a
	// new file to WAL can find another pool doing the same and answer
	// busy at once, whatever the busy timeout.
	var conn *sql.Conn
	err := s.retry(ctx, func() error {
		var err error
		conn, err = s.db.Conn(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: connecting: %w", err)
	}
	defer conn.Close()

	t := s.opts.table
	// A schema already at the version is only read: on a busy SQLite
	// file, whose one writer the running Stores keep busy, a Store that
	// joins them needs no write lock.
	var current int
	if err := conn.QueryRowContext(ctx, "SELECT version FROM "+t+"_schema").Scan(&current); err == nil && current == target && target > 0 {
		if s.dialect == SQLite {
			return s.checkShared(ctx, conn)
		}
		return s.checkIsolation(ctx, conn)
	}
	begin := "BEGIN"
	if s.dialect == SQLite {
		// WAL lets readers run beside the one writer, across processes;
		// the mode is kept in the file. An in-memory database answers
		// "memory", which is fine.
		var mode string
		err := s.retry(ctx, func() error {
			return conn.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		})
		if err != nil {
			return fmt.Errorf("sqlstore: setting journal_mode=WAL: %w", err)
		}
		begin = "BEGIN IMMEDIATE"
	}
	err = s.retry(ctx, func() error {
		_, err := conn.ExecContext(ctx, begin)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: beginning the migration: %w", err)
	}
	done := false
	defer func() {
		if !done {
			// A fresh context: the caller's may be what failed.
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	if s.dialect == PostgreSQL {
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "sqlstore:"+t); err != nil {
			return fmt.Errorf("sqlstore: locking the migration: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+t+"_schema (version INTEGER NOT NULL)"); err != nil {
		return fmt.Errorf("sqlstore: creating %s_schema: %w", t, err)
	}
	version := 0
	err = conn.QueryRowContext(ctx, "SELECT version FROM "+t+"_schema").Scan(&version)
	switch {
	case err == sql.ErrNoRows:
		if _, err := conn.ExecContext(ctx, "INSERT INTO "+t+"_schema (version) VALUES (0)"); err != nil {
			return fmt.Errorf("sqlstore: initializing %s_schema: %w", t, err)
		}
	case err != nil:
		return fmt.Errorf("sqlstore: reading the schema version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("%w: table %s is at version %d, this package knows %d", ErrSchemaTooNew, t, version, len(migrations))
	}
	if version < 0 {
		return fmt.Errorf("sqlstore: table %s_schema holds version %d", t, version)
	}
	for v := version; v < target; v++ {
		for _, stmt := range migrations[v].statements(s.dialect, t) {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("sqlstore: migrating %s to version %d: %w", t, v+1, err)
			}
		}
	}
	if version < target {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("UPDATE %s_schema SET version = %d", t, target)); err != nil {
			return fmt.Errorf("sqlstore: recording schema version %d: %w", target, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("sqlstore: committing the migration: %w", err)
	}
	done = true
	if s.dialect == SQLite {
		return s.checkShared(ctx, conn)
	}
	return s.checkIsolation(ctx, conn)
}

// checkIsolation returns an error if PostgreSQL runs the pool's
// transactions at another isolation level than read committed: a claim
// that counts a job's runs in flight locks the job, then counts in a
// statement of its own, whose snapshot must be taken after the lock.
func (s *Store) checkIsolation(ctx context.Context, conn *sql.Conn) error {
	var level string
	if err := conn.QueryRowContext(ctx, "SHOW transaction_isolation").Scan(&level); err != nil {
		return fmt.Errorf("sqlstore: reading the transaction isolation: %w", err)
	}
	if level != "read committed" {
		return fmt.Errorf("sqlstore: PostgreSQL runs transactions at isolation level %q: a Store needs read committed "+
			"(set default_transaction_isolation, in the DSN or the server)", level)
	}
	return nil
}

// checkShared returns an error if the SQLite database has no file (":memory:",
// or "" for a temporary one) and is not shared by the pool's connections:
// each connection would then have a database of its own, and the tables
// New made would be missing on the others. It opens a second connection
// while conn is held, unless the pool is limited to one.
func (s *Store) checkShared(ctx context.Context, conn *sql.Conn) error {
	var file string
	if err := conn.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
		return fmt.Errorf("sqlstore: reading the database's file: %w", err)
	}
	if file != "" || s.db.Stats().MaxOpenConnections == 1 {
		return nil
	}
	other, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: connecting: %w", err)
	}
	defer other.Close()
	var v int
	if err := other.QueryRowContext(ctx, "SELECT version FROM "+s.opts.table+"_schema").Scan(&v); err != nil {
		return fmt.Errorf("sqlstore: the SQLite database has no file and each connection has its own: "+
			"call db.SetMaxOpenConns(1), share it (file:name?mode=memory&cache=shared) or use a file (SQLiteDSN): %w", err)
	}
	return nil
}

package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// migrations[v-1] takes the schema from version v-1 to v. Versions only
// grow: a released statement is never edited, a change is a new version.
// {t} is the table name. Times are integers: due, start_ns and end_ns in
// Unix nanoseconds by the nodes' clocks, lease_until in Unix microseconds
// by the database's clock; status and reason are schedule.Status and
// schedule.Reason.
var migrations = [][]string{{
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
}}

// SchemaVersion is the version of the schema this package creates and
// reads.
func SchemaVersion() int { return len(migrations) }

// migrate creates the schema table, checks its version and applies the
// missing migrations, all in one transaction that excludes other migrating
// Stores: an advisory lock on PostgreSQL, BEGIN IMMEDIATE on SQLite.
func (s *Store) migrate(ctx context.Context) error {
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
	for v := version; v < len(migrations); v++ {
		for _, stmt := range migrations[v] {
			if _, err := conn.ExecContext(ctx, strings.ReplaceAll(stmt, "{t}", t)); err != nil {
				return fmt.Errorf("sqlstore: migrating %s to version %d: %w", t, v+1, err)
			}
		}
	}
	if version < len(migrations) {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("UPDATE %s_schema SET version = %d", t, len(migrations))); err != nil {
			return fmt.Errorf("sqlstore: recording schema version %d: %w", len(migrations), err)
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("sqlstore: committing the migration: %w", err)
	}
	done = true
	if s.dialect == SQLite {
		return s.checkShared(ctx, conn)
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

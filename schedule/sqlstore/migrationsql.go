package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// The schema for a DBA: the SQL that New would run, to be read and run by
// hand, and the version a database is at, read without changing it.

// MigrationSQL returns the script that takes the tables of a Store on
// table (see WithTable) from schema version from to this package's,
// SchemaVersion, on dialect d: the statements New runs, in one
// transaction, for a DBA to read and run where New may not change the
// schema. From 0, it creates the tables. The script first checks that
// the database is at version from, and fails there, before any change,
// if it is not; it ends by recording the new version, so that New then
// finds the schema current and changes nothing. Run it so that it stops
// at the first error: psql -v ON_ERROR_STOP=1 -f, sqlite3 -bail. It
// returns "" if from is SchemaVersion, and an error if from is negative
// or above SchemaVersion (wrapping ErrSchemaTooNew), if the dialect is
// unknown, or if table is not a name WithTable takes.
func MigrationSQL(d Dialect, table string, from int) (string, error) {
	if d != SQLite && d != PostgreSQL {
		return "", fmt.Errorf("sqlstore: unknown dialect %d", uint8(d))
	}
	if !validIdent(table) {
		return "", fmt.Errorf("sqlstore: MigrationSQL(%q): want 1 to 48 of [a-z0-9_], not starting with a digit", table)
	}
	switch {
	case from < 0:
		return "", fmt.Errorf("sqlstore: MigrationSQL from version %d", from)
	case from > len(migrations):
		return "", fmt.Errorf("%w: version %d, this package knows %d", ErrSchemaTooNew, from, len(migrations))
	case from == len(migrations):
		return "", nil
	}
	to := len(migrations)
	var b strings.Builder
	stmt := func(s string) { b.WriteString(s + ";\n") }
	fmt.Fprintf(&b, "-- The tables %s of circulation's schedule/sqlstore, from schema version %d to %d, on %v:\n", table, from, to, d)
	if d == PostgreSQL {
		b.WriteString("-- run with psql -v ON_ERROR_STOP=1 -f FILE. It changes nothing on a database at another version.\n")
		stmt("BEGIN")
		stmt("SELECT pg_advisory_xact_lock(hashtext('sqlstore:" + table + "'))")
	} else {
		b.WriteString("-- run with sqlite3 -bail DATABASE < FILE. It changes nothing on a database at another version.\n")
		stmt("PRAGMA journal_mode=WAL")
		stmt("BEGIN IMMEDIATE")
	}
	stmt("CREATE TABLE IF NOT EXISTS " + table + "_schema (version INTEGER NOT NULL)")
	stmt("INSERT INTO " + table + "_schema (version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM " + table + "_schema)")
	check := "at_version_" + strconv.Itoa(from)
	stmt("CREATE TEMP TABLE " + table + "_migration (" + check + " BOOLEAN, CONSTRAINT schema_" + check + " CHECK (" + check + "))")
	stmt("INSERT INTO " + table + "_migration SELECT version = " + strconv.Itoa(from) + " FROM " + table + "_schema")
	stmt("DROP TABLE " + table + "_migration")
	for v := from; v < to; v++ {
		fmt.Fprintf(&b, "\n-- Version %d\n", v+1)
		for _, s := range migrations[v].statements(d, table) {
			stmt(s)
		}
	}
	b.WriteString("\n")
	stmt("UPDATE " + table + "_schema SET version = " + strconv.Itoa(to))
	stmt("COMMIT")
	return b.String(), nil
}

// SchemaVersionOf returns the schema version of the tables of a Store on
// table in db, as New reads it, changing nothing: 0 if there are none,
// and maybe one above SchemaVersion, for a database that a later version
// of this package migrated.
func SchemaVersionOf(ctx context.Context, db *sql.DB, d Dialect, table string) (int, error) {
	if db == nil {
		return 0, fmt.Errorf("sqlstore: SchemaVersionOf with a nil *sql.DB")
	}
	if !validIdent(table) {
		return 0, fmt.Errorf("sqlstore: SchemaVersionOf(%q): want 1 to 48 of [a-z0-9_], not starting with a digit", table)
	}
	var exists bool
	var err error
	switch d {
	case PostgreSQL:
		err = db.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", table+"_schema").Scan(&exists)
	case SQLite:
		err = db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)", table+"_schema").Scan(&exists)
	default:
		return 0, fmt.Errorf("sqlstore: unknown dialect %d", uint8(d))
	}
	if err != nil || !exists {
		return 0, wrapSchemaRead(err)
	}
	var v int
	err = db.QueryRowContext(ctx, "SELECT version FROM "+table+"_schema").Scan(&v)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	return v, wrapSchemaRead(err)
}

func wrapSchemaRead(err error) error {
	if err != nil {
		return fmt.Errorf("sqlstore: reading the schema version: %w", err)
	}
	return nil
}

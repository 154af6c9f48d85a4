package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
)

// Drop removes the tables and the view of a Store on table (see
// WithTable) from db, with every record and definition in them, if they
// exist: for a test, a benchmark, or a migration of the application that
// moves the records elsewhere. The view {table}_readable is dropped first,
// since it holds the table. No Store may use the table meanwhile.
func Drop(ctx context.Context, db *sql.DB, d Dialect, table string) error {
	if db == nil {
		return fmt.Errorf("sqlstore: Drop with a nil *sql.DB")
	}
	if d != SQLite && d != PostgreSQL {
		return fmt.Errorf("sqlstore: unknown dialect %d", uint8(d))
	}
	if !validIdent(table) {
		return fmt.Errorf("sqlstore: Drop(%q): want 1 to 48 of [a-z0-9_], not starting with a digit", table)
	}
	stmts := []string{"DROP VIEW IF EXISTS " + table + "_readable"}
	for _, suffix := range []string{"", "_jobs", "_schema", "_tasks", "_tasks_version", "_since", "_nodes", "_calendars", "_audit"} {
		stmts = append(stmts, "DROP TABLE IF EXISTS "+table+suffix)
	}
	if d == PostgreSQL {
		stmts = append(stmts, "DROP FUNCTION IF EXISTS "+table+"_claim_counted")
	}
	for _, stmt := range stmts {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqlstore: dropping %s: %w", table, err)
		}
	}
	return nil
}

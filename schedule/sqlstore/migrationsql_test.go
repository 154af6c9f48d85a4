package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// schemaOf describes the tables, columns, indexes, views and functions of
// the Store on table in db, with the table's name replaced by T, so that
// two tables' schemas compare equal if New would have made both alike.
func schemaOf(t *testing.T, db *sql.DB, d sqlstore.Dialect, table string) string {
	t.Helper()
	var queries []string
	if d == sqlstore.SQLite {
		queries = []string{`SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master
			WHERE substr(name, 1, length($1)) = $1 ORDER BY name`}
	} else {
		queries = []string{
			`SELECT table_name, column_name, data_type, is_nullable, COALESCE(column_default, '')
			FROM information_schema.columns WHERE strpos(table_name, $1) = 1 ORDER BY table_name, ordinal_position`,
			`SELECT indexname, indexdef FROM pg_indexes WHERE strpos(tablename, $1) = 1 ORDER BY indexname`,
			`SELECT viewname, definition FROM pg_views WHERE strpos(viewname, $1) = 1 ORDER BY viewname`,
			`SELECT proname, prosrc FROM pg_proc WHERE strpos(proname, $1) = 1 ORDER BY proname`,
		}
	}
	var b strings.Builder
	for _, q := range queries {
		rows, err := db.Query(q, table)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%v\t", v)
			}
			b.WriteString("\n")
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	require.NotZero(t, b.Len(), "no schema for %s", table)
	return strings.ReplaceAll(b.String(), table, "T")
}

// runScript runs script on one connection of db, as a DBA's client
// would, and rolls back what it left open if it failed.
func runScript(t *testing.T, db *sql.DB, script string) error {
	t.Helper()
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, script)
	if err != nil {
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
	}
	return err
}

// TestMigrationSQL runs the script MigrationSQL prints on a database
// without the tables and on one at an earlier version: each ends with the
// schema New makes, recorded at the current version, so that New then
// changes nothing; run on a database at another version than it was
// printed for, it fails before any change.
func TestMigrationSQL(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		db := openDB(t, b.driver, dsn)
		base := tableFor(t)
		tNew, tScript, tOld := base+"_n", base+"_s", base+"_o"
		for _, tb := range []string{tNew, tScript, tOld} {
			require.NoError(t, sqlstore.Drop(ctx, db, b.dialect, tb))
		}
		_, err := sqlstore.New(ctx, db, b.dialect, sqlstore.WithTable(tNew))
		require.NoError(t, err)
		want := schemaOf(t, db, b.dialect, tNew)

		v, err := sqlstore.SchemaVersionOf(ctx, db, b.dialect, tScript)
		require.NoError(t, err)
		require.Zero(t, v, "no tables")
		script, err := sqlstore.MigrationSQL(b.dialect, tScript, 0)
		require.NoError(t, err)
		require.NoError(t, runScript(t, db, script))
		v, err = sqlstore.SchemaVersionOf(ctx, db, b.dialect, tScript)
		require.NoError(t, err)
		assert.Equal(t, sqlstore.SchemaVersion(), v)
		assert.Equal(t, want, schemaOf(t, db, b.dialect, tScript), "the schema New makes")
		s, err := sqlstore.New(ctx, db, b.dialect, sqlstore.WithTable(tScript))
		require.NoError(t, err)
		_, err = s.Definitions().Create(ctx, task("report"))
		require.NoError(t, err)

		// From version 5, once; a second run fails, changing nothing.
		_, err = sqlstore.NewAtVersion(ctx, db, b.dialect, 5, sqlstore.WithTable(tOld))
		require.NoError(t, err)
		v, err = sqlstore.SchemaVersionOf(ctx, db, b.dialect, tOld)
		require.NoError(t, err)
		require.Equal(t, 5, v)
		script, err = sqlstore.MigrationSQL(b.dialect, tOld, 5)
		require.NoError(t, err)
		assert.NotContains(t, script, "CREATE TABLE "+tOld+" (", "only the versions after 5")
		assert.Contains(t, script, "-- Version 6\n")
		require.NoError(t, runScript(t, db, script))
		assert.Equal(t, want, schemaOf(t, db, b.dialect, tOld))
		err = runScript(t, db, script)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "schema_at_version_5", "the check names the version expected")
		v, err = sqlstore.SchemaVersionOf(ctx, db, b.dialect, tOld)
		require.NoError(t, err)
		assert.Equal(t, sqlstore.SchemaVersion(), v)
		assert.Equal(t, want, schemaOf(t, db, b.dialect, tOld))

		script, err = sqlstore.MigrationSQL(b.dialect, tOld, sqlstore.SchemaVersion())
		require.NoError(t, err)
		assert.Empty(t, script, "nothing to do")
		_, err = sqlstore.MigrationSQL(b.dialect, tOld, sqlstore.SchemaVersion()+1)
		require.ErrorIs(t, err, sqlstore.ErrSchemaTooNew)
		_, err = sqlstore.MigrationSQL(b.dialect, "Bad-Name", 0)
		require.ErrorContains(t, err, `"Bad-Name"`)
	})
}

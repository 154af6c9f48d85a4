package main

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// runAsDBA runs script on the database as a DBA would: with psql or
// sqlite3, stopping at the first error, or, without them, on one
// connection of the driver.
func runAsDBA(t *testing.T, b backend, db []string, dsn, script string) {
	t.Helper()
	var c *exec.Cmd
	if b.dialect == sqlstore.PostgreSQL {
		if _, err := exec.LookPath("psql"); err == nil {
			c = exec.CommandContext(ctx, "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", "-")
		}
	} else if _, err := exec.LookPath("sqlite3"); err == nil {
		c = exec.CommandContext(ctx, "sqlite3", "-bail", db[1]) // -db FILE
	}
	if c == nil {
		t.Logf("no psql or sqlite3: the script runs on the driver")
		conn, err := openDB(t, b.driver, dsn).Conn(ctx)
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.ExecContext(ctx, script)
		require.NoError(t, err)
		return
	}
	c.Stdin = strings.NewReader(script)
	out, err := c.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

func TestMigrate(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		db, dsn, table := b.open(t)
		version := strconv.Itoa(sqlstore.SchemaVersion())

		r := cmd(t, "", args(db, "tasks", "list")...)
		assert.Equal(t, 1, r.code, "no tables")
		assert.Empty(t, r.out)
		assert.Contains(t, r.err, "circulation: ")
		assert.Contains(t, r.err, "circulation migrate creates")

		// The SQL for a DBA, run as a DBA runs it.
		script := ok(t, args(db, "migrate", "-print")...)
		assert.Contains(t, script, "-- Version 1\n")
		assert.Contains(t, script, "-- Version "+version+"\n")
		assert.Contains(t, script, "CREATE TABLE "+table+"_tasks (")
		runAsDBA(t, b, db, dsn, script)
		assert.Equal(t, "[]\n", ok(t, args(db, "tasks", "list", "-json")...), "the schema is current")
		assert.Equal(t, "the tables "+table+" are at schema version "+version+" already\n", ok(t, args(db, "migrate")...))
		r = cmd(t, "", args(db, "migrate", "-print")...)
		assert.Equal(t, result{err: "circulation: the tables " + table + " are at schema version " + version + " already: no SQL to run\n"}, r)

		// The same script, printed without a database, for its dialect.
		offline := []string{"-db", "/nonexistent/dir/x.db"}
		if b.dialect == sqlstore.PostgreSQL {
			offline = []string{"-dsn", "postgres://nobody@127.0.0.1:1/none", "-table", table}
		}
		assert.Equal(t, script, ok(t, args(offline, "migrate", "-print", "-from", "0")...))

		// A database behind this tool's version is refused, not changed.
		sqldb := openDB(t, b.driver, dsn)
		prev := strconv.Itoa(sqlstore.SchemaVersion() - 1)
		_, err := sqldb.Exec("UPDATE " + table + "_schema SET version = " + prev)
		require.NoError(t, err)
		r = cmd(t, "", args(db, "tasks", "create", "x", "-handler", "h", "-spec", "@every 1h", "-permanent")...)
		assert.Equal(t, 1, r.code)
		assert.Equal(t, "circulation: the tables "+table+" are at schema version "+prev+", and this tool needs "+version+
			": run circulation migrate, or circulation migrate -print for the SQL\n", r.err)
		script = ok(t, args(db, "migrate", "-print")...)
		assert.Contains(t, script, "-- Version "+version+"\n")
		assert.NotContains(t, script, "-- Version "+prev+"\n")
		_, err = sqldb.Exec("UPDATE " + table + "_schema SET version = " + version)
		require.NoError(t, err)

		// migrate itself, on another table.
		other := args(db, "-table", table+"_m")
		var res struct {
			Table    string
			From, To int
		}
		require.NoError(t, json.Unmarshal([]byte(ok(t, args(other, "migrate", "-json")...)), &res))
		assert.Equal(t, table+"_m", res.Table)
		assert.Equal(t, 0, res.From)
		assert.Equal(t, sqlstore.SchemaVersion(), res.To)
		assert.Equal(t, "[]\n", ok(t, args(other, "tasks", "list", "-json")...))
		if b.dialect == sqlstore.PostgreSQL {
			t.Cleanup(func() { _ = sqlstore.Drop(ctx, sqldb, b.dialect, table+"_m") })
		}
	})
}

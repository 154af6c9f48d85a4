package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUsage checks the exit status and the message of command lines
// that do not read: 2, and the usage, on standard error.
func TestUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x.db")
	for _, c := range []struct {
		args []string
		err  string
	}{
		{nil, "circulation: no command\nusage: circulation [-dsn URL | -db FILE]"},
		{[]string{"bogus"}, `circulation: unknown command "bogus"`},
		{[]string{"-bogus", "tasks", "list"}, "circulation: flag provided but not defined: -bogus"},
		{[]string{"tasks"}, "circulation: tasks: no subcommand"},
		{[]string{"tasks", "frob"}, `circulation: tasks: unknown subcommand "frob"`},
		{[]string{"tasks", "list", "-db", file, "extra"}, `circulation: tasks list: unexpected argument "extra"`},
		{[]string{"tasks", "show", "-db", file}, "circulation: tasks show: missing argument\nusage: circulation tasks show NAME"},
		{[]string{"tasks", "list"}, "circulation: no database: give -dsn URL (PostgreSQL) or -db FILE (SQLite)"},
		{[]string{"tasks", "list", "-db", file, "-dsn", "postgres://x"}, "circulation: both a PostgreSQL URL and a SQLite file"},
		{[]string{"tasks", "pause", "x", "-db", file, "-for", "1h", "-until", "2030-01-01T00:00:00Z"}, "circulation: tasks pause: -for or -until, not both"},
		{[]string{"tasks", "create", "-db", file, "-f", "a.json", "x"}, "circulation: tasks create: -f with a name or the flags of a field"},
		{[]string{"migrate", "-db", file, "-from", "3"}, "circulation: migrate: -from goes with -print"},
	} {
		r := cmd(t, "", c.args...)
		assert.Equal(t, 2, r.code, c.args)
		assert.True(t, strings.HasPrefix(r.err, c.err), "%v: %s", c.args, r.err)
		assert.Empty(t, r.out, c.args)
	}

	// -h prints the usage on standard output, and succeeds.
	r := cmd(t, "", "tasks", "create", "-h")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.out, "usage: circulation tasks create NAME")
	assert.Contains(t, r.out, "-retry-backoff value\tthe pause before the first retry (retry.backoff), a duration such as 90s")
	assert.Contains(t, ok(t, "help"), "commands:")

	// An operation that fails is 1: no such file.
	r = cmd(t, "", "tasks", "list", "-db", file)
	assert.Equal(t, result{code: 1, err: "circulation: no SQLite database " + file + ": circulation migrate creates it\n"}, r)
	r = cmd(t, "", "tasks", "import", filepath.Join(t.TempDir(), "none.json"), "-db", file)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.err, "no such file or directory")
}

package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/circulation-go/circulation/schedule/sqlstore"
	"github.com/circulation-go/circulation/schedule/sqlstore/sqlstoretest"
)

// The tests run the command as a user does: the binary, built once by
// TestMain, against a SQLite file and a PostgreSQL that TestMain starts
// with initdb and pg_ctl (or the one CIRCULATION_TEST_PG_DSN names).

var (
	// bin is the built command.
	bin string
	// pg is the PostgreSQL the tests run against, and why there is none.
	pg struct {
		dsn string
		err error
	}
)

var ctx = context.Background()

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "circulation-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "circulation")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	if dsn := os.Getenv("CIRCULATION_TEST_PG_DSN"); dsn != "" {
		pg.dsn = dsn
	} else if s, err := sqlstoretest.StartPostgres(); err != nil {
		pg.err = err
		if os.Getenv("CI") != "" {
			fmt.Fprintf(os.Stderr, "circulation: CI is set and PostgreSQL could not be started: %v\n", err)
			return 1
		}
	} else {
		pg.dsn = s.DSN()
		defer s.Remove()
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	return code
}

// A backend is a database the command runs against: its flags, and how
// the test opens it itself to check what the command did.
type backend struct {
	name    string
	dialect sqlstore.Dialect
	driver  string
	// open returns the flags that name the test's database (a new SQLite
	// file, or a table of its own on PostgreSQL, without the tables),
	// and its data source name and table.
	open func(t *testing.T) (flags []string, dsn, table string)
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// tableFor names a table after the test, so that tests sharing the
// PostgreSQL server do not share definitions.
func tableFor(t *testing.T) string {
	name := nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return "t_" + strings.Trim(name, "_")
}

func backends() []backend {
	return []backend{
		{name: "SQLite", dialect: sqlstore.SQLite, driver: "sqlite", open: func(t *testing.T) ([]string, string, string) {
			file := filepath.Join(t.TempDir(), "tasks.db")
			return []string{"-db", file}, sqlstore.SQLiteDSN(file), "schedule_runs"
		}},
		{name: "PostgreSQL", dialect: sqlstore.PostgreSQL, driver: "pgx", open: func(t *testing.T) ([]string, string, string) {
			if pg.dsn == "" {
				t.Skipf("no PostgreSQL (CI fails instead): %v", pg.err)
			}
			tb := tableFor(t)
			if err := sqlstore.Drop(ctx, openDB(t, "pgx", pg.dsn), sqlstore.PostgreSQL, tb); err != nil {
				t.Fatal(err)
			}
			return []string{"-dsn", pg.dsn, "-table", tb}, pg.dsn, tb
		}},
	}
}

// eachBackend runs f as a subtest on SQLite and on PostgreSQL.
func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

// openDB opens a pool and closes it when the test ends.
func openDB(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A result is what a run of the command printed, and its exit status.
type result struct {
	out, err string
	code     int
}

// cmd runs the command with args, stdin as its standard input, in UTC,
// with none of its environment variables.
func cmd(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	c := exec.CommandContext(ctx, bin, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CIRCULATION_") && !strings.HasPrefix(kv, "TZ=") {
			env = append(env, kv)
		}
	}
	c.Env = append(env, "TZ=UTC")
	c.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", args, err)
	}
	return result{out: out.String(), err: errOut.String(), code: code}
}

// ok runs the command and fails t unless it exits 0 with nothing on its
// standard error; it returns the standard output.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := cmd(t, "", args...)
	if r.code != 0 || r.err != "" {
		t.Fatalf("circulation %s: exit status %d\nstderr: %s\nstdout: %s", strings.Join(args, " "), r.code, r.err, r.out)
	}
	return r.out
}

// args returns a new slice of the flags of the database, then more.
func args(db []string, more ...string) []string {
	return append(append([]string(nil), db...), more...)
}

// writeFile writes text to a new file and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tasks.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

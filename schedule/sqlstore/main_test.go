package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/circulation-go/circulation/schedule/sqlstore"
	"github.com/circulation-go/circulation/schedule/sqlstore/sqlstoretest"
)

// pg is the PostgreSQL the tests run against: one TestMain starts, or the
// one SQLSTORE_PG_DSN names (then pg.server is nil and the outage test
// skips). pgErr says why there is none.
var pg struct {
	server *sqlstoretest.Postgres
	dsn    string
	err    error
}

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(helperMain(role))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if dsn := os.Getenv("SQLSTORE_PG_DSN"); dsn != "" {
		pg.dsn = dsn
	} else if s, err := sqlstoretest.StartPostgres(); err != nil {
		pg.err = err
		if os.Getenv("CI") != "" {
			fmt.Fprintf(os.Stderr, "sqlstore: CI is set and PostgreSQL could not be started: %v\n", err)
			return 1
		}
	} else {
		pg.server, pg.dsn = s, s.DSN()
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

// A backend is a database the suite runs on.
type backend struct {
	name    string
	dialect sqlstore.Dialect
	driver  string
	// dsn returns the data source name for the test, and the table the
	// test's Stores use (one per test on PostgreSQL, one file per test on
	// SQLite).
	dsn func(t testing.TB) string
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// tableFor names a table after the test, so that tests sharing the
// PostgreSQL server do not share records.
func tableFor(t testing.TB) string {
	name := nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return "t_" + strings.Trim(name, "_")
}

func backends() []backend {
	return []backend{
		{name: "SQLite", dialect: sqlstore.SQLite, driver: "sqlite", dsn: func(t testing.TB) string {
			return sqlstore.SQLiteDSN(filepath.Join(t.TempDir(), "runs.db"))
		}},
		{name: "PostgreSQL", dialect: sqlstore.PostgreSQL, driver: "pgx", dsn: func(t testing.TB) string {
			needPostgres(t)
			// A fresh table for each run of the test (-count).
			db := openDB(t, "pgx", pg.dsn)
			tb := tableFor(t)
			if err := sqlstore.Drop(ctx, db, sqlstore.PostgreSQL, tb); err != nil {
				t.Fatal(err)
			}
			return pg.dsn
		}},
	}
}

// needPostgres skips t when there is no PostgreSQL; TestMain has already
// failed the run if CI is set.
func needPostgres(t testing.TB) {
	t.Helper()
	if pg.dsn == "" {
		t.Skipf("no PostgreSQL: %v", pg.err)
	}
}

// openDB opens a pool and closes it when the test ends.
func openDB(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newStore opens a Store on a new pool of dsn, with the test's table,
// and closes both when the test ends.
func newStore(t testing.TB, b backend, dsn string, opts ...sqlstore.Option) *sqlstore.Store {
	t.Helper()
	db := openDB(t, b.driver, dsn)
	opts = append([]sqlstore.Option{sqlstore.WithTable(tableFor(t))}, opts...)
	s, err := sqlstore.New(context.Background(), db, b.dialect, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// eachBackend runs f as a subtest on SQLite and on PostgreSQL.
func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

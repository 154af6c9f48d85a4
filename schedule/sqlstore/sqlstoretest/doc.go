// Package sqlstoretest starts a throwaway PostgreSQL for tests: the tests
// of code that keeps its jobs in a schedule/sqlstore Store can run against
// a real server, as this module's own do, with nothing to set up but
// Debian's postgresql package (apt-get install postgresql).
//
// StartPostgres runs initdb and pg_ctl in a temporary directory, with the
// server on 127.0.0.1 and a free port, trusting its user postgres; Remove
// stops it and removes the directory, and a watcher does so too once the
// test process is gone, should it end without Remove (a test that panics).
// Stop and Start stop and start it again, for a test of an outage. Run as
// root, the server runs as the user postgres, or nobody, as initdb
// requires.
//
// A TestMain starts one for the package's tests:
//
//	var pg *sqlstoretest.Postgres
//
//	func TestMain(m *testing.M) {
//		var err error
//		if pg, err = sqlstoretest.StartPostgres(); err != nil {
//			fmt.Fprintln(os.Stderr, err) // or skip the tests that need it
//			os.Exit(1)
//		}
//		code := m.Run()
//		pg.Remove()
//		os.Exit(code)
//	}
package sqlstoretest

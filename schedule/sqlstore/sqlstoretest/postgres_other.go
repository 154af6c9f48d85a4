//go:build !unix

package sqlstoretest

import "errors"

// A Postgres is a throwaway PostgreSQL server, started by StartPostgres.
type Postgres struct{}

// StartPostgres returns an error: the server is started on Unix only.
func StartPostgres(...string) (*Postgres, error) {
	return nil, errors.New("sqlstoretest: PostgreSQL is started on Unix only")
}

// DSN returns "".
func (*Postgres) DSN() string { return "" }

// Port returns 0.
func (*Postgres) Port() int { return 0 }

// Start returns an error.
func (*Postgres) Start() error { return errors.New("sqlstoretest: not on Unix") }

// Stop returns an error.
func (*Postgres) Stop() error { return errors.New("sqlstoretest: not on Unix") }

// Remove does nothing.
func (*Postgres) Remove() {}

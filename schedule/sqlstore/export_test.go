package sqlstore

import (
	"context"
	"database/sql"
	"time"
)

// SetNewTimeout makes New give up after d when its context has no
// deadline, until restore is called.
func SetNewTimeout(d time.Duration) (restore func()) {
	newTimeout = d
	return func() { newTimeout = NewTimeout }
}

// NewAtVersion is New, migrating the schema to version at most: a
// database of an earlier version, for the tests of migrations.
func NewAtVersion(ctx context.Context, db *sql.DB, d Dialect, version int, opts ...Option) (*Store, error) {
	return newAt(ctx, db, d, version, opts...)
}

// Mutants are the mistakes the tests across replicas must catch, by name.
var Mutants = map[string]uint8{
	"overlap per replica":      mutantLocalOverlap,
	"release records Canceled": mutantNoRelease,
	"claims without a lock":    mutantNoClaimLock,
}

// SetMutant breaks the store with mutant m until restore is called.
func SetMutant(m uint8) (restore func()) {
	testMutant = m
	return func() { testMutant = mutantNone }
}

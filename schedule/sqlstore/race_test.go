//go:build race

package sqlstore_test

// race is set under the race detector, which makes SQLite, a C library
// translated to Go, several times slower.
const race = true

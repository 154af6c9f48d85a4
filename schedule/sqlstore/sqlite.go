package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// busyWait bounds how long a statement is retried while SQLite reports
// the database busy or locked by another connection or process.
const busyWait = 30 * time.Second

// retry runs f, and on SQLite runs it again while it fails because another
// writer holds the database, with a growing pause, for up to busyWait or
// until ctx is done: a Claim's context ends one lease after it started.
// The driver's own wait for the lock, its busy timeout, is not cut short by
// the context, so a connection's busy timeout adds to how long a statement
// may wait: SQLiteDSN sets a short one, and leaves the waiting to retry.
func (s *Store) retry(ctx context.Context, f func() error) error {
	err := f()
	if s.dialect != SQLite || !isBusy(err) {
		return err
	}
	deadline := time.Now().Add(busyWait)
	pause := time.Millisecond
	t := time.NewTimer(pause)
	defer t.Stop()
	for isBusy(err) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		err = f()
		pause = min(2*pause, 50*time.Millisecond)
		t.Reset(pause)
	}
	return err
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED, by the
// driver's code when it has one (modernc.org/sqlite's errors do), by its
// message otherwise.
func isBusy(err error) bool {
	if err == nil {
		return false
	}
	var c interface{ Code() int }
	if errors.As(err, &c) {
		code := c.Code() & 0xff
		return code == 5 || code == 6
	}
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked") ||
		strings.Contains(msg, "SQLITE_LOCKED")
}

// SQLiteDSN returns a modernc.org/sqlite data source name for the file at
// path with the settings a Store wants: WAL, a 100ms busy timeout, and
// immediate transactions. The Store retries a statement that finds the
// database locked, within its context, so the short busy timeout is what
// keeps a Claim within its lease while another process holds the lock;
// with a busy timeout of 10s, a Claim could wait 10s. Any path will do:
// its '%', '?' and '#' are escaped.
func SQLiteDSN(path string) string {
	path = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + path + "?_pragma=busy_timeout(" + strconv.Itoa(busyTimeoutMS) + ")&_pragma=journal_mode(WAL)&_txlock=immediate"
}

// busyTimeoutMS is SQLiteDSN's busy timeout, in milliseconds.
const busyTimeoutMS = 100

// OpenSQLite opens the SQLite database file at path, creating it if need
// be, with SQLiteDSN's settings and the modernc.org/sqlite driver, which
// the caller imports for its side effect:
//
//	import _ "modernc.org/sqlite"
//
//	db, err := sqlstore.OpenSQLite("jobs.db")
//	...
//	store, err := sqlstore.New(ctx, db, sqlstore.SQLite)
//
// Unlike sql.Open, it checks that the file can be opened, and its errors
// name the path: a directory that does not exist is reported as such. The
// pool it returns holds one connection: SQLite runs one writer at a time,
// and a Store's writes from several connections of one process only wait
// for each other's locks.
func OpenSQLite(path string) (*sql.DB, error) {
	if path == "" {
		return nil, errors.New("sqlstore: OpenSQLite with an empty path")
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("sqlstore: SQLite database %s: its directory %s: %w", path, dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("sqlstore: SQLite database %s: %s is not a directory", path, dir)
	}
	db, err := sql.Open("sqlite", SQLiteDSN(path))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: SQLite database %s: %w (import _ \"modernc.org/sqlite\" to register its driver)", path, err)
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: SQLite database %s: %w", path, err)
	}
	return db, nil
}

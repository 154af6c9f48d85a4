package sqlstore

import (
	"context"
	"errors"
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

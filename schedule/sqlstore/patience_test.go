package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// patience bounds the wait for something that must happen: a catch-up, a
// takeover, a record. It is no estimate of how long that takes (a second
// or two on a loaded machine under the race detector): a test fails at it
// only if the thing never happens.
const patience = time.Minute

// eventually waits until cond reports true, checking every 20ms, and fails
// t if it has not after patience. what says what was awaited.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(patience); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, patience)
		}
	}
}

// withLease runs f with a lease of base, and, each time f reports that it
// could not tell, with a lease twice as long, up to a minute.
//
// It is for a test of what holds while a lease is fresh: that a claim is
// not taken over, that no lease has expired yet. Such a check tells only
// if the steps it times (from the call that stamped the lease to the
// return of the call that looked at it) took less than the lease, which a
// busy machine does not promise for a short one. So f checks that first,
// by the clock, and returns false without checking if they took longer;
// f must check everything else each time it runs. Each run of f should
// start from a new table (backend.dsn).
func withLease(t *testing.T, base time.Duration, f func(lease time.Duration) (told bool)) {
	t.Helper()
	for lease := base; ; lease *= 2 {
		if f(lease) {
			return
		}
		if t.Failed() {
			return
		}
		if lease >= time.Minute {
			t.Fatalf("the steps timed against a lease took longer than %v, every time", lease)
		}
		t.Logf("too slow to tell with a lease of %v: again with %v", lease, 2*lease)
	}
}

// outlived reports whether err says that a call ran out of time: the
// context of a Store's Claim or Renew ends a lease after the call, which a
// call on a busy machine may outlast when the lease is short. A test under
// withLease then reports that it could not tell.
func outlived(err error) bool {
	return errors.Is(err, context.DeadlineExceeded)
}

// within reports whether a call bounded by a lease was done within it: it
// returns false if err says the call outlived it, and fails t if err is
// any other error.
func within(t *testing.T, err error, msgAndArgs ...any) bool {
	t.Helper()
	if outlived(err) {
		return false
	}
	require.NoError(t, err, msgAndArgs...)
	return true
}

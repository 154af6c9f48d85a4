package sqlstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
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

// A leaseClock is a Store whose calls that stamp a lease (ClaimRun, Renew,
// Retry) are timed, and those that end it (Finish, Release): for a test
// under withLease that must know whether its node kept its leases fresh.
// A claim stays fresh while each such call ends less than a lease after
// the start of the one that stamped the lease before it; Late reports
// whether one did not, or a lease was neither renewed nor ended in time,
// so that a takeover is the machine's delay and tells nothing.
type leaseClock struct {
	*sqlstore.Store
	mu   sync.Mutex
	last map[time.Time]time.Time // by Due: the start of the latest call that stamped its lease
	late bool
}

func newLeaseClock(s *sqlstore.Store) *leaseClock {
	return &leaseClock{Store: s, last: map[time.Time]time.Time{}}
}

// stamped notes a call that began at start for the slot due at due and
// returned err; ended says it ended the lease.
func (c *leaseClock) stamped(due, start time.Time, err error, ended bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		return
	}
	if prev, ok := c.last[due]; ok && time.Since(prev) >= c.Lease() {
		c.late = true
	}
	if ended {
		delete(c.last, due)
	} else {
		c.last[due] = start
	}
}

// Late reports whether a call that stamped or ended a lease came late, or
// a lease is neither renewed nor ended yet, a lease after it was stamped.
func (c *leaseClock) Late() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, start := range c.last {
		if time.Since(start) >= c.Lease() {
			c.late = true
		}
	}
	return c.late
}

func (c *leaseClock) ClaimRun(ctx context.Context, r schedule.Record, cc schedule.Concurrency) (time.Time, error) {
	start := time.Now()
	t, err := c.Store.ClaimRun(ctx, r, cc)
	if time.Since(start) >= c.Lease() {
		c.mu.Lock()
		c.late = true
		c.mu.Unlock()
	}
	c.stamped(r.Due, start, err, false)
	return t, err
}

func (c *leaseClock) Renew(ctx context.Context, r schedule.Record) error {
	start := time.Now()
	err := c.Store.Renew(ctx, r)
	c.stamped(r.Due, start, err, false)
	return err
}

func (c *leaseClock) Retry(ctx context.Context, r schedule.Record) error {
	start := time.Now()
	err := c.Store.Retry(ctx, r)
	c.stamped(r.Due, start, err, false)
	return err
}

func (c *leaseClock) Finish(ctx context.Context, r schedule.Record) error {
	err := c.Store.Finish(ctx, r)
	c.stamped(r.Due, time.Time{}, err, true)
	return err
}

func (c *leaseClock) Release(ctx context.Context, r schedule.Record) error {
	err := c.Store.Release(ctx, r)
	c.stamped(r.Due, time.Time{}, err, true)
	return err
}

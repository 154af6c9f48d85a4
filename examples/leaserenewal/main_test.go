package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/circulation-go/circulation/examples/internal/cmdtest"
)

func TestMain(m *testing.M) {
	cmdtest.RunMainIfChild(main)
	goleak.VerifyTestMain(m)
}

const ms = time.Millisecond

// story runs the whole story in the test's synctest bubble, where time is
// fake and exact, with a 600ms lease; then it lets an hour pass, to catch
// any renewal that would come after the end.
func story(t *testing.T, w io.Writer) *report {
	t.Helper()
	r, err := run(context.Background(), w, config{lease: 600 * ms})
	require.NoError(t, err)
	time.Sleep(time.Hour)
	require.Equal(t, r.renewals, r.store.renewals(), "renewals after the end")
	return r
}

// attempts returns the times of owner's renewals that succeeded (ok) or
// failed.
func attempts(r *report, owner string, ok bool) []time.Duration {
	var at []time.Duration
	for _, rn := range r.renewals {
		if rn.owner == owner && (rn.err == nil) == ok {
			at = append(at, rn.at)
		}
	}
	return at
}

// Each job's watchdog renews every lease/3 (200ms) from the moment the
// lock is taken, and the last renewal before the release is the last one.
func TestRenewsEveryThirdOfTheLeaseUntilReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t, io.Discard)
		assert.Equal(t, []time.Duration{200 * ms, 400 * ms, 600 * ms, 800 * ms}, attempts(r, "report-1", true))
		assert.Empty(t, attempts(r, "report-1", false))
		assert.Equal(t, job{locked: 0, ended: 900 * ms, expires: 1400 * ms}, r.jobs["report-1"])

		assert.Equal(t, []time.Duration{2800 * ms}, attempts(r, "report-3", true))
		assert.Equal(t, job{locked: 2600 * ms, ended: 2900 * ms, expires: 3400 * ms}, r.jobs["report-3"])
		assert.Len(t, r.renewals, 4+9+1, "renewals in all: %+v", r.renewals)
	})
}

// Redis is down from 1.3s to 1.45s: the renewal at 1.4s fails and is
// retried 100ms (lease/6) later, which succeeds; then the watchdog is back
// to every 200ms.
func TestFailedRenewalIsRetriedSooner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t, io.Discard)
		ok := attempts(r, "report-2", true)
		assert.Equal(t, []time.Duration{1200 * ms, 1500 * ms, 1700 * ms, 1900 * ms}, ok)
		failed := attempts(r, "report-2", false)
		require.NotEmpty(t, failed)
		assert.Equal(t, 1400*ms, failed[0])
	})
}

// Redis is down from 2.0s to 2.55s, and the lease, last renewed at 1.9s,
// ends at 2.5s. The watchdog retries at 2.1s, 2.2s and 2.3s; at 2.4s the
// next try would come at the lease's end, so it gives up and cancels the
// job at once, 100ms before the lease ends. Nobody else can have taken the
// lock while report-2 still worked: report-3 takes it at 2.6s.
func TestGivesUpBeforeTheLeaseEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t, io.Discard)
		assert.Equal(t, []time.Duration{1400 * ms, 2100 * ms, 2200 * ms, 2300 * ms, 2400 * ms}, attempts(r, "report-2", false))
		j := r.jobs["report-2"]
		assert.ErrorIs(t, j.lost, errLost)
		assert.ErrorIs(t, j.lost, errUnreachable)
		assert.Equal(t, 2400*ms, j.ended)
		assert.Equal(t, 2500*ms, j.expires)
		assert.Less(t, j.ended, j.expires)
		assert.Greater(t, r.jobs["report-3"].locked, j.expires)
	})
}

// A watchdog that finds its lock gone (the lease ran out, and another
// owner took the key) stops at once and cancels its holder's context.
func TestLockTakenByAnotherOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &timeline{w: io.Discard, start: time.Now()}
		store := &redis{start: log.start, keys: map[string]entry{}}
		l, ctx, err := acquire(context.Background(), log, store, "k", "a", 600*ms)
		require.NoError(t, err)
		time.Sleep(100 * ms)
		store.mu.Lock()
		store.keys["k"] = entry{owner: "b", expires: time.Now().Add(time.Hour)}
		store.mu.Unlock()
		<-ctx.Done()
		assert.Equal(t, 200*ms, time.Since(log.start), "cancelled at the first renewal")
		assert.ErrorIs(t, context.Cause(ctx), errNotHeld)
		time.Sleep(time.Hour)
		assert.Len(t, store.renewals(), 1)
		l.release()
		assert.ErrorIs(t, store.unlock("k", "a"), errNotHeld)
	})
}

func TestLockedByAnotherOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &redis{start: time.Now(), keys: map[string]entry{}}
		require.NoError(t, store.lock("k", "a", time.Second))
		_, _, err := acquire(context.Background(), &timeline{w: io.Discard}, store, "k", "b", time.Second)
		assert.ErrorIs(t, err, errLocked)
	})
}

func TestOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		story(t, &out)
		assert.Equal(t, ` 0.000s  redis will be unreachable from 1.300s to 1.450s and from 2.000s to 2.550s
 0.000s  report-1: locked "orders" with a 600ms lease; the watchdog renews it every 200ms
 0.200s  watchdog report-1: renewed; the lease ends at 0.800s
 0.400s  watchdog report-1: renewed; the lease ends at 1.000s
 0.600s  watchdog report-1: renewed; the lease ends at 1.200s
 0.800s  watchdog report-1: renewed; the lease ends at 1.400s
 0.900s  report-1: work done; the watchdog is stopped
 0.900s  report-1: unlocked, after 4 renewal(s); none can follow
 1.000s  report-2: locked "orders" with a 600ms lease; the watchdog renews it every 200ms
 1.200s  watchdog report-2: renewed; the lease ends at 1.800s
 1.400s  watchdog report-2: renewal failed: connection refused; retrying in 100ms, before the lease ends at 1.800s
 1.500s  watchdog report-2: renewed; the lease ends at 2.100s
 1.700s  watchdog report-2: renewed; the lease ends at 2.300s
 1.900s  watchdog report-2: renewed; the lease ends at 2.500s
 2.100s  watchdog report-2: renewal failed: connection refused; retrying in 100ms, before the lease ends at 2.500s
 2.200s  watchdog report-2: renewal failed: connection refused; retrying in 100ms, before the lease ends at 2.500s
 2.300s  watchdog report-2: renewal failed: connection refused; retrying in 100ms, before the lease ends at 2.500s
 2.400s  watchdog report-2: renewal failed: connection refused; the lease ends at 2.500s, before another try: gives up
 2.400s  report-2: stops working, 100ms before the lease ends: lease lost: last renewal failed: connection refused
 2.400s  report-2: unlock failed: connection refused; the lease expires by itself at 2.500s
 2.600s  report-3: locked "orders" with a 600ms lease; the watchdog renews it every 200ms
 2.800s  watchdog report-3: renewed; the lease ends at 3.400s
 2.900s  report-3: work done; the watchdog is stopped
 2.900s  report-3: unlocked, after 1 renewal(s); none can follow
`, out.String())
	})
}

func TestInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*ms)
		defer cancel()
		r, err := run(ctx, io.Discard, config{lease: 600 * ms})
		require.NoError(t, err)
		j := r.jobs["report-2"]
		assert.True(t, errors.Is(j.lost, context.DeadlineExceeded), "%v", j.lost)
		assert.Equal(t, 1500*ms, j.ended)
		assert.NotContains(t, r.jobs, "report-3")
		time.Sleep(time.Hour)
		assert.Equal(t, r.renewals, r.store.renewals(), "renewals after the end")
	})
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	cmdtest.BadInput{
		"-lease 10ms": "leaserenewal: -lease must be between 60ms and 1.5s, got 10ms (see -h)",
		"-lease 30s":  "leaserenewal: -lease must be between 60ms and 1.5s, got 30s (see -h)",
		"-lease long": "leaserenewal: invalid value \"long\" for flag -lease: parse error (see -h)",
		"-lease":      "leaserenewal: flag needs an argument: -lease (see -h)",
		"orders":      "leaserenewal: unexpected argument \"orders\" (see -h)",
	}.Check(t)
}

func TestRunsFromTheCommandLine(t *testing.T) {
	// Real time on a possibly loaded machine: how many renewals fit before
	// each unlock varies (TestOutput checks the exact story on a fake
	// clock). The default lease, 600ms: with 60ms, a loaded machine held
	// the watchdog past the lease.
	stdout, stderr, code := cmdtest.Run(t)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "report-1: unlocked, after ")
}

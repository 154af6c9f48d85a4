package keepalive_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/examples/keepalive"
)

// goleak fails the package's tests if any goroutine outlives them: a
// Heartbeat or Registration that a test forgot to Close while it had a
// ping or an attempt in flight.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ms = time.Millisecond

// A timeline records the times of events, from any goroutine, since it was
// made. The fake clock of synctest orders a run before the test's read of
// what it recorded, but the race detector does not know that: runs share
// what they record through a mutex, as here, an atomic or a channel.
type timeline struct {
	start time.Time
	mu    sync.Mutex
	at    []time.Duration
}

func newTimeline() *timeline { return &timeline{start: time.Now()} }

// mark records now and returns how many events it has recorded.
func (l *timeline) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Since(l.start))
	return len(l.at)
}

func (l *timeline) times() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.at)
}

// Inside synctest.Test, time is a fake clock that starts at midnight
// 2000-01-01 UTC and moves only when every goroutine of the test is
// blocked: time.Sleep(2500 * ms) returns at once, after every ping due
// before then has run, and time.Since reads exact durations. A Trigger on
// the default scheduler (time.AfterFunc) runs on that clock.
func TestHeartbeatPingsWhenQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pings := newTimeline()
		h := keepalive.NewHeartbeat(time.Second, func(context.Context) { pings.mark() })
		defer h.Close(context.Background())

		h.Start()
		time.Sleep(2500 * ms) // pings at 1s and 2s
		h.Seen()              // a message at 2.5s: the ping due at 3s moves to 3.5s
		time.Sleep(2500 * ms) // to 5s

		assert.Equal(t, []time.Duration{1000 * ms, 2000 * ms, 3500 * ms, 4500 * ms}, pings.times())
	})
}

// synctest.Wait returns once every other goroutine of the test is blocked:
// here, once the ping in flight waits on release. That makes "nothing else
// started" something a test can assert.
func TestPingsDuringAPingCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		started, finished := newTimeline(), newTimeline()
		h := keepalive.NewHeartbeat(time.Minute, func(ctx context.Context) {
			started.mark()
			select {
			case <-release:
			case <-ctx.Done():
			}
			finished.mark()
		})
		defer h.Close(context.Background())

		h.PingNow()
		synctest.Wait() // the ping has started and waits on release
		require.Len(t, started.times(), 1)

		time.Sleep(time.Second)
		for range 5 {
			h.PingNow() // during the ping: the five coalesce into one more
		}
		synctest.Wait()
		assert.Len(t, started.times(), 1, "a ping ran alongside the one in flight")

		time.Sleep(time.Second)
		release <- struct{}{} // the first ping ends at 2s, the second starts at once
		synctest.Wait()
		release <- struct{}{}
		synctest.Wait()
		assert.Equal(t, []time.Duration{0, 2 * time.Second}, started.times())
		assert.Equal(t, []time.Duration{2 * time.Second, 2 * time.Second}, finished.times())

		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		assert.Len(t, started.times(), 2, "the next ping is due a minute after the last")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Len(t, started.times(), 3)
		release <- struct{}{}
	})
}

// Close cancels the ping in flight, waits until it has returned, and leaves
// nothing pending: an hour later, a message seen after Close included, no
// ping has run. Close takes no fake time, since the ping returns as soon as
// its context is cancelled.
func TestCloseLeavesNothingRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var pings atomic.Int32
		var returned atomic.Bool
		h := keepalive.NewHeartbeat(time.Second, func(ctx context.Context) {
			pings.Add(1)
			<-ctx.Done() // a peer that never answers
			returned.Store(true)
		})
		h.Start()
		time.Sleep(1500 * ms) // the first ping started at 1s and hangs

		require.NoError(t, h.Close(context.Background()))
		assert.True(t, returned.Load(), "Close returned before the ping did")
		assert.Equal(t, 1500*ms, time.Since(start))

		h.Seen() // a late message: closed is closed
		time.Sleep(time.Hour)
		assert.Equal(t, int32(1), pings.Load())
	})
}

// A Registration's attempts follow its Backoff to the nanosecond: a success
// waits Base, each failure doubles the delay up to Max, and an attempt
// still running at Timeout is abandoned, its context cancelled with
// context.DeadlineExceeded, the delay counted from the Timeout.
func TestRegistrationBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		attempts := newTimeline()
		hung := make(chan error, 1)
		errUnavailable := errors.New("registry unavailable")
		r := keepalive.Register(func(ctx context.Context) error {
			switch attempts.mark() {
			case 2, 4:
				return errUnavailable
			case 3:
				<-ctx.Done() // hangs until its Timeout
				hung <- ctx.Err()
				return ctx.Err()
			}
			return nil
		}, circulation.Backoff{Base: time.Second, Max: 4 * time.Second, Timeout: 500 * ms})
		defer r.Close(context.Background())

		time.Sleep(13 * time.Second)

		assert.Equal(t, []time.Duration{
			0,               // at once; succeeds: Base (1s)
			1 * time.Second, // fails: 2s
			3 * time.Second, // hangs, abandoned at 3.5s: 4s from then
			7500 * ms,       // fails: 8s, capped at Max (4s)
			11500 * ms,      // succeeds: Base
			12500 * ms,      // succeeds
		}, attempts.times())
		assert.ErrorIs(t, <-hung, context.DeadlineExceeded)
		assert.NoError(t, r.Err())
	})
}

// An error wrapped by circulation.Permanent stops the Registration, and Err
// reports it.
func TestRegistrationStopsOnPermanentError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts atomic.Int32
		r := keepalive.Register(func(context.Context) error {
			if attempts.Add(1) == 3 {
				return circulation.Permanent(errors.New("410 Gone"))
			}
			return nil
		}, circulation.Backoff{Base: time.Second, Max: time.Minute})
		defer r.Close(context.Background())

		time.Sleep(time.Hour)

		assert.Equal(t, int32(3), attempts.Load())
		assert.ErrorIs(t, r.Err(), circulation.ErrPermanent)
		assert.EqualError(t, r.Err(), "410 Gone")
	})
}

// goleak.Find lists the goroutines that should not be there. A Heartbeat
// whose Close was forgotten while a ping is in flight leaves that ping's
// goroutine behind, and goleak finds it, naming the function; after Close
// it finds nothing. (TestMain's goleak.VerifyTestMain would have failed
// the package the same way.) This test runs on the real clock: goroutines
// of a synctest bubble must all have exited when synctest.Test returns, so
// a leak there fails the test as a deadlock instead.
func TestGoleakFindsAForgottenClose(t *testing.T) {
	others := goleak.IgnoreCurrent()
	started := make(chan struct{})
	h := keepalive.NewHeartbeat(time.Hour, func(ctx context.Context) {
		close(started)
		<-ctx.Done() // a peer that never answers
	})
	h.PingNow()
	<-started

	// h.Close was forgotten.
	err := goleak.Find(others)
	require.Error(t, err, "goleak missed the ping in flight")
	assert.Contains(t, err.Error(), "keepalive.NewHeartbeat")

	require.NoError(t, h.Close(context.Background()))
	assert.NoError(t, goleak.Find(others))
}

// goleak sees goroutines, not timers. A Heartbeat with no ping in flight
// holds only a pending timer (time.AfterFunc starts no goroutine until the
// timer fires), so a forgotten Close goes unseen until a ping starts. Test
// that Close leaves nothing behind with a ping in flight, as above.
func TestGoleakCannotSeeAPendingPing(t *testing.T) {
	others := goleak.IgnoreCurrent()
	h := keepalive.NewHeartbeat(time.Hour, func(context.Context) {})
	h.Start()

	assert.NoError(t, goleak.Find(others))

	require.NoError(t, h.Close(context.Background()))
}

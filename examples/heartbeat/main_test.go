package main

import (
	"bytes"
	"context"
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

// story runs the whole program with 200 connections in the test's synctest
// bubble, where time is fake and exact: the wheel, its goroutine and every
// timer are in the bubble.
func story(t *testing.T, w io.Writer) *report {
	t.Helper()
	r, err := run(context.Background(), w, config{conns: 200})
	require.NoError(t, err)
	require.Len(t, r.conns, 200)
	return r
}

// A connection whose peer went away is closed exactly idleTimeout after
// the last thing it read (at most a tick later): every read fires the idle
// Trigger again. No connection with a live peer is ever closed.
func TestIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := story(t, io.Discard)
		dead := 0
		for i, c := range r.conns {
			if c.diesAt == 0 {
				assert.Zero(t, c.closedAt, "connection %d, whose peer is alive, was closed", i)
				continue
			}
			dead++
			require.NotZero(t, c.closedAt, "connection %d, whose peer went away, is still open", i)
			last := c.lastRead
			assert.Less(t, last, peersDie+20*time.Millisecond, "connection %d read after its peer went away", i)
			assert.GreaterOrEqual(t, c.closedAt-last, idleTimeout, "connection %d closed early", i)
			assert.LessOrEqual(t, c.closedAt-last, idleTimeout+tick, "connection %d closed late", i)
		}
		assert.Equal(t, 20, dead)
	})
}

// A heartbeat goes out exactly heartbeat after the last write: a quiet
// connection sends one every heartbeat, and a busy one, each of whose
// requests fires the beat Trigger again and so puts the heartbeat off,
// sends none until its requests stop.
func TestHeartbeatsOnlyWhenNothingWasWritten(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := story(t, io.Discard)
		for i, c := range r.conns {
			assert.Zero(t, c.stats.offBeat, "connection %d sent a heartbeat late", i)
			assert.Zero(t, c.stats.heartbeatsWhileTalking, "busy connection %d sent a heartbeat", i)
			switch {
			case c.busy:
				assert.Greater(t, c.stats.requests, 10, "busy connection %d", i)
				// Requests stop at 2.5s; heartbeats follow from 2.55s at the latest.
				assert.GreaterOrEqual(t, c.stats.heartbeats, 1, "busy connection %d", i)
			case c.diesAt == 0:
				want := int((end - c.opened) / heartbeat)
				assert.Equal(t, want, c.stats.heartbeats, "quiet connection %d, opened at %v", i, c.opened)
			}
		}
	})
}

// Every request is answered in time, or timed out by its timer on the
// wheel, or cancelled when its connection closed: a request times out if
// and only if its reply was too slow or never came.
func TestRequestsTimeOutExactlyWhenTheReplyIsLate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := story(t, io.Discard)
		var total connStats
		for i, c := range r.conns {
			s := c.stats
			assert.Equal(t, s.requests, s.answered+s.timedOut+s.cancelled, "connection %d: %+v", i, s)
			assert.Equal(t, s.slow+s.dropped, s.timedOut+s.cancelled, "connection %d: %+v", i, s)
			assert.Equal(t, s.slow, s.late, "connection %d: every slow reply arrives after its timeout", i)
			total.requests += s.requests
			total.slow += s.slow
		}
		assert.Greater(t, total.requests, 2000)
		assert.Positive(t, total.slow)
	})
}

// Every timer superseded by a message, and every request timeout whose
// reply came, is stopped before it fires: the wheel fires only the
// heartbeats, the closes of idle connections and the request timeouts.
// Stopping the Triggers leaves nothing on the wheel, and on the fake clock
// no callback runs early or more than a tick late.
func TestWheelFiresOnlyWhatIsDue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		r := story(t, &out)
		var due int64
		for _, c := range r.conns {
			due += int64(c.stats.heartbeats + c.stats.timedOut)
			if c.closedAt != 0 {
				due++
			}
		}
		assert.Equal(t, due, r.fired)
		assert.Greater(t, r.armed, 3*r.fired, "most timers are superseded or stopped")
		assert.Zero(t, r.pending)
		require.NotEmpty(t, r.late)
		for _, l := range r.late {
			require.GreaterOrEqual(t, l, time.Duration(0))
			require.LessOrEqual(t, l, tick)
		}
		assert.Contains(t, out.String(), " 2.950s  every Trigger stopped: 0 timers pending on the wheel\n")
		assert.Contains(t, out.String(), "closed 20 of the 20 connections whose peer went away, 600ms to 600ms after their last read; closed 0 live ones\n")
	})
}

// Interrupted while requests and replies are in flight, the program still
// leaves nothing on the wheel: it closes each connection before it stops
// its Triggers, so a late reply cannot fire one again.
func TestInterruptLeavesNothingPending(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 1234567*time.Microsecond)
		defer cancel()
		r, err := run(ctx, io.Discard, config{conns: 200})
		require.NoError(t, err)
		assert.Zero(t, r.pending)
	})
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	t.Parallel()
	cmdtest.BadInput{
		"-conns 5":       "heartbeat: -conns must be between 10 and 100000, got 5 (see -h)",
		"-conns 1e9":     "heartbeat: invalid value \"1e9\" for flag -conns: parse error (see -h)",
		"-conns 1000000": "heartbeat: -conns must be between 10 and 100000, got 1000000 (see -h)",
		"-heartbeat 1s":  "heartbeat: flag provided but not defined: -heartbeat (see -h)",
		"all":            "heartbeat: unexpected argument \"all\" (see -h)",
	}.Check(t)
}

// The real program, on the real clock, takes 3s: every test of the file
// is parallel so that this one overlaps the others.
func TestRunsFromTheCommandLine(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := cmdtest.Run(t, "-conns", "100")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "every Trigger stopped: 0 timers pending on the wheel\n")
	assert.Contains(t, stdout, "wheel callbacks ran late by p50 ")
}

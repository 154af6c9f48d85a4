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

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/examples/internal/cmdtest"
)

func TestMain(m *testing.M) {
	cmdtest.RunMainIfChild(main)
	goleak.VerifyTestMain(m)
}

const ms = time.Millisecond

// story runs the whole story in the test's synctest bubble, where time is
// fake and exact, with Base 100ms.
func story(t *testing.T, w io.Writer) *report {
	t.Helper()
	r, err := run(context.Background(), w, config{base: 100 * ms})
	require.NoError(t, err)
	require.Len(t, r.attempts, len(script))
	return r
}

// Failures double the delay (100ms, 200ms, 400ms) up to Max (800ms), where
// it stays; a success brings it back to Base.
func TestDelaysDoubleToMaxAndResetOnSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t, io.Discard)
		var delays []time.Duration
		for _, a := range r.attempts {
			delays = append(delays, a.delay)
		}
		assert.Equal(t, []time.Duration{0, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 800 * ms, 100 * ms, 100 * ms, 800 * ms, 100 * ms}, delays)
	})
}

// Each delay is counted from the end of the attempt, or from its timeout
// (200ms) for the two that hang; attempts never overlap, and none starts
// while attempt 8 hangs, from 2.76s until it returns at 4.26s. Two attempts
// fell due meanwhile (at 3.16s and 3.56s) and were skipped, so the next
// starts at 4.36s: 800ms after the second skip.
func TestNoAttemptStartsWhileAHungOneRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t, io.Discard)
		var starts, ends []time.Duration
		for _, a := range r.attempts {
			starts, ends = append(starts, a.start), append(ends, a.end)
		}
		assert.Equal(t, []time.Duration{0, 110 * ms, 320 * ms, 730 * ms, 1730 * ms, 2540 * ms, 2650 * ms, 2760 * ms, 4360 * ms, 4470 * ms}, starts)
		assert.Equal(t, []time.Duration{10 * ms, 120 * ms, 330 * ms, 930 * ms, 1740 * ms, 2550 * ms, 2660 * ms, 4260 * ms, 4370 * ms, 4480 * ms}, ends)
		for i := 1; i < len(starts); i++ {
			assert.GreaterOrEqual(t, starts[i], ends[i-1], "attempt %d overlaps attempt %d", i+1, i)
		}
		skipped := r.attempts[8].since.Skipped - r.attempts[7].since.Skipped
		assert.Equal(t, uint64(2), skipped, "attempts skipped while attempt 8 hung")
	})
}

func TestStatsAtTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t, io.Discard)
		assert.Equal(t, circulation.Stats{
			Attempts:  10,
			Successes: 5, // 1, 6, 7, 9, 10
			Errors:    3, // 2, 3, 5
			Timeouts:  2, // 4, 8
			Skipped:   2, // while 8 hung
			Late:      2, // 4 and 8 returned after their timeout
			Delay:     100 * ms,
		}, r.stats)
	})
}

func TestOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		story(t, &out)
		assert.Equal(t, ` 0.000s  Backoff: Base 100ms, Max 800ms, Multiplier 2, Timeout 200ms, no jitter
 0.000s  attempt 1 starts
 0.010s  attempt 1: ok
 0.110s  attempt 2 starts after 100ms (Base): attempt 1 succeeded
 0.120s  attempt 2: error: connection refused
 0.320s  attempt 3 starts after 200ms: attempt 2 failed
 0.330s  attempt 3: error: connection refused
 0.730s  attempt 4 starts after 400ms: attempt 3 failed
 0.730s  attempt 4: hangs until its context is done
 0.930s  attempt 4: gives up: context deadline exceeded
 1.730s  attempt 5 starts after 800ms (Max): attempt 4 timed out
 1.740s  attempt 5: error: connection refused
 2.540s  attempt 6 starts after 800ms (Max): attempt 5 failed
 2.550s  attempt 6: ok
 2.650s  attempt 7 starts after 100ms (Base): attempt 6 succeeded
 2.660s  attempt 7: ok
 2.760s  attempt 8 starts after 100ms (Base): attempt 7 succeeded
 2.760s  attempt 8: hangs for 1.5s, ignoring its context
 2.960s  attempt 8: timed out (context deadline exceeded): abandoned, but still running, so no other attempt starts
 4.260s  attempt 8: returns, late: its result is ignored
 4.360s  attempt 9 starts after 800ms (Max): attempt 8 timed out, then 2 due attempts were skipped while it still ran, each doubling the delay
 4.370s  attempt 9: ok
 4.470s  attempt 10 starts after 100ms (Base): attempt 9 succeeded
 4.480s  attempt 10: ok
 4.480s  stopped; Stats: {Attempts:10 Successes:5 Errors:3 Panics:0 Timeouts:2 Canceled:0 Skipped:2 Late:2 ConsecutiveFailures:0 Delay:100ms Running:false}
`, out.String())
	})
}

// Interrupted while attempt 8 hangs, the program stops the Supervisor,
// which cancels the attempt and waits for it to return.
func TestInterruptWaitsForTheHungAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		r, err := run(ctx, io.Discard, config{base: 100 * ms})
		require.NoError(t, err)
		assert.Len(t, r.attempts, 8)
		assert.Equal(t, 4260*ms, time.Since(start))
		assert.False(t, r.stats.Running)
	})
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	cmdtest.BadInput{
		"-base 1s":    "supervisor: -base must be between 10ms and 150ms, got 1s (see -h)",
		"-base -5ms":  "supervisor: -base must be between 10ms and 150ms, got -5ms (see -h)",
		"-base fast":  "supervisor: invalid value \"fast\" for flag -base: parse error (see -h)",
		"-jitter 0.2": "supervisor: flag provided but not defined: -jitter (see -h)",
		"run":         "supervisor: unexpected argument \"run\" (see -h)",
	}.Check(t)
}

func TestRunsFromTheCommandLine(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t, "-base", "10ms")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "attempt 10: ok\n")
	assert.Contains(t, stdout, "Attempts:10 ")
}

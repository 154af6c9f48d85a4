package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
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

// The outcomes and delays are exact, whatever the machine's speed: the
// delays have no jitter, and each line is printed by WithNotify as the
// outcome happens. Only the fourth attempt may time out, the one the
// registry hangs: a busy machine that holds another past its timeout (two
// bases) makes the story a different one, so the test tells it again with
// a base twice as long.
func TestOutput(t *testing.T) {
	for base := 20 * ms; ; base *= 2 {
		var out bytes.Buffer
		st, err := run(context.Background(), &out, config{base: base})
		require.NoError(t, err)
		if st.Timeouts > 1 && base < 5*time.Second {
			t.Logf("with a base of %v, %d attempts timed out: again with %v", base, st.Timeouts, 2*base)
			continue
		}
		assert.Equal(t, fmt.Sprintf(`Backoff: Base %[1]v, Retry %[2]v, Max %[3]v, Multiplier 2, Timeout %[4]v, no jitter
attempt 1: success; next attempt in %[1]v
attempt 2: error: registry: 503 Service Unavailable; next attempt in %[2]v
attempt 3: error: registry: 503 Service Unavailable; next attempt in %[3]v
attempt 4: timeout: context deadline exceeded (abandoned, but no other attempt starts while it runs); next attempt in %[4]v
attempt 4: late: context deadline exceeded (returned after its timeout: ignored)
attempt 5: error: registry: 500 Internal Server Error; next attempt in %[5]v
attempt 6: success; next attempt in %[1]v
attempt 7: permanent: registry: 410 Gone (permanent: no more attempts)
stopped: registry: 410 Gone
Stats: {Attempts:7 Successes:2 Errors:4 Panics:0 Timeouts:1 Canceled:0 Skipped:0 Late:1 ConsecutiveFailures:1 Delay:0s Running:false}
`, base, base/2, 8*base, 2*base, 4*base), out.String())
		assert.Equal(t, circulation.Stats{Attempts: 7, Successes: 2, Errors: 4, Timeouts: 1, Late: 1, ConsecutiveFailures: 1}, st)
		return
	}
}

// Interrupted, the program closes the Supervisor, which cancels the
// attempt in flight and waits for it.
func TestInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	st, err := run(ctx, &out, config{base: 20 * ms})
	require.NoError(t, err)
	assert.False(t, st.Running)
	// The attempt that Close cancels may report itself before or after
	// the program prints why it stopped.
	o := out.String()
	i, j := strings.Index(o, "interrupted\n"), strings.Index(o, "stopped: context canceled\n")
	require.True(t, i >= 0 && j > i, "want interrupted, then stopped:\n%s", o)
	assert.LessOrEqual(t, st.Attempts, uint64(1))
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

// The program, run as a user runs it, tells the story to its end. A busy
// machine can hold an attempt past its timeout, 20ms here, and add one:
// TestOutput checks every attempt.
func TestRunsFromTheCommandLine(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t, "-base", "10ms")
	assert.Equal(t, 0, code, stderr)
	assert.Regexp(t, `\nattempt \d+: permanent: registry: 410 Gone \(permanent: no more attempts\)\nstopped: registry: 410 Gone\n`, stdout)
}

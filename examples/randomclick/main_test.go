package main

import (
	"bytes"
	"context"
	"io"
	"math"
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

var defaults = config{clicks: 10, mean: 300 * time.Millisecond, stddev: 100 * time.Millisecond, seed: 7}

// The task decides when it runs next: in the bubble's exact time, each
// click comes exactly the pause after the previous one that the task drew
// and returned.
func TestTheTaskTimesTheNextClick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := run(context.Background(), io.Discard, defaults)
		require.NoError(t, err)
		require.Len(t, r.clicks, 10)
		require.Len(t, r.pauses, 9)
		assert.Zero(t, r.clicks[0])
		for k := 1; k < len(r.clicks); k++ {
			assert.Equal(t, r.pauses[k-1], r.clicks[k]-r.clicks[k-1], "pause before click %d", k+1)
		}
	})
}

// The pauses come from the user's distribution, drawn in order: the same
// seed replays the same clicks, and they are not evenly spaced.
func TestSameSeedSameClicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a, b bytes.Buffer
		ra, err := run(context.Background(), &a, defaults)
		require.NoError(t, err)
		_, err = run(context.Background(), &b, defaults)
		require.NoError(t, err)
		assert.Equal(t, a.String(), b.String())
		assert.Contains(t, a.String(), "seed 7)")
		distinct := map[time.Duration]bool{}
		for _, p := range ra.pauses {
			distinct[p] = true
		}
		assert.Greater(t, len(distinct), 5, "pauses %v", ra.pauses)
	})
}

// Over many clicks, the pauses have the mean and the spread asked for, and
// the shape of a normal distribution: about 68% within one standard
// deviation of the mean and 95% within two. The seed is fixed, so the
// test is deterministic; the bounds hold for most seeds.
func TestPausesAreNormallyDistributed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := defaults
		cfg.clicks = 5001
		r, err := run(context.Background(), io.Discard, cfg)
		require.NoError(t, err)
		require.Len(t, r.pauses, 5000)
		mean, sd := meanStddev(r.pauses)
		assert.InDelta(t, 300, mean.Seconds()*1000, 3, "mean pause")
		assert.InDelta(t, 100, sd.Seconds()*1000, 3, "standard deviation")
		within := func(k float64) float64 {
			n := 0
			for _, p := range r.pauses {
				if math.Abs(float64(p-cfg.mean)) <= k*float64(cfg.stddev) {
					n++
				}
			}
			return float64(n) / float64(len(r.pauses))
		}
		assert.InDelta(t, 0.683, within(1), 0.02, "share within one standard deviation")
		assert.InDelta(t, 0.954, within(2), 0.01, "share within two")
		for _, p := range r.pauses {
			require.GreaterOrEqual(t, p, cfg.mean/5, "a pause shorter than a fifth of the mean")
		}
	})
}

// With no spread, the user clicks like a metronome.
func TestNoSpreadIsAFixedPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := defaults
		cfg.stddev = 0
		r, err := run(context.Background(), io.Discard, cfg)
		require.NoError(t, err)
		for k, c := range r.clicks {
			assert.Equal(t, time.Duration(k)*cfg.mean, c)
		}
	})
}

func TestInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var out bytes.Buffer
		r, err := run(ctx, &out, defaults)
		require.NoError(t, err)
		assert.Less(t, len(r.clicks), 10)
		assert.Contains(t, out.String(), "interrupted")
		time.Sleep(time.Minute)
		assert.Less(t, len(r.clicks), 10, "clicks after Stop")
	})
}

func TestOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		cfg := defaults
		cfg.clicks = 3
		_, err := run(context.Background(), &out, cfg)
		require.NoError(t, err)
		assert.Equal(t, `a user clicks 3 times, pausing 300ms ± 100ms (normal distribution, seed 7)
 0.000s  click 1 on "home"; next in 290ms
 0.290s  click 2 on "search"; next in 483ms
 0.773s  click 3 on "results"; the user leaves
3 clicks in 773ms; pauses: mean 387ms, standard deviation 97ms
`, out.String())
	})
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	cmdtest.BadInput{
		"-clicks 0":            "randomclick: -clicks must be at least 1, got 0 (see -h)",
		"-clicks many":         "randomclick: invalid value \"many\" for flag -clicks: parse error (see -h)",
		"-mean 1ms":            "randomclick: -mean must be at least 10ms, got 1ms (see -h)",
		"-stddev -5ms":         "randomclick: -stddev must be between 0 and -mean (300ms), got -5ms (see -h)",
		"-clicks 100 -mean 1s": "randomclick: -clicks × -mean must be at most 8s so that the demo ends soon, got 100 × 1s (see -h)",
		"-seed -1":             "randomclick: invalid value \"-1\" for flag -seed: parse error (see -h)",
		"go":                   "randomclick: unexpected argument \"go\" (see -h)",
	}.Check(t)
}

func TestRunsFromTheCommandLine(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t, "-clicks", "3", "-mean", "10ms", "-stddev", "0", "-seed", "1")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "click 3 on \"results\"; the user leaves\n3 clicks in ")
}

package main

import (
	"context"
	"fmt"
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

const p = 500 * time.Millisecond

// story runs the whole program in the test's synctest bubble, where time
// is fake and exact.
func story(t *testing.T) *report {
	t.Helper()
	r, err := run(context.Background(), io.Discard, config{period: p})
	require.NoError(t, err)
	return r
}

// lines returns a job's records as "slot status reason start-end", in
// periods since the start.
func lines(r *report, job string) []string {
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%.1f", float64(t.Sub(start))/float64(p))
	}
	var s []string
	for _, rec := range r.records[job] {
		s = append(s, fmt.Sprintf("%s %v %v %s-%s", at(rec.Due), rec.Status, rec.Reason, at(rec.Start), at(rec.End)))
	}
	return s
}

// Runs take 1.4 periods: each overlap policy does with the slots that fall
// due meanwhile what its name says, until Stop at 4.5 periods.
func TestOverlapPolicies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		assert.Equal(t, []string{
			"2.0 Skipped Scheduled ---",
			"1.0 Succeeded Scheduled 1.0-2.4",
			"4.0 Skipped Scheduled ---",
			"3.0 Succeeded Scheduled 3.0-4.4",
		}, lines(r, "skip"))
		assert.Equal(t, []string{
			"1.0 Succeeded Scheduled 1.0-2.4",
			"2.0 Succeeded Scheduled 2.4-3.8", // buffered: right after
			"4.0 Skipped Scheduled ---",       // buffered, dropped by Stop
			"3.0 Canceled Scheduled 3.8-4.5",
		}, lines(r, "buffer"))
		assert.Equal(t, []string{
			"1.0 Canceled Scheduled 1.0-2.0",
			"2.0 Canceled Scheduled 2.0-3.0",
			"3.0 Canceled Scheduled 3.0-4.0",
			"4.0 Canceled Scheduled 4.0-4.5",
		}, lines(r, "replace"))
		assert.ElementsMatch(t, []string{
			"1.0 Succeeded Scheduled 1.0-2.4",
			"2.0 Succeeded Scheduled 2.0-3.4",
			"3.0 Succeeded Scheduled 3.0-4.4",
			"4.0 Canceled Scheduled 4.0-4.5",
		}, lines(r, "allow"))
		assert.Equal(t, map[string]int{"skip": 1, "buffer": 1, "replace": 1, "allow": 2, "restart": 1, "replica": 1}, r.parallel)
	})
}

// The slots missed while the process was down run at once when it is
// back, oldest first; the next slot runs on time.
func TestRestartCatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		assert.Equal(t, []string{
			"5.0 Succeeded Scheduled 5.0-5.1",
			"6.0 Succeeded CatchUp 8.6-8.7",
			"7.0 Succeeded CatchUp 8.7-8.8",
			"8.0 Succeeded CatchUp 8.8-8.9",
			"9.0 Succeeded Scheduled 9.0-9.1",
		}, lines(r, "restart"))
	})
}

// Two replicas sharing a store run every slot once between them.
func TestReplicasRunEachSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		assert.Len(t, r.ranBy, 6)
		for due, nodes := range r.ranBy {
			assert.Len(t, nodes, 1, "slot %v", due)
		}
		assert.Len(t, r.records["replica"], 6, "ErrClaimed reaches no Observer")
	})
}

// Interrupted, the program stops every job and leaves nothing running.
func TestInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*p)
		defer cancel()
		_, err := run(ctx, io.Discard, config{period: p})
		require.NoError(t, err)
	})
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	t.Parallel()
	cmdtest.BadInput{
		"-period 1ms":  "jobs: -period must be between 50ms and 700ms, got 1ms (see -h)",
		"-period soon": "jobs: invalid value \"soon\" for flag -period: parse error (see -h)",
		"-jobs 3":      "jobs: flag provided but not defined: -jobs (see -h)",
		"now":          "jobs: unexpected argument \"now\" (see -h)",
	}.Check(t)
}

// The real program, on the real clock, tells its three acts, and the
// replicas run no slot twice. How many runs are in flight at once depends
// on when a busy machine ends them: the tests above check it on the fake
// clock.
func TestRunsFromTheCommandLine(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := cmdtest.Run(t)
	assert.Equal(t, 0, code, stderr)
	assert.Regexp(t, `act 1 over: most runs in flight at once: skip 1, buffer 1, replace 1, allow \d+\n`, stdout)
	assert.Contains(t, stdout, "slots ran, 0 of them more than once\n")
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// childEnv makes the test binary run main instead of the tests: the
// command-line tests start it as the program.
const childEnv = "USERTASKS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// story runs the whole story in the test's synctest bubble, where time is
// fake and exact.
func story(t *testing.T) *report {
	t.Helper()
	var out bytes.Buffer
	r, err := run(context.Background(), &out)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the story as printed:\n%s", out.String())
		}
	})
	return r
}

// slots returns the slots of rs with status s, in seconds from start.
func slots(r *report, task string, s schedule.Status) []float64 {
	var out []float64
	for _, rec := range r.records[task] {
		if rec.Status == s {
			out = append(out, rec.Due.Sub(r.start).Seconds())
		}
	}
	return out
}

// Every task runs at its times and no others: a changed spec takes effect
// at once, the window ends, the once task runs once, the added task starts
// when it is added; no slot runs twice.
func TestTasksRunAtTheirTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		require.Empty(t, r.errs)
		assert.Equal(t, []float64{0, 1, 2, 4}, slots(r, "report-shop-1", schedule.Succeeded), "every second, then every 2s from 2.5s")
		assert.Equal(t, []float64{1, 2, 3}, slots(r, "report-shop-2", schedule.Succeeded), "the window [1s, 3s]")
		assert.Equal(t, []float64{1}, slots(r, "welcome-mail", schedule.Succeeded), "once")
		assert.Equal(t, []float64{3, 4, 5}, slots(r, "report-shop-3", schedule.Succeeded), "added at 2.5s")
		for task, rs := range r.records {
			seen := map[time.Time]bool{}
			for _, rec := range rs {
				assert.False(t, seen[rec.Due], "%s: slot %v twice", task, rec.Due)
				seen[rec.Due] = true
			}
		}
		assert.ElementsMatch(t, []string{"shop-1", "shop-1", "shop-1", "shop-1", "shop-2", "shop-2", "shop-2", "shop-3", "shop-3", "shop-3"}, r.calls["report"],
			"one handler, registered once, runs the tasks of three shops with their business ids")
		assert.Equal(t, []cron.Changes{
			{Added: []string{"export-orders", "report-shop-1", "report-shop-2", "welcome-mail"}},
			{Added: []string{"report-shop-3"}, Changed: []string{"report-shop-1"}},
			{Removed: []string{"export-orders"}},
		}, r.reloads)
	})
}

// The task whose runs overstay never overlaps itself: the slots that fall
// due during a run are skipped. Removed while a run is in flight, that run
// is not cancelled, and no slot falls due after.
func TestOverstayingTaskIsSkippedAndRemovedGracefully(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		assert.Equal(t, 1, r.maxBusy)
		assert.Equal(t, []float64{0, 2, 4}, slots(r, "export-orders", schedule.Succeeded))
		assert.Equal(t, []float64{1, 3}, slots(r, "export-orders", schedule.Skipped))
		assert.Len(t, r.records["export-orders"], 5, "nothing canceled, nothing after the removal")
		assert.Equal(t, r.start.Add(removeTask), r.removed, "the reload does not wait for the run")
	})
}

// runMain runs the program with args as a child process.
func runMain(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	race := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), childEnv+"=1", "GORACE="+race)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// The real program, on the real clock, ends within 10s.
func TestRunsFromTheCommandLine(t *testing.T) {
	t.Parallel()
	start := time.Now()
	stdout, stderr, code := runMain(t)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "reload: added [report-shop-3], changed [report-shop-1], removed []\n")
	assert.Contains(t, stdout, "  welcome-mail    1s Succeeded\n")
	assert.Contains(t, stdout, "  export-orders   0s Succeeded  1s Skipped  2s Succeeded  3s Skipped  4s Succeeded\n")
	assert.Contains(t, stdout, "export-orders: the run of 4s is done\n")
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runMain(t, "-fast")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "usertasks: unexpected argument \"-fast\" (the story takes none)\n", stderr)
}

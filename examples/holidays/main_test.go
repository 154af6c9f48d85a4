package main

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/circulation-go/circulation/examples/internal/cmdtest"
	"github.com/circulation-go/circulation/schedule"
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

// The payroll runs at 09:00 Berlin time on the weekdays that are not days
// off, and passes over each weekday off, saying why.
func TestPayrollPassesOverTheDaysOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		var runs []string
		for _, t := range r.payroll {
			runs = append(runs, t.Format("2006-01-02 15:04 MST"))
		}
		assert.Equal(t, []string{
			"2026-12-21 09:00 CET", "2026-12-22 09:00 CET", "2026-12-23 09:00 CET",
			"2027-01-04 09:00 CET", "2027-01-05 09:00 CET", "2027-01-06 09:00 CET", "2027-01-07 09:00 CET", "2027-01-08 09:00 CET",
		}, runs)
		assert.Equal(t, map[string]string{
			"2026-12-24": "the company's shutdown",
			"2026-12-25": "Christmas Day, in the shutdown",
			"2026-12-28": "the company's shutdown",
			"2026-12-29": "the company's shutdown",
			"2026-12-30": "the company's shutdown",
			"2026-12-31": "the company's shutdown",
			"2027-01-01": "New Year's Day",
		}, r.passed)
	})
}

// The slots inside the maintenance window are not slots: none runs, none
// is Missed; the job runs on after it.
func TestMaintenanceWindowLeavesItsSlotsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		var got []string
		for _, rec := range r.records {
			got = append(got, rec.Due.Sub(r.start).String()+" "+rec.Status.String()+" "+rec.Reason.String())
		}
		assert.Equal(t, []string{
			"500ms Succeeded Scheduled", "1s Succeeded Scheduled", "1.5s Succeeded Scheduled",
			"3.5s Succeeded Scheduled", "4s Succeeded Scheduled", "4.5s Succeeded Scheduled",
		}, got)
		for _, rec := range r.records {
			assert.NotEqual(t, schedule.Missed, rec.Status)
		}
	})
}

// The real program, on the real clock, tells the same story.
func TestRunsFromTheCommandLine(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t, "-period", "100ms")
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, stdout)
	for _, want := range []string{
		"  runs   Mon 2027-01-04 09:00 CET\n",
		"  passes Fri 2027-01-01: New Year's Day\n",
		"  slot  7.0: Succeeded Scheduled\n",
	} {
		assert.Contains(t, stdout, want)
	}
	assert.NotContains(t, stdout, "slot  5.0")
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	cmdtest.BadInput{
		"-period 0":    "holidays: -period must be between 50ms and 700ms, got 0s (see -h)",
		"-period soon": "holidays: invalid value \"soon\" for flag -period: parse error (see -h)",
		"now":          "holidays: unexpected argument \"now\" (see -h)",
	}.Check(t)
}

func TestHelp(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t, "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "-period d")
	assert.Empty(t, stdout)
}

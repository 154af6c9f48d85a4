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
)

func TestMain(m *testing.M) {
	cmdtest.RunMainIfChild(main)
	goleak.VerifyTestMain(m)
}

// story runs the whole program in the test's synctest bubble.
func story(t *testing.T) *report {
	t.Helper()
	r, err := run(context.Background(), io.Discard)
	require.NoError(t, err)
	return r
}

// Two replicas backfill the night the clocks fell back: each of its five
// slots runs once, oldest first, the two 01:30s an hour apart; between
// them the replicas ran every slot, and each knows of every one.
func TestTwoReplicasBackfillEachSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		ny, err := time.LoadLocation("America/New_York")
		require.NoError(t, err)
		var got []string
		for _, d := range r.dues("report") {
			got = append(got, d.In(ny).Format("15:04 MST"))
		}
		assert.Equal(t, []string{"00:30 EDT", "01:30 EDT", "01:30 EST", "02:30 EST", "03:30 EST"}, got)
		a, b := r.progress["1a"], r.progress["1b"]
		assert.Equal(t, 5, a.Slots)
		assert.Equal(t, 5, b.Slots)
		assert.Equal(t, 5, (a.Done-a.HadRecord)+(b.Done-b.HadRecord), "every slot ran once, on one of them")
		for _, x := range r.runs {
			if x.job == "report" {
				assert.Contains(t, []string{"a", "b"}, x.node)
			}
		}
	})
}

// A daily job at 01:30 runs once on the night its 01:30 comes twice; a
// second backfill of the same ranges runs nothing.
func TestDailyBackfillAcrossTheFallBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := story(t)
		ny, err := time.LoadLocation("America/New_York")
		require.NoError(t, err)
		var got []string
		for _, d := range r.dues("daily") {
			got = append(got, d.In(ny).Format("Jan 2 15:04 MST"))
		}
		night := time.Date(1999, 10, 31, 0, 0, 0, 0, ny) // the bubble's time is 2000-01-01
		assert.Equal(t, []string{"Oct 29 01:30 EDT", "Oct 30 01:30 EDT", "Oct 31 01:30 EDT", "Nov 1 01:30 EST"}, got)
		assert.Equal(t, night, r.progress["2"].From.In(ny).AddDate(0, 0, 2))
		assert.Equal(t, 4, r.progress["2"].Slots)
		assert.Equal(t, 4, r.progress["3"].HadRecord)
		assert.Equal(t, 5, r.progress["3a"].HadRecord)
		assert.Equal(t, 5, r.progress["3b"].HadRecord)
		assert.Len(t, r.runs, 9, "nothing ran again")
	})
}

// The real program tells the same story.
func TestRunsFromTheCommandLine(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, stdout)
	for _, want := range []string{
		"slot Nov 1 01:30 EDT: ran on",
		"slot Nov 1 01:30 EST: ran on",
		"  4 slots, 4 ran\n",
		"the report: 5 and 5 slots had a record; the daily job: 4 of 4\n",
	} {
		assert.Contains(t, stdout, want)
	}
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	cmdtest.BadInput{
		"now":   "backfill: unexpected argument \"now\" (see -h)",
		"-fast": "backfill: flag provided but not defined: -fast (see -h)",
	}.Check(t)
}

func TestHelp(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t, "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "usage: backfill")
	assert.Empty(t, stdout)
}

package cron_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// backfillOf returns the TaskState.Backfill of the task name.
func backfillOf(t *testing.T, tab *cron.Table, name string) *cron.BackfillState {
	t.Helper()
	ts, err := tab.TasksOf(context.Background(), name)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	return ts[0].Backfill
}

// A backfill across a daylight-saving fall-back runs the slots of the
// task's spec: a task at 01:30 runs once on the night 01:30 comes twice,
// and one at every hour's 30 runs in both of its 01:30s. Its progress is
// in Tasks, and a second backfill of the range runs nothing.
func TestTableBackfillAcrossFallBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ny, err := time.LoadLocation("America/New_York")
		require.NoError(t, err)
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Second)})
		daily, hourly := task("daily", "h", "30 1 * * *"), task("hourly", "h", "30 * * * *")
		daily.Zone, hourly.Zone = "America/New_York", "America/New_York"
		_, err = tab.Apply(context.Background(), []cron.Task{daily, hourly})
		require.NoError(t, err)
		assert.Nil(t, backfillOf(t, tab, "daily"), "none yet")

		// 1999-10-31: 02:00 EDT -> 01:00 EST.
		from := time.Date(1999, 10, 30, 0, 0, 0, 0, ny)
		to := time.Date(1999, 11, 2, 0, 0, 0, 0, ny)
		require.NoError(t, tab.Backfill("daily", from, to))
		require.NoError(t, tab.Backfill("hourly", time.Date(1999, 10, 31, 0, 0, 0, 0, ny), time.Date(1999, 10, 31, 3, 0, 0, 0, ny)))
		assert.ErrorIs(t, tab.Backfill("daily", from, to), schedule.ErrBackfilling)
		time.Sleep(1500 * time.Millisecond)
		s := backfillOf(t, tab, "daily")
		require.NotNil(t, s)
		assert.True(t, s.Running)
		assert.Equal(t, 3, s.Slots)
		assert.Equal(t, 1, s.Done)
		time.Sleep(time.Minute)
		s = backfillOf(t, tab, "daily")
		assert.Equal(t, cron.BackfillState{BackfillProgress: schedule.BackfillProgress{From: from, To: to, Slots: 3, Done: 3}}, *s)

		var dues []string
		for _, r := range l.of("daily") {
			assert.Equal(t, schedule.Backfill, r.reason)
			dues = append(dues, r.due.In(ny).Format(time.RFC3339))
		}
		assert.Equal(t, []string{"1999-10-30T01:30:00-04:00", "1999-10-31T01:30:00-04:00", "1999-11-01T01:30:00-05:00"}, dues)
		dues = nil
		for _, r := range l.of("hourly") {
			dues = append(dues, r.due.In(ny).Format(time.RFC3339))
		}
		assert.Equal(t, []string{"1999-10-31T00:30:00-04:00", "1999-10-31T01:30:00-04:00", "1999-10-31T01:30:00-05:00",
			"1999-10-31T02:30:00-05:00"}, dues)

		require.NoError(t, tab.Backfill("daily", from, to))
		time.Sleep(time.Minute)
		s = backfillOf(t, tab, "daily")
		assert.Equal(t, 3, s.HadRecord, "each slot has its record")
		assert.Len(t, l.of("daily"), 3)

		// Asked to, it runs them again.
		require.NoError(t, tab.Backfill("daily", from, to, schedule.RunAgain()))
		time.Sleep(time.Minute)
		s = backfillOf(t, tab, "daily")
		assert.Equal(t, cron.BackfillState{BackfillProgress: schedule.BackfillProgress{From: from, To: to, Slots: 3, Done: 3, RanAgain: 3}}, *s)
		assert.Len(t, l.of("daily"), 6)
		require.NoError(t, tab.Stop(context.Background()))
	})
}

// CancelBackfill ends a backfill, Stop ends one under way, and Backfill
// refuses an unknown or paused task, a bad range and a stopped Table.
func TestTableBackfillCancelAndRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Hour)}, cron.WithLocation(time.UTC))
		_, err := tab.Apply(context.Background(), []cron.Task{task("a", "h", "@daily"), task("b", "h", "@daily")})
		require.NoError(t, err)
		now := time.Now()
		assert.ErrorIs(t, tab.Backfill("nobody", now.Add(-time.Hour), now), cron.ErrUnknownTask)
		assert.ErrorIs(t, tab.CancelBackfill("nobody"), cron.ErrUnknownTask)
		assert.ErrorContains(t, tab.Backfill("a", now, now.Add(-time.Hour)), "is after to")
		assert.ErrorContains(t, tab.Backfill("a", time.Time{}, now), "zero Time")
		assert.ErrorIs(t, tab.Backfill("a", now.AddDate(-3, 0, 0), now), schedule.ErrBackfillTooLong)
		require.NoError(t, tab.Pause("b"))
		assert.ErrorIs(t, tab.Backfill("b", now.AddDate(0, 0, -3), now), cron.ErrTaskPaused)
		require.NoError(t, tab.Resume("b"))

		require.NoError(t, tab.Backfill("a", now.AddDate(0, 0, -3), now))
		require.NoError(t, tab.Backfill("b", now.AddDate(0, 0, -3), now))
		time.Sleep(90 * time.Minute)
		require.NoError(t, tab.CancelBackfill("a"))
		synctest.Wait()
		s := backfillOf(t, tab, "a")
		assert.False(t, s.Running)
		assert.ErrorIs(t, s.Err, context.Canceled)
		assert.Equal(t, 1, s.Done)
		require.NoError(t, tab.Stop(context.Background()))
		s = backfillOf(t, tab, "b")
		assert.False(t, s.Running)
		assert.ErrorIs(t, s.Err, schedule.ErrStopped)
		assert.Equal(t, 2, s.Done, "the second run was cut short")
		assert.ErrorIs(t, tab.Backfill("a", now.AddDate(0, 0, -3), now), cron.ErrTableStopped)
		for _, r := range l.of("a") {
			assert.Equal(t, schedule.Backfill, r.reason)
		}
	})
}

package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// The calendars of Definitions are created, read, updated and deleted as
// tasks are, with a version each, and every write bumps Version; a task
// names only calendars that are defined, and a calendar a task names is
// not deleted.
func TestDefinitionsCalendars(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t))
		defs := s.Definitions()
		version := func() int64 {
			v, err := defs.Version(ctx)
			require.NoError(t, err)
			return v
		}

		fr := cron.Calendar{Name: "fr", Zone: "Europe/Paris", Days: []string{"2030-12-25", "2030-12-24..2030-12-31"}, Note: "bureau fermé"}
		v, err := defs.CreateCalendar(ctx, fr)
		require.NoError(t, err)
		assert.Equal(t, int64(1), v)
		assert.Equal(t, int64(1), version())
		assert.True(t, changed(defs.Changes()))
		_, err = defs.CreateCalendar(ctx, fr)
		assert.ErrorIs(t, err, sqlstore.ErrCalendarExists)
		empty := cron.Calendar{Name: "none yet"}
		_, err = defs.CreateCalendar(ctx, empty)
		require.NoError(t, err)

		got, v, err := defs.GetCalendar(ctx, "fr")
		require.NoError(t, err)
		assert.Equal(t, fr, got)
		assert.Equal(t, int64(1), v)
		got, _, err = defs.GetCalendar(ctx, "none yet")
		require.NoError(t, err)
		assert.Equal(t, cron.Calendar{Name: "none yet", Days: []string{}}, got)
		_, _, err = defs.GetCalendar(ctx, "nope")
		assert.ErrorIs(t, err, cron.ErrUnknownCalendar)

		// Refused: what Validate refuses, and what the store cannot hold.
		_, err = defs.CreateCalendar(ctx, cron.Calendar{Name: "bad", Days: []string{"2030-02-30"}})
		var ce *cron.CalendarError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "days", ce.Field)
		_, err = defs.CreateCalendar(ctx, cron.Calendar{Name: "bad", Note: "a\x00b"})
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "note", ce.Field)

		// A task naming an unknown calendar is refused; one naming known
		// ones is saved with them.
		d := task("payroll")
		d.Calendars = []string{"fr", "nope"}
		_, err = defs.Create(ctx, d)
		var te *cron.TaskError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "calendars", te.Field)
		assert.ErrorIs(t, err, cron.ErrUnknownCalendar)
		d.Calendars = []string{"fr", "none yet"}
		tv, err := defs.Create(ctx, d)
		require.NoError(t, err)
		gt, _, err := defs.Get(ctx, "payroll")
		require.NoError(t, err)
		assert.Equal(t, []string{"fr", "none yet"}, gt.Calendars)
		gt.Calendars = []string{"nope"}
		_, err = defs.Update(ctx, gt, tv)
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "calendars", te.Field)

		// Updated at its version; stale or unknown refused.
		before := version()
		fr.Days = []string{"2030-12-25"}
		v, err = defs.UpdateCalendar(ctx, fr, 1)
		require.NoError(t, err)
		assert.Equal(t, int64(2), v)
		assert.Equal(t, before+1, version(), "a calendar's write bumps the version")
		_, err = defs.UpdateCalendar(ctx, fr, 1)
		assert.ErrorIs(t, err, sqlstore.ErrStale)
		_, err = defs.UpdateCalendar(ctx, cron.Calendar{Name: "nope"}, 1)
		assert.ErrorIs(t, err, cron.ErrUnknownCalendar)

		cals, cv, err := defs.Calendars(ctx)
		require.NoError(t, err)
		assert.Equal(t, version(), cv)
		require.Len(t, cals, 2)
		assert.Equal(t, fr, cals[0])
		list, err := defs.ListCalendars(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(2), list[0].Version)
		assert.False(t, list[0].Updated.IsZero())

		// Named by a task: not deleted, and the error names the task.
		before = version()
		err = defs.DeleteCalendar(ctx, "fr", 2)
		assert.ErrorIs(t, err, sqlstore.ErrCalendarInUse)
		assert.ErrorContains(t, err, `"payroll"`)
		assert.Equal(t, before, version(), "a refused write bumps nothing")
		gt.Calendars = []string{"none yet"}
		_, err = defs.Update(ctx, gt, tv)
		require.NoError(t, err)
		assert.ErrorIs(t, defs.DeleteCalendar(ctx, "fr", 1), sqlstore.ErrStale)
		require.NoError(t, defs.DeleteCalendar(ctx, "fr", 2))
		assert.ErrorIs(t, defs.DeleteCalendar(ctx, "fr", 2), cron.ErrUnknownCalendar)
		cals, _, err = defs.Calendars(ctx)
		require.NoError(t, err)
		assert.Equal(t, []cron.Calendar{{Name: "none yet", Days: []string{}}}, cals)
	})
}

// A Store migrates a table of version 8 that holds definitions to
// version 9: they read with no calendars, and so do those a replica of
// version 8 writes after the migration; calendars are then created, and
// a task naming one is saved and updated.
func TestMigrateCalendars(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		tb := tableFor(t)
		db := openDB(t, b.driver, dsn)
		_, err := sqlstore.NewAtVersion(ctx, db, b.dialect, 8, sqlstore.WithTable(tb))
		require.NoError(t, err)
		insert := func(name string) {
			now := "2030-01-01T00:00:00.000000Z"
			q := `INSERT INTO ` + tb + `_tasks (name, handler, business_id, spec, zone, permanent, once, paused, overlap, misfire,
	timeout, retry_attempts, retry_backoff, version, created_at, updated_at, catch_up_window, max_runs, jitter)
VALUES ('` + name + `', 'h', '', '@hourly', '', true, false, false, '', '', '0s', 0, '0s', 1, '` + now + `', '` + now + `', '0s', 3, '1m0s')`
			_, err := db.Exec(q)
			require.NoError(t, err)
		}
		insert("old")
		_, err = db.Exec(`UPDATE ` + tb + `_tasks_version SET version = 5`)
		require.NoError(t, err)

		s := newStore(t, b, dsn)
		defs := s.Definitions()
		got, v, err := defs.Get(ctx, "old")
		require.NoError(t, err)
		assert.Nil(t, got.Calendars, "a definition of version 8 names none")
		assert.Equal(t, 3, got.MaxRuns, "and keeps its run limit")
		insert("written by version 8 after the migration")
		got2, _, err := defs.Get(ctx, "written by version 8 after the migration")
		require.NoError(t, err)
		assert.Nil(t, got2.Calendars)
		cals, cv, err := defs.Calendars(ctx)
		require.NoError(t, err)
		assert.Empty(t, cals)
		assert.Equal(t, int64(5), cv, "the version of the definitions is kept")

		_, err = defs.CreateCalendar(ctx, cron.Calendar{Name: "off", Days: []string{"2031-01-01"}})
		require.NoError(t, err)
		got.Calendars = []string{"off"}
		_, err = defs.Update(ctx, got, v)
		require.NoError(t, err)
		got, _, err = defs.Get(ctx, "old")
		require.NoError(t, err)
		assert.Equal(t, []string{"off"}, got.Calendars, "updated")
		assert.ErrorIs(t, defs.DeleteCalendar(ctx, "off", 1), sqlstore.ErrCalendarInUse)

		require.NoError(t, sqlstore.Drop(ctx, db, b.dialect, tb))
		var n int
		err = db.QueryRow(`SELECT COUNT(*) FROM ` + tb + `_calendars`).Scan(&n)
		assert.Error(t, err, "Drop drops the calendars")
	})
}

// Two replicas, each a cron.Table following the Definitions of its own
// Store on one database: a calendar changed on one replica's Store is
// applied by both, so that a task naming it passes over the excluded day
// on both, and runs again on both once the day is no longer excluded;
// each slot runs once between them.
func TestFollowCalendars(t *testing.T) {
	t.Parallel() // real time, mostly waiting
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		stores := []*sqlstore.Store{newStore(t, b, dsn), newStore(t, b, dsn)}
		var mu sync.Mutex
		runs := map[int64]int{} // by due, in Unix ns
		var last time.Time      // the latest due run
		rec := func(ctx context.Context, _ string, r schedule.Run) error {
			mu.Lock()
			runs[r.Due.UnixNano()]++
			if r.Due.After(last) {
				last = r.Due
			}
			mu.Unlock()
			return nil
		}
		today := time.Now().UTC().Truncate(24 * time.Hour)
		day := func(n int) string { return today.AddDate(0, 0, n).Format(time.DateOnly) }
		off := cron.Calendar{Name: "off", Zone: "UTC", Days: []string{day(-3)}}
		_, err := stores[0].Definitions().CreateCalendar(ctx, off)
		require.NoError(t, err)
		_, err = stores[0].Definitions().Create(ctx, cron.Task{Name: "ticks", Handler: "rec", Spec: "* * * * * *",
			Permanent: true, Overlap: "allow", Calendars: []string{"off"}})
		require.NoError(t, err)

		var tabs []*cron.Table
		for i, s := range stores {
			tab := cron.NewTable(map[string]cron.Handler{"rec": rec}, cron.WithStore(s), cron.WithLocation(time.UTC),
				cron.WithJobOptions(schedule.WithNode(string(rune('a'+i))), schedule.WithGrace(5*time.Second)))
			require.NoError(t, tab.Follow(ctx, s.Definitions(), cron.WithPollInterval(200*time.Millisecond)))
			t.Cleanup(func() { _ = tab.Stop(context.Background()) })
			tabs = append(tabs, tab)
		}
		ran := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return last
		}
		// waitFor waits up to 10s for every replica's next run to be as
		// ok says.
		waitFor := func(what string, ok func(next time.Time) bool) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for {
				all := true
				for _, tab := range tabs {
					next, _ := tab.Next("ticks")
					all = all && ok(next)
				}
				if all {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the replicas did not apply the calendar: %s", what)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		soon := func(next time.Time) bool { return !next.IsZero() && next.Before(time.Now().Add(2*time.Second)) }
		waitFor("a day past", soon)
		time.Sleep(2 * time.Second)
		require.False(t, ran().IsZero(), "the task runs")

		// Today excluded, edited through the other replica's Store.
		cur, v, err := stores[1].Definitions().GetCalendar(ctx, "off")
		require.NoError(t, err)
		cur.Days = []string{day(-1) + ".." + day(1)}
		_, err = stores[1].Definitions().UpdateCalendar(ctx, cur, v)
		require.NoError(t, err)
		end := today.AddDate(0, 0, 2)
		waitFor("today excluded", func(next time.Time) bool { return !next.Before(end) })
		applied := time.Now()
		for _, tab := range tabs {
			assert.Equal(t, []cron.Calendar{cur}, tab.Calendars())
			s, ok := tab.Schedule("ticks")
			require.True(t, ok)
			assert.Equal(t, end, s.Next(time.Now()), "the next time is after the days off")
		}
		time.Sleep(2 * time.Second)
		assert.False(t, ran().After(applied.Add(time.Second)), "no slot on an excluded day runs, on either replica: the latest ran at %v", ran())

		// The day given back: both run again.
		cur, v, err = stores[0].Definitions().GetCalendar(ctx, "off")
		require.NoError(t, err)
		cur.Days = []string{day(-3)}
		_, err = stores[0].Definitions().UpdateCalendar(ctx, cur, v)
		require.NoError(t, err)
		waitFor("today given back", soon)
		back := time.Now()
		time.Sleep(2500 * time.Millisecond)
		assert.True(t, ran().After(back), "the task runs again")

		for _, tab := range tabs {
			require.NoError(t, tab.Stop(ctx))
		}
		mu.Lock()
		defer mu.Unlock()
		for due, n := range runs {
			assert.Equal(t, 1, n, "the slot due %v ran %d times", time.Unix(0, due).UTC(), n)
		}
	})
}

package cron_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// dayOf returns the date of t in loc, as "2000-01-02".
func dayOf(t time.Time, loc *time.Location) string { return t.In(loc).Format(time.DateOnly) }

// A task naming a calendar passes over its days: no run, no Missed
// record, nothing caught up; its next run and Schedule pass over them. A
// calendar without a zone has the days of the zone of each task that
// names it; one with a zone, that zone's.
func TestTableCalendarPassesOverItsDays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		store := schedule.NewMemoryStore(100)
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC), cron.WithStore(store))
		defer tab.Stop(context.Background())
		ctx := context.Background()
		ny, err := time.LoadLocation("America/New_York")
		require.NoError(t, err)
		ch, err := tab.SetCalendars(
			cron.Calendar{Name: "off", Days: []string{"2000-01-02"}},
			cron.Calendar{Name: "off-utc", Zone: "UTC", Days: []string{"2000-01-02"}},
		)
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{}, ch)

		daily := task("daily", "h", "0 9 * * *")
		daily.Calendars = []string{"off"}
		// 23:00 in New York is 04:00 UTC the next day.
		nyLocal := task("ny-local", "h", "0 23 * * *")
		nyLocal.Zone, nyLocal.Calendars = "America/New_York", []string{"off"}
		nyUTC := task("ny-utc", "h", "0 23 * * *")
		nyUTC.Zone, nyUTC.Calendars = "America/New_York", []string{"off-utc"}
		_, err = tab.Apply(ctx, []cron.Task{daily, nyLocal, nyUTC})
		require.NoError(t, err)
		assert.Equal(t, []string{"off"}, definition(t, tab, "daily").Calendars)

		s, ok := tab.Schedule("daily")
		require.True(t, ok)
		var days []string
		for _, at := range schedule.Upcoming(s, time.Now(), 3) {
			days = append(days, dayOf(at, time.UTC))
		}
		assert.Equal(t, []string{"2000-01-01", "2000-01-03", "2000-01-04"}, days)

		time.Sleep(4*24*time.Hour - time.Minute)
		synctest.Wait()
		ran := func(name string, loc *time.Location) []string {
			var out []string
			for _, r := range l.of(name) {
				out = append(out, dayOf(r.due, loc))
			}
			return out
		}
		assert.Equal(t, []string{"2000-01-01", "2000-01-03", "2000-01-04"}, ran("daily", time.UTC))
		assert.Equal(t, []string{"1999-12-31", "2000-01-01", "2000-01-03"}, ran("ny-local", ny), "a calendar without a zone: the days of New York")
		assert.Equal(t, []string{"1999-12-31", "2000-01-02", "2000-01-03"}, ran("ny-utc", ny), "a calendar in UTC: Jan 1 23:00 in New York is Jan 2 in UTC")
		for _, name := range []string{"daily", "ny-local", "ny-utc"} {
			recs, err := store.History(ctx, name, 100)
			require.NoError(t, err)
			for _, r := range recs {
				assert.Equal(t, schedule.Succeeded, r.Status, "%s %v: an excluded slot is not a slot", name, r.Due)
			}
		}
	})
}

// A calendar changed by SetCalendars moves the times of the tasks that
// name it at once, as a changed spec does; the tasks that do not name it
// are left alone. A task naming a calendar the Table does not know is
// refused, and one whose calendar goes away keeps its days and is
// reported refused.
func TestTableCalendarChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		ctx := context.Background()
		_, err := tab.SetCalendars(cron.Calendar{Name: "off", Days: []string{"2000-01-05"}})
		require.NoError(t, err)
		daily := task("daily", "h", "0 9 * * *")
		daily.Calendars = []string{"off"}
		_, err = tab.Apply(ctx, []cron.Task{daily, task("plain", "h", "0 9 * * *")})
		require.NoError(t, err)
		next, _ := tab.Next("daily")
		assert.Equal(t, "2000-01-01", dayOf(next, time.UTC))

		ch, err := tab.SetCalendars(cron.Calendar{Name: "off", Days: []string{"2000-01-01..2000-01-03"}})
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Changed: []string{"daily"}}, ch)
		next, _ = tab.Next("daily")
		assert.Equal(t, "2000-01-04", dayOf(next, time.UTC), "the new days, at once")
		next, _ = tab.Next("plain")
		assert.Equal(t, "2000-01-01", dayOf(next, time.UTC))

		// The same calendars again change nothing.
		ch, err = tab.SetCalendars(cron.Calendar{Name: "off", Days: []string{"2000-01-01..2000-01-03"}})
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{}, ch)
		// Nor does the same set of tasks.
		ch, err = tab.Apply(ctx, []cron.Task{daily, task("plain", "h", "0 9 * * *")})
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{}, ch)

		// A task naming an unknown calendar is refused; its previous
		// definition stays in force.
		moved := daily
		moved.Spec, moved.Calendars = "0 10 * * *", []string{"off", "nope"}
		_, err = tab.Apply(ctx, []cron.Task{moved, task("plain", "h", "0 9 * * *")})
		var te *cron.TaskError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "calendars", te.Field)
		assert.EqualError(t, err, `cron: task "daily": calendars: no calendar "nope"`)
		states := tab.Tasks()
		require.Len(t, states, 2)
		assert.Equal(t, "0 9 * * *", states[0].Task.Spec)
		assert.Error(t, states[0].Refused)

		// A calendar that goes away: the task keeps its days, refused.
		_, err = tab.Apply(ctx, []cron.Task{daily, task("plain", "h", "0 9 * * *")})
		require.NoError(t, err)
		_, err = tab.SetCalendars()
		assert.EqualError(t, err, `cron: task "daily": calendars: no calendar "off"`)
		next, _ = tab.Next("daily")
		assert.Equal(t, "2000-01-04", dayOf(next, time.UTC))
		assert.Error(t, tab.Tasks()[0].Refused)
		assert.Empty(t, tab.Calendars())

		// An invalid calendar is refused, and the one of its name stays.
		_, err = tab.SetCalendars(cron.Calendar{Name: "off", Days: []string{"2000-01-02"}})
		require.NoError(t, err)
		_, err = tab.SetCalendars(cron.Calendar{Name: "off", Days: []string{"2000-02-30"}})
		var ce *cron.CalendarError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "days", ce.Field)
		assert.Equal(t, []cron.Calendar{{Name: "off", Days: []string{"2000-01-02"}}}, tab.Calendars())
		next, _ = tab.Next("daily")
		assert.Equal(t, "2000-01-01", dayOf(next, time.UTC))
	})
}

// A once task and a task with MaxRuns count no excluded slot: the once
// task runs on the first day its calendar leaves, the other runs its n
// slots on n days the calendar leaves.
func TestTableCalendarOnceAndMaxRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		_, err := tab.SetCalendars(cron.Calendar{Name: "off", Days: []string{"2000-01-01", "2000-01-03"}})
		require.NoError(t, err)
		once := cron.Task{Name: "once", Handler: "h", Spec: "0 9 * * *", Once: true, Calendars: []string{"off"}}
		limited := cron.Task{Name: "limited", Handler: "h", Spec: "0 9 * * *", MaxRuns: 2, Calendars: []string{"off"}, Created: time.Now()}
		_, err = tab.Apply(context.Background(), []cron.Task{once, limited})
		require.NoError(t, err)
		time.Sleep(6 * 24 * time.Hour)
		synctest.Wait()
		var got []string
		for _, r := range l.of("once") {
			got = append(got, dayOf(r.due, time.UTC))
		}
		assert.Equal(t, []string{"2000-01-02"}, got)
		got = nil
		for _, r := range l.of("limited") {
			got = append(got, dayOf(r.due, time.UTC))
		}
		assert.Equal(t, []string{"2000-01-02", "2000-01-04"}, got)
	})
}

// Calendar.Validate and Task.Validate refuse what a Table cannot load,
// naming the field.
func TestCalendarValidate(t *testing.T) {
	for field, c := range map[string]cron.Calendar{
		"name":  {Name: ""},
		"name2": {Name: "a,b"},
		"name3": {Name: " a"},
		"name4": {Name: strings.Repeat("x", cron.MaxNameLen+1)},
		"zone":  {Name: "c", Zone: "Nowhere/Town"},
		"days":  {Name: "c", Days: []string{"2026-13-01"}},
		"days2": {Name: "c", Days: []string{"2026-12-31..2026-12-24"}},
		"note":  {Name: "c", Note: strings.Repeat("x", cron.MaxNoteLen+1)},
	} {
		err := c.Validate()
		var ce *cron.CalendarError
		require.ErrorAs(t, err, &ce, field)
		assert.Equal(t, strings.TrimRight(field, "234"), ce.Field, "%s: %v", field, err)
	}
	ok := cron.Calendar{Name: "fr", Zone: "Europe/Paris", Days: []string{"2026-12-25", " 2026-12-24..2026-12-31 "}, Note: "closed"}
	require.NoError(t, ok.Validate())
	d, err := ok.DaysIn(time.UTC)
	require.NoError(t, err)
	assert.Equal(t, "Europe/Paris", d.Location().String(), "its own zone wins")
	assert.EqualError(t, cron.Calendar{Name: "x", Days: []string{"2026-02-30"}}.Validate(),
		`cron: calendar "x": days: schedule: day "2026-02-30": there is no such date`)

	base := task("t", "h", "@daily")
	for name, cals := range map[string][]string{
		"empty":    {""},
		"comma":    {"a,b"},
		"twice":    {"a", "b", "a"},
		"too many": strings.Split(strings.Repeat("c,", cron.MaxCalendars)+"last", ","),
	} {
		bad := base
		bad.Calendars = cals
		err := bad.Validate()
		var te *cron.TaskError
		require.True(t, errors.As(err, &te), "%s: %v", name, err)
		assert.Equal(t, "calendars", te.Field, name)
	}
	base.Calendars = []string{"fr", "de"}
	assert.NoError(t, base.Validate(), "Validate checks the names only")
}

// DecodeTasks reads "calendars", an array of strings.
func TestDecodeTasksCalendars(t *testing.T) {
	ts, err := cron.DecodeTasks(strings.NewReader(`[{"name": "a", "handler": "h", "spec": "@daily", "permanent": true, "calendars": ["fr", "de"]}]`))
	require.NoError(t, err)
	assert.Equal(t, []string{"fr", "de"}, ts[0].Calendars)
	_, err = cron.DecodeTasks(strings.NewReader(`[{"name": "a", "calendars": "fr"}]`))
	assert.EqualError(t, err, `cron: task "a" at index 0: calendars: want a JSON array of strings`)
}

// A calSource is a memSource that holds calendars too; a change of them
// changes the version.
type calSource struct {
	*memSource
	cals *[]cron.Calendar // shared by the replicas, guarded by memDefs.mu
}

func (s calSource) Calendars(ctx context.Context) ([]cron.Calendar, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]cron.Calendar(nil), *s.cals...), s.version, nil
}

func (s calSource) setCalendars(cals ...cron.Calendar) {
	s.mu.Lock()
	*s.cals = cals
	s.version++
	s.mu.Unlock()
}

// Tables following one CalendarSource load its calendars: a calendar
// created or changed there moves the times of the tasks naming it on
// every replica, and a slot on one of its days runs on none, while each
// other slot runs once between them. A Source that is not a
// CalendarSource holds none: a task naming one is refused.
func TestTableFollowCalendars(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var l ledger
		store := schedule.NewMemoryStore(1000)
		daily := task("daily", "h", "0 9 * * *")
		daily.Calendars = []string{"off"}
		defs := newMemDefs(daily)
		cals := &[]cron.Calendar{{Name: "off", Days: []string{"2000-01-02"}}}
		var tabs []*cron.Table
		for range 2 {
			tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC), cron.WithStore(store))
			defer tab.Stop(ctx)
			require.NoError(t, tab.Follow(ctx, calSource{defs.source(), cals}))
			tabs = append(tabs, tab)
		}
		src := calSource{defs.source(), cals}
		for _, tab := range tabs {
			s, ok := tab.Schedule("daily")
			require.True(t, ok)
			assert.Equal(t, "2000-01-03", dayOf(s.Next(time.Now().Add(12*time.Hour)), time.UTC))
		}
		time.Sleep(36 * time.Hour) // Jan 2, 12:00
		src.setCalendars(cron.Calendar{Name: "off", Days: []string{"2000-01-02", "2000-01-04"}})
		time.Sleep(2 * time.Second)
		for _, tab := range tabs {
			next, _ := tab.Next("daily")
			assert.Equal(t, "2000-01-03", dayOf(next, time.UTC))
			assert.Equal(t, []cron.Calendar{{Name: "off", Days: []string{"2000-01-02", "2000-01-04"}}}, tab.Calendars())
		}
		time.Sleep(24 * time.Hour) // Jan 3, 12:00
		for _, tab := range tabs {
			next, _ := tab.Next("daily")
			assert.Equal(t, "2000-01-05", dayOf(next, time.UTC), "Jan 4 is passed over")
		}
		time.Sleep(3*24*time.Hour - time.Minute)
		synctest.Wait()
		var got []string
		for _, r := range l.of("daily") {
			got = append(got, dayOf(r.due, time.UTC))
		}
		assert.Equal(t, []string{"2000-01-01", "2000-01-03", "2000-01-05", "2000-01-06"}, got, "each slot once, none on a day off")

		// A Source without calendars: the task is refused.
		plain := newMemDefs(daily)
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC))
		defer tab.Stop(ctx)
		var refused error
		require.NoError(t, tab.Follow(ctx, plain.source(), cron.WithErrorHandler(func(err error) { refused = err })))
		assert.EqualError(t, refused, `cron: task "daily": calendars: no calendar "off"`)
		_, loaded := tab.Next("daily")
		assert.False(t, loaded)
	})
}

// A calendar removed, then given back, by SetCalendars: the task naming
// it is refused meanwhile, and no longer once it is back; a change of a
// calendar's note alone moves no task's times.
func TestTableCalendarBackAndNote(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		off := cron.Calendar{Name: "off", Days: []string{"2000-01-02"}, Note: "a day off"}
		_, err := tab.SetCalendars(off)
		require.NoError(t, err)
		d := task("daily", "h", "0 9 * * *")
		d.Calendars = []string{"off"}
		_, err = tab.Apply(context.Background(), []cron.Task{d})
		require.NoError(t, err)
		_, err = tab.SetCalendars()
		require.Error(t, err)
		require.Error(t, stateOf(t, tab, "daily").Refused)
		ch, err := tab.SetCalendars(off)
		require.NoError(t, err)
		assert.Equal(t, []string{"daily"}, ch.Changed)
		assert.NoError(t, stateOf(t, tab, "daily").Refused, "its calendar is back")

		off.Note = "a day off, agreed with the union"
		ch, err = tab.SetCalendars(off)
		require.NoError(t, err)
		assert.Empty(t, ch.Changed, "a note changes no task's times")
		assert.Equal(t, []cron.Calendar{off}, tab.Calendars())
	})
}

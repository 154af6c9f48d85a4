package schedule_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

func mustDays(t *testing.T, loc *time.Location, items ...string) *schedule.Days {
	t.Helper()
	d, err := schedule.ParseDays(loc, items...)
	require.NoError(t, err)
	return d
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// An excluded day is passed over whole, in the calendar's zone, whatever
// length daylight saving gives it; ranges and single days merge.
func TestExceptDays(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	hourly := schedule.Every(time.Hour)
	for _, c := range []struct {
		name     string
		days     []string
		from, to time.Time
	}{
		{"a holiday", []string{"2026-12-25"},
			time.Date(2026, 12, 24, 23, 30, 0, 0, ny), time.Date(2026, 12, 26, 0, 0, 0, 0, ny)},
		{"ranges and days merged", []string{"2026-12-27", "2026-12-24..2026-12-26"},
			time.Date(2026, 12, 23, 23, 30, 0, 0, ny), time.Date(2026, 12, 28, 0, 0, 0, 0, ny)},
		{"a day of 23 hours", []string{"2026-03-08"},
			time.Date(2026, 3, 7, 23, 30, 0, 0, ny), time.Date(2026, 3, 9, 0, 0, 0, 0, ny)},
		{"a day of 25 hours", []string{"2026-11-01"},
			time.Date(2026, 10, 31, 23, 30, 0, 0, ny), time.Date(2026, 11, 2, 0, 0, 0, 0, ny)},
		{"not an excluded day", []string{"2026-12-25"},
			time.Date(2026, 12, 23, 10, 30, 0, 0, ny), time.Date(2026, 12, 23, 11, 0, 0, 0, ny)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := schedule.Except(hourly, mustDays(t, ny, c.days...))
			assert.True(t, s.Next(c.from).Equal(c.to), "Next(%v) = %v, want %v", c.from, s.Next(c.from).In(ny), c.to)
		})
	}
}

// In a zone that skips midnight (Santiago, on the first Sunday of
// September), the day after an excluded one begins at the jump, 01:00.
func TestExceptDaysWhereMidnightIsSkipped(t *testing.T) {
	santiago := mustZone(t, "America/Santiago")
	jump := time.Date(2026, 9, 6, 1, 0, 0, 0, santiago)
	_, before := jump.Add(-time.Second).Zone()
	_, after := jump.Zone()
	require.NotEqual(t, before, after, "the tz database has Santiago's clocks jump at the start of 2026-09-06")
	d := mustDays(t, santiago, "2026-09-05")
	end, ok := d.Excluded(time.Date(2026, 9, 5, 12, 0, 0, 0, santiago))
	require.True(t, ok)
	assert.True(t, end.Equal(jump), "the excluded day ends at the jump: %v", end.In(santiago))
	s := schedule.Except(schedule.Every(30*time.Minute), d)
	assert.True(t, s.Next(time.Date(2026, 9, 5, 12, 0, 0, 0, santiago)).Equal(jump))
}

// Except's Next is the first time of its schedule after t that the
// calendar does not exclude, as stepping through the schedule one slot at
// a time finds it, for random calendars, periods and instants.
func TestExceptAgreesWithStepping(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	zones := []*time.Location{time.UTC, mustZone(t, "America/New_York"), mustZone(t, "Australia/Lord_Howe"), mustZone(t, "America/Santiago")}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		loc := zones[rng.IntN(len(zones))]
		var items []string
		for range 1 + rng.IntN(6) {
			day := base.AddDate(0, 0, rng.IntN(365))
			item := day.Format(time.DateOnly)
			if rng.IntN(3) == 0 {
				item += ".." + day.AddDate(0, 0, rng.IntN(20)).Format(time.DateOnly)
			}
			items = append(items, item)
		}
		days := mustDays(t, loc, items...)
		period := []time.Duration{17 * time.Minute, time.Hour, 90 * time.Minute, 24 * time.Hour, 61 * time.Second}[rng.IntN(5)]
		every := schedule.Every(period)
		s := schedule.Except(every, days)
		from := base.Add(time.Duration(rng.Int64N(int64(365 * 24 * time.Hour))))
		want := every.Next(from)
		for n := 0; ; n++ {
			if _, ex := days.Excluded(want); !ex {
				break
			}
			require.Less(t, n, 2_000_000, "case %d", i)
			want = every.Next(want)
		}
		got := s.Next(from)
		require.True(t, got.Equal(want), "case %d: %v, period %v, from %v: Next %v, stepping %v", i, items, period, from.In(loc), got.In(loc), want.In(loc))
	}
}

// alwaysOut excludes every instant, a nanosecond at a time: the worst
// Calendar Except can be given.
type alwaysOut struct{}

func (alwaysOut) Excluded(t time.Time) (time.Time, bool) { return t.Add(time.Nanosecond), true }

// Where the clocks went back across midnight, a day begins at its first
// midnight, and an instant of an excluded day that the clocks came back
// into ends at a later one: Amman's clocks went from 01:00 back to 00:00
// on 2021-10-29, St. John's from 00:01 on 2010-11-07 back to 23:01 the
// day before. The zero Days excludes nothing.
func TestExceptDaysWhereMidnightComesTwice(t *testing.T) {
	amman := mustZone(t, "Asia/Amman")
	first := time.Date(2021, 10, 28, 21, 0, 0, 0, time.UTC) // 00:00 EEST
	require.Equal(t, "2021-10-29 00:00 EEST", first.In(amman).Format("2006-01-02 15:04 MST"), "the tz database has Amman's clocks go back at 01:00 on 2021-10-29")
	s := schedule.Except(schedule.Every(15*time.Minute), mustDays(t, amman, "2021-10-28"))
	assert.True(t, s.Next(time.Date(2021, 10, 28, 12, 0, 0, 0, amman)).Equal(first), "the first 00:00 of the day after")

	johns := mustZone(t, "America/St_Johns")
	days := mustDays(t, johns, "2010-11-06")
	back := time.Date(2010, 11, 7, 2, 45, 0, 0, time.UTC) // 23:15 NST on 2010-11-06, again
	require.Equal(t, "2010-11-06 23:15 NST", back.In(johns).Format("2006-01-02 15:04 MST"))
	end, ok := days.Excluded(back)
	require.True(t, ok)
	assert.True(t, end.After(back), "the end of the span is after the instant: %v", end.In(johns))
	every := schedule.Except(schedule.Every(15*time.Minute), days)
	next := every.Next(time.Date(2010, 11, 6, 12, 0, 0, 0, johns))
	require.False(t, next.IsZero(), "the schedule goes on")
	for range 20 { // and never ends
		require.False(t, next.IsZero())
		next = every.Next(next)
	}

	var zero schedule.Days
	_, ok = zero.Excluded(time.Now())
	assert.False(t, ok)
	assert.Equal(t, time.UTC, zero.Location())
}

// A calendar that excludes every time leaves a schedule with no next
// time, at once, not a Next that never returns; one that breaks its
// contract (an end not after t) ends the schedule.
func TestExceptEverything(t *testing.T) {
	start := time.Now()
	assert.True(t, schedule.Except(schedule.Every(time.Second), alwaysOut{}).Next(time.Now()).IsZero())
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.True(t, schedule.Except(schedule.Every(time.Second), broken{}).Next(time.Now()).IsZero())
	assert.PanicsWithValue(t, "schedule: Except with a nil Schedule or Calendar", func() { schedule.Except(nil, alwaysOut{}) })
	assert.PanicsWithValue(t, "schedule: Except with a nil Schedule or Calendar", func() { schedule.Except(schedule.Every(time.Second), nil) })
}

type broken struct{}

func (broken) Excluded(t time.Time) (time.Time, bool) { return t, true }

// ParseDays refuses what it cannot read with an error that quotes the
// item.
func TestParseDaysErrors(t *testing.T) {
	for item, want := range map[string]string{
		"2026-02-30":             `schedule: day "2026-02-30": there is no such date`,
		"2026-13-01..2026-12-31": `schedule: day "2026-13-01..2026-12-31": there is no such date`,
		"tomorrow":               `schedule: day "tomorrow": want a date`,
		"2026-12-31..2026-12-24": `schedule: day "2026-12-31..2026-12-24": the range ends before it starts`,
		"2026-12-24..":           `schedule: day "2026-12-24..": want a date`,
		"":                       `schedule: day "": want a date`,
	} {
		_, err := schedule.ParseDays(nil, item)
		require.Error(t, err, item)
		assert.True(t, strings.HasPrefix(err.Error(), want), "%q: %v", item, err)
	}
	_, err := schedule.ParseDays(nil, make([]string, schedule.MaxDays+1)...)
	assert.EqualError(t, err, "schedule: 10001 days and ranges, more than 10000")
	d, err := schedule.ParseDays(nil, " 2026-12-25 ")
	require.NoError(t, err)
	assert.Equal(t, time.UTC, d.Location(), "nil is UTC")
}

// A job on an Except schedule neither runs nor reports the slots of its
// excluded days, and a restart after them catches up none of them, under
// MisfireRunAll.
func TestJobSkipsExcludedDays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(100)
		// The bubble starts at 2000-01-01 00:00 UTC; 2000-01-02 is off.
		days := mustDays(t, time.UTC, "2000-01-02")
		sched := schedule.Except(schedule.Every(6*time.Hour), days)
		j := schedule.NewJob("j", sched, l.work(time.Second), schedule.WithStore(store),
			schedule.WithObserver(l.observe), schedule.WithMisfire(schedule.MisfireRunAll))
		start(t, j)
		time.Sleep(20 * time.Hour) // the slots of 06:00, 12:00 and 18:00 on January 1
		stop(t, j)
		time.Sleep(40 * time.Hour) // down over January 2, and up to 12:00 on January 3
		j = schedule.NewJob("j", sched, l.work(time.Second), schedule.WithStore(store),
			schedule.WithObserver(l.observe), schedule.WithMisfire(schedule.MisfireRunAll))
		start(t, j)
		time.Sleep(time.Hour)
		stop(t, j)
		assert.Equal(t, []string{
			"6h0m0s Succeeded Scheduled 6h0m0s-6h0m1s",
			"12h0m0s Succeeded Scheduled 12h0m0s-12h0m1s",
			"18h0m0s Succeeded Scheduled 18h0m0s-18h0m1s",
			"48h0m0s Succeeded CatchUp 60h0m0s-60h0m1s", // January 3, 00:00
			"54h0m0s Succeeded CatchUp 60h0m1s-60h0m2s",
			"60h0m0s Succeeded Scheduled 60h0m2s-60h0m3s",
		}, l.summary(), "nothing of January 2")
	})
}

func ExampleExcept() {
	// Every 24 hours from 09:00 on December 1 in Paris (a cron spec
	// keeps 09:00 across daylight saving), but on the public holidays of
	// the end of the year.
	paris, _ := time.LoadLocation("Europe/Paris")
	holidays, err := schedule.ParseDays(paris, "2026-12-25", "2026-12-31..2027-01-01")
	if err != nil {
		panic(err) // a list from users gets its error shown instead
	}
	daily := schedule.EveryFrom(time.Date(2026, 12, 1, 9, 0, 0, 0, paris), 24*time.Hour)
	s := schedule.Except(daily, holidays)
	t := time.Date(2026, 12, 23, 12, 0, 0, 0, paris)
	for range 5 {
		t = s.Next(t)
		fmt.Println(t.In(paris).Format("Mon Jan 2 15:04"))
	}
	// Output:
	// Thu Dec 24 09:00
	// Sat Dec 26 09:00
	// Sun Dec 27 09:00
	// Mon Dec 28 09:00
	// Tue Dec 29 09:00
}

// An excluded day holds for a job, not a process: two Jobs of one name
// sharing a store run each slot of the other days once between them, and
// neither runs, reports nor catches up a slot of the excluded day. (Under
// OverlapBufferAll, so that the catch-up of one Job waits for the other's
// run, which OverlapSkip's would skip.)
func TestExceptOnReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(100)
		sched := schedule.Except(schedule.Every(6*time.Hour), mustDays(t, time.UTC, "2000-01-02"))
		replicas := func() []*schedule.Job {
			var js []*schedule.Job
			for _, node := range []string{"a", "b"} {
				j := schedule.NewJob("j", sched, l.work(time.Second), schedule.WithStore(store), schedule.WithNode(node),
					schedule.WithObserver(l.observe), schedule.WithMisfire(schedule.MisfireRunAll),
					schedule.WithOverlap(schedule.OverlapBufferAll))
				start(t, j)
				js = append(js, j)
			}
			return js
		}
		js := replicas()
		time.Sleep(30 * time.Hour) // through January 1, and the first hours of January 2
		for _, j := range js {
			stop(t, j)
		}
		time.Sleep(30 * time.Hour) // down until 12:00 on January 3
		js = replicas()
		time.Sleep(time.Hour)
		for _, j := range js {
			stop(t, j)
		}
		h, err := store.History(context.Background(), "j", 100)
		require.NoError(t, err)
		var kept []string
		for i := len(h) - 1; i >= 0; i-- {
			kept = append(kept, since(h[i].Due)+" "+h[i].Status.String())
		}
		assert.Equal(t, []string{"6h0m0s Succeeded", "12h0m0s Succeeded", "18h0m0s Succeeded",
			"48h0m0s Succeeded", "54h0m0s Succeeded", "60h0m0s Succeeded"}, kept, "nothing of January 2")
		runs := map[time.Time]int{}
		for _, r := range l.recs() {
			runs[r.Due]++
		}
		for due, n := range runs {
			assert.Equal(t, 1, n, "records of %v: %v", due.Sub(at(0)), l.summary())
		}
	})
}

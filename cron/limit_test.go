package cron_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// state returns the TaskState of the task name of tab.
func state(t *testing.T, tab *cron.Table, name string) cron.TaskState {
	t.Helper()
	ts, err := tab.TasksOf(context.Background(), name)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	return ts[0]
}

// A task with MaxRuns 3 and no End runs its first 3 slots after its
// Created, and then has no run left; TaskState counts them down.
func TestTaskMaxRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Second)}, cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		time.Sleep(5 * time.Second)
		t0 := time.Now()
		d := cron.Task{Name: "t", Handler: "h", Spec: "*/10 * * * * *", MaxRuns: 3, Created: t0}
		_, err := tab.Apply(context.Background(), []cron.Task{d})
		require.NoError(t, err)
		var left []string
		for range 5 {
			s := state(t, tab, "t")
			next := "-"
			if !s.Next.IsZero() {
				next = s.Next.Sub(t0).String()
			}
			left = append(left, fmt.Sprintf("%d next %s", s.Remaining, next))
			time.Sleep(10 * time.Second)
		}
		assert.Equal(t, []string{"3 next 5s", "2 next 15s", "1 next 25s", "0 next -", "0 next -"}, left)
		assert.Equal(t, []time.Duration{5 * time.Second, 15 * time.Second, 25 * time.Second}, offsets(dues(l.of("t")), t0))
		assert.Equal(t, 3, state(t, tab, "t").Task.MaxRuns)
	})
}

// A task whose MaxRuns changes while it runs keeps the count of its
// slots from its anchor: lowered below the slots passed, it ends at once;
// raised, it runs again, the slots passed meanwhile having used their
// turns.
func TestTaskMaxRunsChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Second)}, cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		time.Sleep(5 * time.Second)
		t0 := time.Now()
		d := cron.Task{Name: "t", Handler: "h", Spec: "*/10 * * * * *", MaxRuns: 5, Created: t0}
		apply := func(n int) {
			d.MaxRuns = n
			_, err := tab.Apply(context.Background(), []cron.Task{d})
			require.NoError(t, err)
		}
		apply(5)
		time.Sleep(20 * time.Second) // 10s and 20s ran (t0+5s, t0+15s)
		apply(3)
		assert.Equal(t, 1, state(t, tab, "t").Remaining)
		time.Sleep(20 * time.Second) // 30s ran, 40s is past the count
		apply(2)
		assert.Zero(t, state(t, tab, "t").Remaining)
		assert.True(t, state(t, tab, "t").Next.IsZero())
		time.Sleep(20 * time.Second) // 50s and 60s pass: 6 slots in all
		apply(8)
		assert.Equal(t, 2, state(t, tab, "t").Remaining)
		time.Sleep(time.Minute)
		assert.Equal(t, []time.Duration{5 * time.Second, 15 * time.Second, 25 * time.Second, 65 * time.Second, 75 * time.Second},
			offsets(dues(l.of("t")), t0))
	})
}

// A slot is an instant: across the fall-back of New York's clocks, a spec
// with a * in its hour field has two slots at 01:30, and both count; a
// spec at a fixed time of day has one. Each task's count, from its Start
// in October 1999, is left with its last slots in the year 2000.
func TestTaskMaxRunsAcrossDaylightSaving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Second)}, cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		ny, err := time.LoadLocation("America/New_York")
		require.NoError(t, err)
		// From 1999-10-31 00:00 EDT, the clocks falling back at 02:00 EDT
		// that night, to 2000-01-01 00:00 UTC: 1484 real hours.
		hourly := cron.Task{Name: "hourly", Handler: "h", Spec: "30 * * * *", Zone: "America/New_York",
			Start: time.Date(1999, 10, 31, 0, 0, 0, 0, ny), MaxRuns: 1484 + 2, Misfire: "skip"}
		// From 1999-10-30 00:00 EDT: 63 days at 01:30, the last before
		// 2000-01-01 06:30 UTC.
		daily := cron.Task{Name: "daily", Handler: "h", Spec: "30 1 * * *", Zone: "America/New_York",
			Start: time.Date(1999, 10, 30, 0, 0, 0, 0, ny), MaxRuns: 63 + 1, Misfire: "skip"}
		_, err = tab.Apply(context.Background(), []cron.Task{hourly, daily})
		require.NoError(t, err)
		assert.Equal(t, 2, state(t, tab, "hourly").Remaining)
		assert.Equal(t, 1, state(t, tab, "daily").Remaining)
		time.Sleep(24 * time.Hour)
		t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		assert.Equal(t, []time.Duration{30 * time.Minute, 90 * time.Minute}, offsets(dues(l.of("hourly")), t0))
		assert.Equal(t, []time.Duration{390 * time.Minute}, offsets(dues(l.of("daily")), t0))
		assert.Zero(t, state(t, tab, "hourly").Remaining)
		assert.True(t, state(t, tab, "hourly").Next.IsZero())
	})
}

// offsets returns each of ts less t0.
func offsets(ts []time.Time, t0 time.Time) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		out = append(out, t.Sub(t0))
	}
	return out
}

// Two Tables sharing a SharedStore, as two replicas following one Source
// do, run a task with MaxRuns 3 three times in all, each slot once, though
// the second loads it after the first slot.
func TestTaskMaxRunsOnReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		store := schedule.NewMemoryStore(100)
		time.Sleep(5 * time.Second)
		d := cron.Task{Name: "t", Handler: "h", Spec: "*/10 * * * * *", MaxRuns: 3, Created: time.Now()}
		var tabs []*cron.Table
		for i := range 2 {
			tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Second)}, cron.WithLocation(time.UTC),
				cron.WithStore(store), cron.WithJobOptions(schedule.WithNode(fmt.Sprint("n", i))))
			_, err := tab.Apply(context.Background(), []cron.Task{d})
			require.NoError(t, err)
			tabs = append(tabs, tab)
			time.Sleep(12 * time.Second)
		}
		time.Sleep(time.Minute)
		for _, tab := range tabs {
			assert.Zero(t, state(t, tab, "t").Remaining)
			require.NoError(t, tab.Stop(context.Background()))
		}
		assert.Len(t, l.of("t"), 3)
		h, err := store.History(context.Background(), "t", 10)
		require.NoError(t, err)
		assert.Len(t, h, 3)
	})
}

// A Table refuses a task with MaxRuns but neither Start nor Created:
// counted from when each Table loaded it, two replicas, or a process and
// its restart, would each run MaxRuns slots. Validate accepts it, for a
// store of definitions sets Created as it saves it.
func TestTaskMaxRunsNeedsAnAnchor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Second)}, cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		d := cron.Task{Name: "t", Handler: "h", Spec: "*/10 * * * * *", MaxRuns: 3}
		require.NoError(t, d.Validate())
		_, err := tab.Apply(context.Background(), []cron.Task{d})
		assert.EqualError(t, err, `cron: task "t": maxRuns: needs start or created, so that every replica counts from the same time`)
		var te *cron.TaskError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "maxRuns", te.Field)
		assert.Error(t, state(t, tab, "t").Refused)
		for _, ok := range []cron.Task{
			{Name: "start", Handler: "h", Spec: "*/10 * * * * *", MaxRuns: 3, Start: time.Now()},
			{Name: "created", Handler: "h", Spec: "*/10 * * * * *", MaxRuns: 3, Created: time.Now()},
		} {
			_, err := tab.Apply(context.Background(), []cron.Task{ok})
			assert.NoError(t, err, ok.Name)
		}
	})
}

// A task with MaxRuns 2 loaded again by a new Table on the same store, as
// after a restart, goes on with the count from its Created: 2 runs in all.
func TestTaskMaxRunsAcrossARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		store := schedule.NewMemoryStore(100)
		time.Sleep(5 * time.Second)
		d := cron.Task{Name: "t", Handler: "h", Spec: "*/10 * * * * *", MaxRuns: 2, Created: time.Now()}
		for range 2 {
			tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Second)}, cron.WithLocation(time.UTC),
				cron.WithStore(store))
			_, err := tab.Apply(context.Background(), []cron.Task{d})
			require.NoError(t, err)
			time.Sleep(time.Minute)
			require.NoError(t, tab.Stop(context.Background()))
		}
		assert.Len(t, l.of("t"), 2)
	})
}

// TaskState.Remaining counts the slots that have fallen due: a task with a
// Jitter, whose job looks at the slot after its next, has its whole count
// left before its first slot.
func TestTaskRemainingWithJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Second)}, cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		time.Sleep(5 * time.Second)
		d := cron.Task{Name: "t", Handler: "h", Spec: "0 * * * * *", MaxRuns: 3, Created: time.Now(), Jitter: cron.Duration(20 * time.Second)}
		_, err := tab.Apply(context.Background(), []cron.Task{d})
		require.NoError(t, err)
		assert.Equal(t, 3, state(t, tab, "t").Remaining)
		time.Sleep(time.Minute)
		assert.Equal(t, 2, state(t, tab, "t").Remaining)
	})
}

// A task's Jitter delays each slot by schedule.Jitter of its name and due
// time, bounded by half the time to its next slot.
func TestTaskJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		var rec recorder
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", time.Second)}, cron.WithLocation(time.UTC),
			cron.WithJobOptions(schedule.WithObserver(rec.observe)))
		defer tab.Stop(context.Background())
		d := task("t", "h", "0 * * * * *")
		d.Jitter = cron.Duration(20 * time.Second)
		short := task("short", "h", "*/10 * * * * *")
		short.Jitter = cron.Duration(time.Hour) // bounded by 5s
		_, err := tab.Apply(context.Background(), []cron.Task{d, short})
		require.NoError(t, err)
		time.Sleep(5*time.Minute + 30*time.Second)
		runs := l.of("t")
		require.Len(t, runs, 5)
		delayed := 0
		for _, r := range runs {
			j := schedule.Jitter("t", r.due, 20*time.Second)
			assert.True(t, r.due.Add(j).Equal(r.start), "due %v, jitter %v, start %v", r.due, j, r.start)
			if j > 0 {
				delayed++
			}
		}
		assert.Positive(t, delayed)
		for _, r := range l.of("short") {
			assert.True(t, r.due.Add(schedule.Jitter("short", r.due, 5*time.Second)).Equal(r.start))
		}
		assert.Equal(t, cron.Duration(20*time.Second), state(t, tab, "t").Task.Jitter)
	})
}

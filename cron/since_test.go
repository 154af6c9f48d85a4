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

// statuses returns the status of each slot of job in rec, by its Due in
// seconds after t0.
func statuses(rec *recorder, job string, t0 time.Time) map[int][]schedule.Status {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := map[int][]schedule.Status{}
	for _, r := range rec.records {
		if r.Job == job {
			s := int(r.Due.Sub(t0).Round(time.Second) / time.Second)
			out[s] = append(out[s], r.Status)
		}
	}
	return out
}

// A task that has no record owes the slots due after its Created, by its
// misfire policy, as after a record; without Created, none before the
// Table loaded it.
func TestTableCreatedOwesTheSlotsSince(t *testing.T) {
	ok, missed := schedule.Succeeded, schedule.Missed
	for _, c := range []struct {
		misfire string
		want    map[int][]schedule.Status // by second after the Apply
	}{
		{"run-all", map[int][]schedule.Status{-25: {ok}, -15: {ok}, -5: {ok}, 5: {ok}}},
		{"run-once", map[int][]schedule.Status{-25: {missed}, -15: {missed}, -5: {ok}, 5: {ok}}},
		{"skip", map[int][]schedule.Status{-25: {missed}, -15: {missed}, -5: {missed}, 5: {ok}}},
		{"", map[int][]schedule.Status{5: {ok}}}, // no Created
	} {
		t.Run(c.misfire, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec recorder
				var l ledger
				tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC),
					cron.WithJobOptions(schedule.WithObserver(rec.observe)))
				time.Sleep(5 * time.Second) // off the slot of 00:00:00
				now := time.Now().UTC()
				d := task("t", "h", "*/10 * * * * *")
				d.Misfire = c.misfire
				if c.misfire != "" {
					d.Created = now.Add(-35 * time.Second)
				}
				_, err := tab.Apply(context.Background(), []cron.Task{d})
				require.NoError(t, err)
				time.Sleep(6 * time.Second)
				require.NoError(t, tab.Stop(context.Background()))
				assert.Equal(t, c.want, statuses(&rec, "t", now))
			})
		})
	}
}

// A Once task whose one time passed before the Table loaded it runs once,
// at once, under run-once (or run-all), and is Missed under skip; it does
// not run again when re-applied, nor when its job is replaced. Its time is
// the first at or after its Start, or else after its Created.
func TestTableOnceTaskDueBeforeItWasLoaded(t *testing.T) {
	for _, anchor := range []string{"start", "created"} {
		for _, misfire := range []string{"run-once", "run-all", "skip"} {
			t.Run(anchor+"/"+misfire, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var rec recorder
					var l ledger
					tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC),
						cron.WithJobOptions(schedule.WithObserver(rec.observe)))
					ctx := context.Background()
					time.Sleep(time.Hour)
					now := time.Now().UTC() // 01:00
					d := task("once", "h", "0 30 * * * *")
					d.Once, d.Misfire = true, misfire
					if anchor == "start" {
						d.Start = now.Add(-time.Hour) // 00:00: its time is 00:30
					} else {
						d.Created = now.Add(-time.Hour)
					}
					require.NoError(t, d.Validate())
					_, err := tab.Apply(ctx, []cron.Task{d})
					require.NoError(t, err)
					time.Sleep(time.Minute)
					d.Overlap = "allow" // a new job
					_, err = tab.Apply(ctx, []cron.Task{d})
					require.NoError(t, err)
					time.Sleep(2 * time.Hour)
					_, err = tab.Apply(ctx, []cron.Task{d})
					require.NoError(t, err)
					time.Sleep(time.Hour)
					require.NoError(t, tab.Stop(ctx))
					got := statuses(&rec, "once", now)
					if misfire == "skip" {
						// Missed, by each job that starts with no record of
						// it: a Missed slot reaches the Observer, not the
						// Store.
						assert.Empty(t, l.of("once"))
						require.Len(t, got, 1)
						assert.NotEmpty(t, got[-1800])
						for _, s := range got[-1800] {
							assert.Equal(t, schedule.Missed, s)
						}
						return
					}
					assert.Equal(t, map[int][]schedule.Status{-1800: {schedule.Succeeded}}, got)
					require.Len(t, l.of("once"), 1)
					assert.Equal(t, now, l.of("once")[0].start.UTC(), "at once")
				})
			})
		}
	}
}

// A new task stopped before its first slot, a run-all task of every 30s
// here, does not lose the slots due while no process ran it: the next
// Table, on the same Store, owes them since the task's Created.
func TestTableNewTaskStoppedBeforeItsFirstSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		var rec recorder
		var l ledger
		newTable := func() *cron.Table {
			return cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC),
				cron.WithStore(store), cron.WithJobOptions(schedule.WithObserver(rec.observe)))
		}
		ctx := context.Background()
		t0 := time.Now().UTC()
		time.Sleep(time.Second)
		d := task("new", "h", "*/30 * * * * *")
		d.Misfire, d.Created = "run-all", time.Now() // as a Source sets it
		tab := newTable()
		_, err := tab.Apply(ctx, []cron.Task{d})
		require.NoError(t, err)
		time.Sleep(10 * time.Second)
		require.NoError(t, tab.Stop(ctx)) // at 11s, before its slot of 30s

		time.Sleep(time.Minute) // down over 30s and 60s
		tab = newTable()
		_, err = tab.Apply(ctx, []cron.Task{d})
		require.NoError(t, err)
		time.Sleep(time.Second)
		require.NoError(t, tab.Stop(ctx))
		assert.Equal(t, map[int][]schedule.Status{30: {schedule.Succeeded}, 60: {schedule.Succeeded}}, statuses(&rec, "new", t0))
	})
}

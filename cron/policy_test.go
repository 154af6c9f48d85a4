package cron_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A task's Timeout cancels its run after it, and the run is Failed; a
// task without one runs unbounded, or under the Table's.
func TestTableTaskTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		block := func(ctx context.Context, _ string, r schedule.Run) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Minute):
				return nil
			}
		}
		tab := cron.NewTable(map[string]cron.Handler{"h": block}, cron.WithLocation(time.UTC),
			cron.WithJobOptions(schedule.WithObserver(rec.observe), schedule.WithTimeout(10*time.Second)))
		bounded, table := task("bounded", "h", "@hourly"), task("table", "h", "@hourly")
		bounded.Timeout = cron.Duration(2 * time.Second)
		_, err := tab.Apply(context.Background(), []cron.Task{bounded, table})
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, tab.RunNow("bounded"))
		require.NoError(t, tab.RunNow("table"))
		time.Sleep(time.Minute)
		require.NoError(t, tab.Stop(context.Background()))
		for job, after := range map[string]time.Duration{"bounded": 2 * time.Second, "table": 10 * time.Second} {
			failed := rec.of(job, schedule.Failed)
			require.Len(t, failed, 1, job)
			assert.Equal(t, start.Add(after), failed[0].End, job)
			assert.Contains(t, failed[0].Err, "deadline exceeded", job)
		}
	})
}

// A task's CatchUpWindow leaves the slots missed longer ago than it Missed:
// three tasks created three hours before a Table first loads them, ten
// minutes past the hour, owe the slots of the last three hours; the one
// whose window is five minutes runs none of them, the one of fifteen
// minutes, and the one without, the latest, as a CatchUp.
func TestTableTaskCatchUpWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		ok := func(context.Context, string, schedule.Run) error { return nil }
		tab := cron.NewTable(map[string]cron.Handler{"h": ok}, cron.WithLocation(time.UTC),
			cron.WithJobOptions(schedule.WithObserver(rec.observe)))
		time.Sleep(10 * time.Minute)
		var tasks []cron.Task
		for name, w := range map[string]time.Duration{"narrow": 5 * time.Minute, "wide": 15 * time.Minute, "none": 0} {
			d := task(name, "h", "@hourly")
			d.CatchUpWindow, d.Created = cron.Duration(w), time.Now().Add(-3*time.Hour)
			tasks = append(tasks, d)
		}
		_, err := tab.Apply(context.Background(), tasks)
		require.NoError(t, err)
		time.Sleep(time.Minute)
		synctest.Wait()
		for _, ts := range tab.Tasks() {
			if ts.Task.Name == "narrow" {
				assert.Equal(t, cron.Duration(5*time.Minute), ts.Task.CatchUpWindow, "Tasks reports it")
			}
		}
		require.NoError(t, tab.Stop(context.Background()))
		for job, ran := range map[string]int{"narrow": 0, "wide": 1, "none": 1} {
			assert.Len(t, rec.of(job, schedule.Succeeded), ran, job)
			assert.Len(t, rec.of(job, schedule.Missed), 3-ran, job)
		}
	})
}

// A changed overlap, misfire, timeout or retry policy gives the task a new
// job, which starts once the old one's run in flight has returned; any
// other change keeps the job, as does a retry that changes nothing (an
// Attempts of 1 is no retry, as 0 is).
func TestTablePolicyChangeMakesANewJob(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*cron.Task)
		newJob bool
	}{
		{"overlap", func(d *cron.Task) { d.Overlap = "buffer-one" }, true},
		{"overlap buffer-all", func(d *cron.Task) { d.Overlap = "buffer-all" }, true},
		{"misfire", func(d *cron.Task) { d.Misfire = "skip" }, true},
		{"timeout", func(d *cron.Task) { d.Timeout = cron.Duration(time.Hour) }, true},
		{"catch-up window", func(d *cron.Task) { d.CatchUpWindow = cron.Duration(time.Hour) }, true},
		{"retry", func(d *cron.Task) { d.Retry = cron.Retry{Attempts: 3, Backoff: cron.Duration(time.Second)} }, true},
		{"retry of one", func(d *cron.Task) { d.Retry = cron.Retry{Attempts: 1, Backoff: cron.Duration(time.Second)} }, false},
		{"business id", func(d *cron.Task) { d.BusinessID = "other" }, false},
		{"spec", func(d *cron.Task) { d.Spec = "*/2 * * * * *" }, false},
		{"paused", func(d *cron.Task) { d.Paused = true }, false},
		{"created", func(d *cron.Task) { d.Created = time.Now().Add(-time.Hour) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l ledger
				tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 2500*time.Millisecond)}, cron.WithLocation(time.UTC))
				ctx := context.Background()
				d := task("t", "h", "* * * * * *")
				_, err := tab.Apply(ctx, []cron.Task{d})
				require.NoError(t, err)
				time.Sleep(1500 * time.Millisecond) // the run of 1s is in flight
				c.change(&d)
				ch, err := tab.Apply(ctx, []cron.Task{d})
				require.NoError(t, err)
				assert.Equal(t, cron.Changes{Changed: []string{"t"}}, ch)
				next, _ := tab.Next("t")
				if c.newJob {
					assert.Zero(t, next, "the new job waits for the old one's run")
				} else if !d.Paused {
					assert.NotZero(t, next, "the same job")
				}
				s := tab.Tasks()[0]
				if d.Created.IsZero() {
					d.Created = s.Task.Created // the time the Table loaded it
				}
				d.Created = d.Created.UTC()
				d.Overlap = map[string]string{"": "skip"}[d.Overlap] + d.Overlap
				d.Misfire = map[string]string{"": "run-once"}[d.Misfire] + d.Misfire
				assert.Equal(t, d, s.Task, "the definition in force")
				require.NoError(t, tab.Stop(ctx))
				assert.Zero(t, l.overlaps)
			})
		})
	}
}

// A Table's jitter (WithJobOptions(schedule.WithJitter)) spreads its
// tasks due at the same time over the jitter, each task's slot once.
func TestTableJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		starts := map[string][]time.Duration{}
		tab := cron.NewTable(map[string]cron.Handler{"h": func(_ context.Context, id string, r schedule.Run) error {
			mu.Lock()
			starts[id] = append(starts[id], time.Since(r.Due))
			mu.Unlock()
			return nil
		}}, cron.WithLocation(time.UTC), cron.WithJobOptions(schedule.WithJitter(time.Minute)))
		var tasks []cron.Task
		for i := range 200 {
			d := task(fmt.Sprint("report-", i), "h", "30 0 * * *")
			d.BusinessID = d.Name
			tasks = append(tasks, d)
		}
		_, err := tab.Apply(context.Background(), tasks)
		require.NoError(t, err)
		time.Sleep(32 * time.Minute)
		require.NoError(t, tab.Stop(context.Background()))
		early, late := time.Minute, time.Duration(0)
		for _, d := range tasks {
			s := starts[d.Name]
			require.Len(t, s, 1, d.Name)
			early, late = min(early, s[0]), max(late, s[0])
		}
		assert.Less(t, early, 5*time.Second, "the earliest start")
		assert.Greater(t, late, 55*time.Second, "the latest start")
		assert.Less(t, late, time.Minute)
	})
}

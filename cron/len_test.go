package cron_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// Len counts the tasks a Table runs: not a refused definition, nor a
// removed task whose run goes on; after Stop, those it ran.
func TestTableLen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		tab := cron.NewTable(map[string]cron.Handler{"h": func(ctx context.Context, _ string, _ schedule.Run) error {
			<-release
			return nil
		}}, cron.WithLocation(time.UTC))
		ctx := context.Background()
		assert.Zero(t, tab.Len())
		_, err := tab.Apply(ctx, []cron.Task{task("a", "h", "* * * * * *"), task("b", "h", "* * * * * *"), task("bad", "nope", "* * * * * *")})
		require.Error(t, err)
		assert.Equal(t, 2, tab.Len())
		assert.Len(t, tab.Names(), 3, "Names lists the refused definition too")
		time.Sleep(1500 * time.Millisecond) // a's run is in flight
		_, err = tab.Apply(ctx, []cron.Task{task("b", "h", "* * * * * *")})
		require.NoError(t, err)
		assert.Equal(t, 1, tab.Len(), "a is removed, its run in flight")
		close(release)
		require.NoError(t, tab.Stop(ctx))
		assert.Equal(t, 1, tab.Len())
	})
}

// A Trace given with WithJobOptions reaches every task's job: the runs of
// each task, named by the task, start and end through it.
func TestTableTrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		started, ended := map[string]int{}, map[string]int{}
		tr := &schedule.Trace{
			RunStart: func(ctx context.Context, rec schedule.Record) context.Context {
				mu.Lock()
				started[rec.Job]++
				mu.Unlock()
				return ctx
			},
			RunEnd: func(_ context.Context, rec schedule.Record) {
				mu.Lock()
				ended[rec.Job+" "+rec.Status.String()]++
				mu.Unlock()
			},
		}
		tab := cron.NewTable(map[string]cron.Handler{
			"ok":   func(context.Context, string, schedule.Run) error { return nil },
			"fail": func(context.Context, string, schedule.Run) error { return assert.AnError },
		}, cron.WithLocation(time.UTC), cron.WithJobOptions(schedule.WithTrace(tr)))
		ctx := context.Background()
		_, err := tab.Apply(ctx, []cron.Task{task("a", "ok", "* * * * * *"), task("b", "fail", "* * * * * *")})
		require.NoError(t, err)
		time.Sleep(3500 * time.Millisecond)
		require.NoError(t, tab.Stop(ctx))
		assert.Equal(t, map[string]int{"a": 3, "b": 3}, started)
		assert.Equal(t, map[string]int{"a Succeeded": 3, "b Failed": 3}, ended)
	})
}

package otelcirculation_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A Table given the hooks with WithJobOptions records its tasks' runs, by
// task; its gauge follows its tasks as they come and go, until
// unregistered.
func TestTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		tab := cron.NewTable(map[string]cron.Handler{
			"ok":   func(context.Context, string, schedule.Run) error { return nil },
			"fail": func(context.Context, string, schedule.Run) error { return errors.New("boom") },
		}, cron.WithLocation(time.UTC), cron.WithJobOptions(s.tel.JobOption()))
		reg, err := s.tel.ObserveTable("tasks", tab)
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"table=tasks": 0}, ints(t, s.collect(t)["circulation.table.tasks"]))

		ctx := context.Background()
		task := func(name, handler string) cron.Task {
			return cron.Task{Name: name, Handler: handler, Spec: "* * * * * *", Permanent: true}
		}
		_, err = tab.Apply(ctx, []cron.Task{task("a", "ok"), task("b", "fail")})
		require.NoError(t, err)
		time.Sleep(3500 * time.Millisecond)
		m := s.collect(t)
		assert.Equal(t, map[string]int64{"table=tasks": 2}, ints(t, m["circulation.table.tasks"]))
		assert.Equal(t, map[string]int64{
			"job=a,reason=Scheduled,status=Succeeded": 3,
			"job=b,reason=Scheduled,status=Failed":    3,
		}, ints(t, m["circulation.runs"]))

		_, err = tab.Apply(ctx, []cron.Task{task("a", "ok")})
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"table=tasks": 1}, ints(t, s.collect(t)["circulation.table.tasks"]))
		require.NoError(t, reg.Unregister())
		_, observed := s.collect(t)["circulation.table.tasks"]
		assert.False(t, observed, "unregistered")
		require.NoError(t, tab.Stop(ctx))
		assert.Panics(t, func() { _, _ = s.tel.ObserveTable("nil", nil) })
	})
}

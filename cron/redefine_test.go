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

// A task deleted and defined again later under the same name, with Created
// set to its new definition's time (as sqlstore's Definitions set it),
// owes no slot from before its new definition, though the records of its
// former one remain: under run-all it caught up every slot of the time it
// did not exist.
func TestRedefinedTaskOwesNothingFromBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var dues []time.Time
		h := func(_ context.Context, _ string, r schedule.Run) error {
			mu.Lock()
			dues = append(dues, r.Due)
			mu.Unlock()
			return nil
		}
		store := schedule.NewMemoryStore(100)
		tab := cron.NewTable(map[string]cron.Handler{"h": h}, cron.WithStore(store), cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		ctx := context.Background()
		d := task("t", "h", "* * * * *")
		d.Misfire = "run-all"
		d.Created = time.Now()
		_, err := tab.Apply(ctx, []cron.Task{d})
		require.NoError(t, err)
		time.Sleep(150 * time.Second) // runs the slots at 1m and 2m
		_, err = tab.Apply(ctx, nil)  // deleted
		require.NoError(t, err)
		time.Sleep(10 * time.Minute)
		d.Created = time.Now() // defined again, at 12m30s
		redefined := d.Created
		_, err = tab.Apply(ctx, []cron.Task{d})
		require.NoError(t, err)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		var before []time.Time
		for _, due := range dues {
			if due.Before(redefined) && due.After(redefined.Add(-10*time.Minute)) {
				before = append(before, due)
			}
		}
		assert.Empty(t, before, "slots run for the time the task was not defined")
	})
}

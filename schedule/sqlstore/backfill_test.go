package sqlstore_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// Two Jobs of one name on two Stores of one database backfill the same
// range at once: each slot runs once, its record has Reason Backfill, and
// a Backfill of the range again runs nothing.
func TestBackfillAcrossStores(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		stores, jobs, counts := backfillers(t, b)
		to := time.Now().Truncate(time.Hour)
		from := to.Add(-48 * time.Hour)
		var wg sync.WaitGroup
		ran := make([]int, len(jobs))
		for i, j := range jobs {
			wg.Go(func() {
				p, err := j.Backfill(ctx, from, to)
				assert.NoError(t, err)
				assert.Equal(t, 48, p.Slots)
				assert.Equal(t, 48, p.Done)
				ran[i] = p.Done - p.HadRecord
			})
		}
		wg.Wait()
		assert.Equal(t, 48, ran[0]+ran[1], "by node: %v", ran)
		runs := counts()
		assert.Len(t, runs, 48)
		for due, n := range runs {
			assert.Equal(t, 1, n, "slot %v", due)
		}
		p, err := jobs[1].Backfill(ctx, from, to)
		require.NoError(t, err)
		assert.Equal(t, 48, p.HadRecord, "a second time, every slot has its record")
		h, err := stores[0].History(ctx, "j", 100)
		require.NoError(t, err)
		backfilled := 0
		for _, r := range h {
			if r.Reason == schedule.Backfill {
				backfilled++
				assert.Equal(t, schedule.Succeeded, r.Status)
			}
		}
		assert.Equal(t, 48, backfilled)
		for _, j := range jobs {
			require.NoError(t, j.Stop(ctx))
		}
	})
}

// backfillers starts a Job "j", every hour, on each of two Stores of one
// database of b, which keep every record, and returns them with backfilled,
// which counts the backfilled runs of each slot so far.
func backfillers(t *testing.T, b backend) (stores []*sqlstore.Store, jobs []*schedule.Job, backfilled func() map[time.Time]int) {
	dsn := b.dsn(t)
	var mu sync.Mutex
	runs := map[time.Time]int{}
	work := func(ctx context.Context, r schedule.Run) error {
		if r.Reason != schedule.Backfill {
			return nil // a slot of the hour that fell due meanwhile
		}
		mu.Lock()
		runs[r.Due]++
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		return nil
	}
	stores = []*sqlstore.Store{newStore(t, b, dsn, sqlstore.WithHistory(100, 100)), newStore(t, b, dsn, sqlstore.WithHistory(100, 100))}
	for i, s := range stores {
		j := schedule.NewJob("j", schedule.Every(time.Hour), work, schedule.WithStore(s), schedule.WithNode(string(rune('a'+i))))
		require.NoError(t, j.Start(ctx))
		jobs = append(jobs, j)
	}
	return stores, jobs, func() map[time.Time]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(runs)
	}
}

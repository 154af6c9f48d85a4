package schedule_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// bulkStore is a MemoryStore that reads the last records of many jobs in
// one call, counts its calls, and fails them while down.
type bulkStore struct {
	*schedule.MemoryStore
	lastOf, last atomic.Int64
	down         atomic.Bool
}

func (s *bulkStore) LastOf(ctx context.Context, jobs []string) (map[string]schedule.Record, error) {
	s.lastOf.Add(1)
	if s.down.Load() {
		return nil, errDown
	}
	m := map[string]schedule.Record{}
	for _, j := range jobs {
		if r, err := s.MemoryStore.Last(ctx, j); err == nil {
			m[j] = r
		}
	}
	return m, nil
}

func (s *bulkStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	s.last.Add(1)
	if s.down.Load() {
		return schedule.Record{}, errDown
	}
	return s.MemoryStore.Last(ctx, job)
}

// StartAll reads the last records of the jobs on a LastReader in one call,
// and each job then does what Start does with its record: here each
// catches up its slots missed since (MisfireRunOnce). Should that call
// fail, each job starts as one whose Last failed, and gets its slots once
// the store answers.
func TestStartAll(t *testing.T) {
	for _, down := range []bool{false, true} {
		t.Run(fmt.Sprintf("down=%v", down), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &bulkStore{MemoryStore: schedule.NewMemoryStore(10)}
				var l journal
				var jobs []*schedule.Job
				for i := range 50 {
					name := fmt.Sprint("j", i)
					if i%2 == 0 { // the even ones ran at -10s; the odd ones never ran
						rec := schedule.Record{Job: name, Due: at(-10 * time.Second), Status: schedule.Running}
						require.NoError(t, store.Claim(context.Background(), rec))
					}
					jobs = append(jobs, schedule.NewJob(name, schedule.Every(10*time.Second), l.work(time.Second),
						schedule.WithStore(store), schedule.WithObserver(l.observe)))
				}
				time.Sleep(25 * time.Second) // 0s, 10s, 20s were missed
				store.down.Store(down)
				require.NoError(t, schedule.StartAll(context.Background(), append(jobs, nil)...))
				assert.EqualValues(t, 1, store.lastOf.Load(), "one call for fifty jobs")
				store.down.Store(false)
				time.Sleep(4 * time.Second) // 29s: a store down at the start answers again after 1s
				for _, j := range jobs {
					stop(t, j)
				}
				caught, missed := 0, 0
				for _, r := range l.recs() {
					switch {
					case r.Status == schedule.Succeeded && r.Reason == schedule.CatchUp:
						caught++
					case r.Status == schedule.Missed:
						missed++
					}
				}
				assert.Equal(t, 25, caught, "each job that ran before catches its latest missed slot up")
				assert.Equal(t, 50, missed, "and reports the two others Missed")
				if !down {
					assert.Zero(t, store.last.Load(), "no Last of its own")
				}
				assert.ErrorIs(t, schedule.StartAll(context.Background(), jobs[0]), schedule.ErrStopped)
			})
		})
	}
}

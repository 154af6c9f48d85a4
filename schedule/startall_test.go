package schedule_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
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

// failLastStore is a MemoryStore whose Last fails for the jobs of fail,
// and counts its calls.
type failLastStore struct {
	*schedule.MemoryStore
	fail  map[string]bool
	calls int
}

func (s *failLastStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	s.calls++
	if s.fail[job] {
		return schedule.Record{}, fmt.Errorf("reading %s: %w", job, errDown)
	}
	return s.MemoryStore.Last(ctx, job)
}

// LastOf reads the last records in one call of a LastReader, and with one
// Last a job from another Store, until one fails: it returns the records
// it read before, and the error, so that a store that is down costs one
// call. A job with no record is absent, not an error. It stops once its
// context is done.
func TestLastOf(t *testing.T) {
	ctx := context.Background()
	due := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	mem := schedule.NewMemoryStore(10)
	for _, job := range []string{"a", "b", "c"} {
		r := schedule.Record{Job: job, Due: due, Status: schedule.Running}
		require.NoError(t, mem.Claim(ctx, r))
		r.Status = schedule.Succeeded
		require.NoError(t, mem.Finish(ctx, r))
	}
	jobs := []string{"a", "b", "c", "none"}

	bulk := &bulkStore{MemoryStore: mem}
	m, err := schedule.LastOf(ctx, bulk, jobs)
	require.NoError(t, err)
	assert.Len(t, m, 3)
	assert.Equal(t, [2]int64{1, 0}, [2]int64{bulk.lastOf.Load(), bulk.last.Load()}, "calls of LastOf, of Last")
	bulk.down.Store(true)
	m, err = schedule.LastOf(ctx, bulk, jobs)
	assert.ErrorIs(t, err, errDown)
	assert.NotNil(t, m)
	assert.Empty(t, m)

	plain := &failLastStore{MemoryStore: mem}
	m, err = schedule.LastOf(ctx, plain, jobs)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, slices.Sorted(maps.Keys(m)), "none is absent")
	assert.Equal(t, due, m["c"].Due)
	assert.Equal(t, 4, plain.calls)
	plain.fail, plain.calls = map[string]bool{"b": true}, 0
	m, err = schedule.LastOf(ctx, plain, jobs)
	assert.ErrorIs(t, err, errDown)
	assert.ErrorContains(t, err, "reading b")
	assert.Equal(t, []string{"a"}, slices.Sorted(maps.Keys(m)))
	assert.Equal(t, 2, plain.calls)

	done, cancel := context.WithCancel(ctx)
	cancel()
	plain.calls = 0
	m, err = schedule.LastOf(done, plain, jobs)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, m)
	assert.Zero(t, plain.calls)
}

package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// history returns the store's records of job "j" as "due status reason"
// lines, oldest first.
func history(t *testing.T, s schedule.Store) []string {
	t.Helper()
	h, err := s.History(context.Background(), "j", 100)
	require.NoError(t, err)
	var lines []string
	for i := len(h) - 1; i >= 0; i-- {
		lines = append(lines, fmt.Sprintf("%s %s %s", since(h[i].Due), h[i].Status, h[i].Reason))
	}
	return lines
}

// A job that never ran, stopped before its first slot and started again
// after two slots passed, owes them by its Misfire policy: the store
// remembers since when it has been scheduled (SinceStore), and every
// slot's fate is in the store's history.
func TestNewJobStoppedBeforeItsFirstSlotOwesIt(t *testing.T) {
	for _, c := range []struct {
		m    schedule.Misfire
		want []string
	}{
		{schedule.MisfireRunOnce, []string{"30s Missed CatchUp", "1m0s Succeeded CatchUp", "1m30s Succeeded Scheduled"}},
		{schedule.MisfireRunAll, []string{"30s Succeeded CatchUp", "1m0s Succeeded CatchUp", "1m30s Succeeded Scheduled"}},
		{schedule.MisfireSkip, []string{"30s Missed CatchUp", "1m0s Missed CatchUp", "1m30s Succeeded Scheduled"}},
	} {
		t.Run(c.m.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := schedule.NewMemoryStore(100)
				var l journal
				job := func() *schedule.Job {
					return schedule.NewJob("j", schedule.Every(30*time.Second), l.work(time.Second),
						schedule.WithStore(store), schedule.WithMisfire(c.m), schedule.WithObserver(l.observe))
				}
				j := job()
				start(t, j)
				time.Sleep(10 * time.Second)
				stop(t, j) // before its first slot, at 30s: no record
				time.Sleep(65 * time.Second)
				j = job() // the process restarted at 75s
				start(t, j)
				time.Sleep(20 * time.Second)
				stop(t, j)
				assert.Equal(t, c.want, history(t, store))
			})
		})
	}
}

// storeOnly hides every interface of a Store but Store's.
type storeOnly struct{ s schedule.Store }

func (s storeOnly) Claim(ctx context.Context, r schedule.Record) error  { return s.s.Claim(ctx, r) }
func (s storeOnly) Finish(ctx context.Context, r schedule.Record) error { return s.s.Finish(ctx, r) }
func (s storeOnly) Last(ctx context.Context, job string) (schedule.Record, error) {
	return s.s.Last(ctx, job)
}
func (s storeOnly) History(ctx context.Context, job string, limit int) ([]schedule.Record, error) {
	return s.s.History(ctx, job, limit)
}

// A once task defined before its time, whose time passed while no process
// ran it, runs once at the start under MisfireRunOnce and MisfireRunAll,
// and is recorded Missed under MisfireSkip, on a store that is neither a
// SinceStore nor a NoteStore too: WithSince says since when it is due.
func TestOnceTaskDueWhileDown(t *testing.T) {
	for _, plain := range []bool{false, true} {
		for _, c := range []struct {
			m    schedule.Misfire
			want []string
		}{
			{schedule.MisfireRunOnce, []string{"1m0s Succeeded CatchUp"}},
			{schedule.MisfireRunAll, []string{"1m0s Succeeded CatchUp"}},
			{schedule.MisfireSkip, []string{"1m0s Missed CatchUp"}},
		} {
			t.Run(fmt.Sprintf("plain=%v/%s", plain, c.m), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					mem := schedule.NewMemoryStore(100)
					var store schedule.Store = mem
					if plain {
						store = storeOnly{mem}
					}
					time.Sleep(2 * time.Minute) // defined at 0s, due at 1m: the process was down
					var l journal
					j := schedule.NewJob("j", schedule.Once(at(time.Minute)), l.work(time.Second),
						schedule.WithStore(store), schedule.WithMisfire(c.m), schedule.WithSince(at(0)))
					start(t, j)
					time.Sleep(time.Minute)
					stop(t, j)
					assert.Equal(t, c.want, history(t, mem))
					assert.True(t, j.Next().IsZero())
				})
			})
		}
	}
}

// Without WithSince, on a Store that is not a SinceStore, a job with no
// record owes nothing: it cannot know since when it was scheduled.
func TestNoRecordNoSinceOwesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := schedule.NewMemoryStore(100)
		var l journal
		j := schedule.NewJob("j", schedule.Every(30*time.Second), l.work(time.Second),
			schedule.WithStore(storeOnly{mem}))
		time.Sleep(75 * time.Second)
		start(t, j)
		time.Sleep(20 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{"1m30s Succeeded Scheduled"}, history(t, mem))
	})
}

// The earliest time wins: a later Since does not move it, an earlier one
// does, and a WithSince earlier than the store's is taken.
func TestMemoryStoreSince(t *testing.T) {
	ctx := context.Background()
	s := schedule.NewMemoryStore(1)
	got, err := s.Since(ctx, "j", at(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, at(time.Hour), got)
	got, _ = s.Since(ctx, "j", at(2*time.Hour))
	assert.Equal(t, at(time.Hour), got)
	got, _ = s.Since(ctx, "j", at(time.Minute))
	assert.Equal(t, at(time.Minute), got)
	all, err := s.SinceOf(ctx, map[string]time.Time{"j": at(time.Hour), "k": at(time.Second)})
	require.NoError(t, err)
	assert.Equal(t, map[string]time.Time{"j": at(time.Minute), "k": at(time.Second)}, all)
}

// sinceCounter counts the calls of Since and SinceOf of a MemoryStore that
// is a LastReader too.
type sinceCounter struct {
	*schedule.MemoryStore
	mu             sync.Mutex
	since, sinceOf int
}

func (s *sinceCounter) Since(ctx context.Context, job string, t time.Time) (time.Time, error) {
	s.mu.Lock()
	s.since++
	s.mu.Unlock()
	return s.MemoryStore.Since(ctx, job, t)
}

func (s *sinceCounter) SinceOf(ctx context.Context, jobs map[string]time.Time) (map[string]time.Time, error) {
	s.mu.Lock()
	s.sinceOf++
	s.mu.Unlock()
	return s.MemoryStore.SinceOf(ctx, jobs)
}

func (s *sinceCounter) LastOf(ctx context.Context, jobs []string) (map[string]schedule.Record, error) {
	m := map[string]schedule.Record{}
	for _, j := range jobs {
		if r, err := s.Last(ctx, j); err == nil {
			m[j] = r
		}
	}
	return m, nil
}

// StartAll reads the times of the jobs that have no record in one SinceOf,
// and each such job owes its slots since then.
func TestStartAllReadsSinceInOneCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &sinceCounter{MemoryStore: schedule.NewMemoryStore(10)}
		var l journal
		mk := func() []*schedule.Job {
			var js []*schedule.Job
			for i := range 50 {
				js = append(js, schedule.NewJob(fmt.Sprint("j", i), schedule.Every(30*time.Second), l.work(time.Second),
					schedule.WithStore(store), schedule.WithObserver(l.observe)))
			}
			return js
		}
		js := mk()
		require.NoError(t, schedule.StartAll(context.Background(), js...))
		for _, j := range js {
			stop(t, j)
		}
		time.Sleep(45 * time.Second) // all down at 30s
		js = mk()
		require.NoError(t, schedule.StartAll(context.Background(), js...))
		time.Sleep(time.Second)
		for _, j := range js {
			stop(t, j)
		}
		store.mu.Lock()
		defer store.mu.Unlock()
		assert.Equal(t, 0, store.since)
		assert.Equal(t, 2, store.sinceOf)
		for i := range 50 {
			r, err := store.Last(context.Background(), fmt.Sprint("j", i))
			require.NoError(t, err)
			assert.Equal(t, at(30*time.Second), r.Due)
			assert.Equal(t, schedule.CatchUp, r.Reason)
		}
	})
}

// The Missed slots of a long gap reach the Observer, and the newest 16 of
// them the store; a slot with a record keeps it.
func TestMissedRecordsInTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		succeeded(t, store, at(0))
		ctx := context.Background()
		require.NoError(t, store.Claim(ctx, schedule.Record{Job: "j", Due: at(5 * time.Minute), Status: schedule.Failed}))
		time.Sleep(time.Hour + 30*time.Second)
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(time.Second),
			schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireSkip), schedule.WithObserver(l.observe))
		start(t, j)
		stop(t, j)
		assert.Len(t, l.recs(), 55, "every missed slot after the last record reaches the Observer")
		h := history(t, store)
		assert.Equal(t, "0s Succeeded Scheduled", h[0])
		assert.Equal(t, "5m0s Failed Scheduled", h[1], "a slot with a record keeps it")
		assert.Len(t, h, 2+16)
		assert.Equal(t, "1h0m0s Missed CatchUp", h[len(h)-1])
		assert.Equal(t, "45m0s Missed CatchUp", h[2])
	})
}

// noteUnsupported is a Store whose Note says, as a wrapper of a Store that
// is not a NoteStore does, that it cannot note.
type noteUnsupported struct{ storeOnly }

func (noteUnsupported) Note(context.Context, []schedule.Record) error {
	return fmt.Errorf("a wrapper: %w", errors.ErrUnsupported)
}

// A NoteStore whose Note returns errors.ErrUnsupported gets the Missed
// records one by one, as any other Store.
func TestNoteUnsupported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := schedule.NewMemoryStore(100)
		succeeded(t, mem, at(0))
		time.Sleep(3*time.Minute + 30*time.Second)
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(noteUnsupported{storeOnly{mem}}), schedule.WithMisfire(schedule.MisfireSkip))
		start(t, j)
		stop(t, j)
		assert.Equal(t, []string{"0s Succeeded Scheduled", "1m0s Missed CatchUp", "2m0s Missed CatchUp", "3m0s Missed CatchUp"},
			history(t, mem))
	})
}

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

// A slowStore is a MemoryStore whose Last waits, while held, until it is
// released, as a database does under load: a job's Start is then under
// way for as long as the test likes.
type slowStore struct {
	*schedule.MemoryStore
	entered chan struct{} // receives when a Last starts waiting

	mu      sync.Mutex
	release chan struct{} // nil unless held
}

func newSlowStore() *slowStore {
	return &slowStore{MemoryStore: schedule.NewMemoryStore(10), entered: make(chan struct{}, 100)}
}

// hold makes the calls of Last wait until release.
func (s *slowStore) hold() {
	s.mu.Lock()
	s.release = make(chan struct{})
	s.mu.Unlock()
}

func (s *slowStore) unhold() {
	s.mu.Lock()
	close(s.release)
	s.release = nil
	s.mu.Unlock()
}

func (s *slowStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	s.mu.Lock()
	release := s.release
	s.mu.Unlock()
	if release != nil {
		s.entered <- struct{}{}
		<-release
	}
	return s.MemoryStore.Last(ctx, job)
}

// An Apply whose new task is removed by a concurrent Apply, or stopped by
// Stop, while its job starts, reports no error: the task was applied,
// then removed or stopped.
func TestTableApplyRacingRemoveOrStop(t *testing.T) {
	for _, how := range []string{"remove", "stop"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l ledger
				st := newSlowStore()
				st.hold()
				tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)},
					cron.WithLocation(time.UTC), cron.WithStore(st))
				ctx := context.Background()
				var wg sync.WaitGroup
				var ch cron.Changes
				var err error
				wg.Go(func() { ch, err = tab.Apply(ctx, []cron.Task{task("t", "h", "* * * * * *")}) })
				<-st.entered // the job of "t" is starting: its Start reads the store
				switch how {
				case "remove":
					removed, err := tab.Apply(ctx, nil)
					require.NoError(t, err)
					assert.Equal(t, cron.Changes{Removed: []string{"t"}}, removed)
					synctest.Wait() // the removed job is stopped, its Start still under way
				case "stop":
					require.NoError(t, tab.Stop(ctx))
				}
				st.unhold()
				wg.Wait()
				assert.NoError(t, err)
				assert.Equal(t, cron.Changes{Added: []string{"t"}}, ch)
				time.Sleep(time.Minute)
				assert.Empty(t, l.of("t"))
				require.NoError(t, tab.Stop(ctx))
			})
		})
	}
}

// A task whose job is replaced (a new misfire policy here) before it has
// run at all, with no record in the store, does not lose the slots that
// fall due while the jobs change over: the new job applies its misfire
// policy to them, as it does to the slots after a record. The new job's
// Start reads the store from 0.5s to 2.3s: the slot of 1s is missed (more
// than the grace period of 1s late), that of 2s on time.
func TestTableReplacingAJobThatNeverRanLosesNoSlot(t *testing.T) {
	for _, c := range []struct {
		misfire string
		slot1   schedule.Status
	}{{"run-once", schedule.Missed}, {"run-all", schedule.Succeeded}, {"skip", schedule.Missed}} {
		t.Run(c.misfire, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l ledger
				var mu sync.Mutex
				var records []schedule.Record
				observe := func(r schedule.Record) {
					mu.Lock()
					records = append(records, r)
					mu.Unlock()
				}
				st := newSlowStore()
				tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC),
					cron.WithStore(st), cron.WithJobOptions(schedule.WithObserver(observe)))
				ctx := context.Background()
				t0 := time.Now().UTC()
				d := task("t", "h", "* * * * * *")
				d.Misfire = map[string]string{"run-once": "skip", "run-all": "run-once", "skip": "run-all"}[c.misfire] // another policy than c's
				time.Sleep(200 * time.Millisecond)
				_, err := tab.Apply(ctx, []cron.Task{d})
				require.NoError(t, err)
				time.Sleep(300 * time.Millisecond)
				st.hold()
				d.Misfire = c.misfire
				ch, err := tab.Apply(ctx, []cron.Task{d})
				require.NoError(t, err)
				require.Equal(t, cron.Changes{Changed: []string{"t"}}, ch)
				<-st.entered
				time.Sleep(1800 * time.Millisecond)
				st.unhold()
				time.Sleep(100 * time.Millisecond)
				require.NoError(t, tab.Stop(ctx))

				mu.Lock()
				defer mu.Unlock()
				got := map[int][]schedule.Status{}
				for _, r := range records {
					got[int(r.Due.Sub(t0)/time.Second)] = append(got[int(r.Due.Sub(t0)/time.Second)], r.Status)
				}
				assert.Equal(t, map[int][]schedule.Status{1: {c.slot1}, 2: {schedule.Succeeded}}, got)
			})
		})
	}
}

// A Handler may stop the Table with its own context: Stop cancels that
// context, so it returns at once, with its error, and the Table is
// stopped.
func TestTableHandlerStopsTheTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tab *cron.Table
		stopped := make(chan error, 1)
		h := func(ctx context.Context, _ string, r schedule.Run) error {
			stopped <- tab.Stop(ctx)
			return nil
		}
		tab = cron.NewTable(map[string]cron.Handler{"h": h}, cron.WithLocation(time.UTC))
		ctx := context.Background()
		_, err := tab.Apply(ctx, []cron.Task{task("a", "h", "* * * * * *"), task("b", "h", "*/7 * * * * *")})
		require.NoError(t, err)
		start := time.Now()
		assert.ErrorIs(t, <-stopped, context.Canceled)
		assert.Equal(t, start.Add(time.Second), time.Now())
		_, err = tab.Apply(ctx, nil)
		assert.ErrorIs(t, err, cron.ErrTableStopped)
		time.Sleep(time.Minute)
		assert.Empty(t, stopped, "no run after Stop")
		require.NoError(t, tab.Stop(ctx))
	})
}

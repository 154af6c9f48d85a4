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

// A slowStore is a MemoryStore whose Last waits until release is closed,
// as a database does under load: a job's Start is then under way for as
// long as the test likes.
type slowStore struct {
	*schedule.MemoryStore
	entered chan struct{} // receives when a Last starts waiting
	release chan struct{}
}

func newSlowStore() *slowStore {
	return &slowStore{MemoryStore: schedule.NewMemoryStore(10), entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (s *slowStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	s.entered <- struct{}{}
	<-s.release
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
				close(st.release)
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

package schedule_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// slowStore is a MemoryStore whose Last takes d.
type slowStore struct {
	*schedule.MemoryStore
	d time.Duration
}

func (s slowStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	time.Sleep(s.d)
	return s.MemoryStore.Last(ctx, job)
}

// Of two concurrent Starts, one starts the job and the other returns
// ErrStarted.
func TestConcurrentStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(0),
			schedule.WithStore(slowStore{schedule.NewMemoryStore(4), time.Second}), schedule.WithObserver(l.observe))
		var errs [2]error
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = j.Start(context.Background()) })
		}
		wg.Wait()
		if errs[0] != nil {
			errs[0], errs[1] = errs[1], errs[0]
		}
		assert.NoError(t, errs[0])
		assert.ErrorIs(t, errs[1], schedule.ErrStarted)
		time.Sleep(time.Hour)
		stop(t, j)
		assert.Len(t, l.recs(), 1)
	})
}

// A Start that Stop overtakes while it reads the store returns ErrStopped,
// and the job never runs.
func TestStopDuringStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(0),
			schedule.WithStore(slowStore{schedule.NewMemoryStore(4), time.Second}), schedule.WithObserver(l.observe))
		var err error
		var wg sync.WaitGroup
		wg.Go(func() { err = j.Start(context.Background()) })
		time.Sleep(time.Millisecond)
		stop(t, j)
		wg.Wait()
		require.ErrorIs(t, err, schedule.ErrStopped)
		assert.True(t, j.Next().IsZero())
		j.RunNow()
		time.Sleep(time.Hour)
		stop(t, j)
		assert.Empty(t, l.recs())
		assert.ErrorIs(t, j.Start(context.Background()), schedule.ErrStopped)
	})
}

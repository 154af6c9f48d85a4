package schedule_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// Under every overlap policy but OverlapAllow, the records of runs reach
// the Observer one at a time, in the order of the runs, even when the
// Observer is slow and the next run ends before it returns.
func TestRunRecordsReachTheObserverInOrder(t *testing.T) {
	for _, o := range []schedule.Overlap{schedule.OverlapSkip, schedule.OverlapBufferOne, schedule.OverlapReplace} {
		t.Run(o.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				in, most := 0, 0
				var order []time.Duration
				obs := func(r schedule.Record) {
					if r.Status != schedule.Succeeded {
						return // the Skipped records of slots that fall due meanwhile
					}
					mu.Lock()
					in++
					most = max(most, in)
					first := len(order) == 0
					mu.Unlock()
					if first {
						time.Sleep(1500 * time.Millisecond) // a slow Observer: a log shipper, a metrics push
					}
					mu.Lock()
					in--
					order = append(order, r.Due.Sub(t0))
					mu.Unlock()
				}
				j := schedule.NewJob("j", schedule.Every(time.Second), func(context.Context, schedule.Run) error {
					time.Sleep(100 * time.Millisecond)
					return nil
				}, schedule.WithOverlap(o), schedule.WithObserver(obs))
				start(t, j)
				time.Sleep(3500 * time.Millisecond)
				stop(t, j)
				mu.Lock()
				defer mu.Unlock()
				assert.Equal(t, 1, most, "Observer calls at once under %v", o)
				assert.IsIncreasing(t, order, "records reach the Observer in the order of their runs")
			})
		})
	}
}

// Stop waits for the Observer of the last run to return: a run's record
// reaches the Observer after the run stops counting as in flight, and the
// job is not quiet until it has.
func TestStopWaitsForTheObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		returned := false
		j := schedule.NewJob("j", schedule.Every(time.Second), func(context.Context, schedule.Run) error { return nil },
			schedule.WithObserver(func(schedule.Record) {
				time.Sleep(time.Minute)
				mu.Lock()
				returned = true
				mu.Unlock()
			}))
		start(t, j)
		time.Sleep(time.Second) // the run of 1s has ended; its Observer sleeps
		synctest.Wait()
		j.Pause()
		stop(t, j)
		mu.Lock()
		defer mu.Unlock()
		assert.True(t, returned, "Stop returned while the Observer ran")
	})
}

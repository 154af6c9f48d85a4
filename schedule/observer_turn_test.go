package schedule_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// A catch-up run's record waits for its turn: it reaches the Observer
// after the records of the runs that ended before it, one at a time.
func TestCatchUpRecordWaitsForItsTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		in, most := 0, 0
		var order []string
		obs := func(r schedule.Record) {
			if r.Status == schedule.Skipped || r.Status == schedule.Missed {
				return
			}
			mu.Lock()
			in++
			most = max(most, in)
			order = append(order, r.Reason.String()+"@"+r.Due.Sub(t0).String())
			mu.Unlock()
			if r.Reason == schedule.Manual {
				time.Sleep(20 * time.Second) // a slow Observer
			}
			mu.Lock()
			in--
			mu.Unlock()
		}
		store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(100)}
		j := schedule.NewJob("j", schedule.Every(10*time.Second), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithClaimRetry(0),
			schedule.WithObserver(obs))
		start(t, j)
		store.set(func(s *scriptedStore) { s.claimsDown = true })
		time.Sleep(11 * time.Second) // the claim of 10s failed: owed
		store.set(func(s *scriptedStore) { s.claimsDown = false })
		j.RunNow()                   // 11s: ends at once; its record's Observer call lasts 20s
		time.Sleep(15 * time.Second) // 26s: the slot of 20s caught 10s up first
		stop(t, j)
		mu.Lock()
		defer mu.Unlock()
		t.Log(order)
		assert.Equal(t, 1, most, "records of runs reached the Observer at once")
	})
}

// An Observer that calls runtime.Goexit on the record of an attempt to be
// retried gives up the attempt's lease: after Stop it is no longer
// renewed, and the slot can be taken over.
func TestObserverGoexitOnARetryStopsRenewing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newLeaseStore(9 * time.Second)
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error {
			return errors.New("boom")
		}, schedule.WithStore(store), schedule.WithNode("n"), schedule.WithRetry(3, 5*time.Second),
			schedule.WithObserver(func(r schedule.Record) {
				if r.Status == schedule.Failed && r.Attempt == 1 {
					runtime.Goexit()
				}
			}))
		assert.Empty(t, renewalsAfterStop(t, store, j), "renewals of the 1m slot's lease after Stop")
	})
}

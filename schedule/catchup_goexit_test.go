package schedule_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// An Observer that calls runtime.Goexit on the record of a catch-up's
// attempt to be retried gives up the attempt's lease, as for the runner's
// own runs: after Stop it is no longer renewed.
func TestObserverGoexitOnACatchUpRetryStopsRenewing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &downLeaseStore{leaseStore: newLeaseStore(9 * time.Second)}
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(_ context.Context, r schedule.Run) error {
			if r.Reason == schedule.CatchUp {
				return errors.New("boom")
			}
			return nil
		}, schedule.WithStore(store), schedule.WithNode("n"), schedule.WithRetry(3, 5*time.Second),
			schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithClaimRetry(0),
			schedule.WithObserver(func(r schedule.Record) {
				if r.Reason == schedule.CatchUp && r.Status == schedule.Failed && r.Attempt == 1 {
					runtime.Goexit()
				}
			}))
		start(t, j)
		store.down.Store(true)
		time.Sleep(65 * time.Second) // the claim of 1m failed: owed
		store.down.Store(false)
		time.Sleep(60 * time.Second) // 2m: catches 1m up, whose first attempt fails
		stop(t, j)
		assert.Empty(t, renewalsAfter(store.leaseStore), "renewals of the catch-up's lease after Stop")
	})
}

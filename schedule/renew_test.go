package schedule_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// A run that ends just before, at or just after its first renewal is due
// (a third of the lease) ends its renewal either way: no Renew after its
// record, and nothing left running once the job stops.
func TestRunEndsAsItsFirstRenewalIsDue(t *testing.T) {
	const lease = 9 * time.Second
	for _, d := range []time.Duration{lease/3 - time.Nanosecond, lease / 3, lease/3 + time.Nanosecond} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := newLeaseStore(lease)
				var l journal
				j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(d),
					schedule.WithStore(store), schedule.WithNode("n"), schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(time.Hour + time.Minute)
				stop(t, j)
				require.Len(t, l.recs(), 1)
				rec := l.recs()[0]
				assert.Equal(t, schedule.Succeeded, rec.Status)
				store.mu.Lock()
				defer store.mu.Unlock()
				for _, at := range store.renewed {
					assert.False(t, t0.Add(at).After(rec.End), "a Renew at %v, after the run's end", at)
				}
				if d > lease/3 {
					assert.Len(t, store.renewed, 1, "renewed once, as the run went on")
				}
			})
		})
	}
}

// An attempt retried before the first renewal of the slot's lease was due
// keeps it renewed: an attempt that runs for many leases is not cut short.
func TestRetryBeforeTheFirstRenewalRenews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &retryLeaseStore{leaseStore: newLeaseStore(9 * time.Second)}
		var l journal
		n := 0
		long := func(ctx context.Context, r schedule.Run) error {
			n++
			if n == 1 {
				time.Sleep(time.Second)
				return fmt.Errorf("attempt %d failed", n)
			}
			select {
			case <-time.After(time.Minute + time.Second): // ends between two renewals
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		j := schedule.NewJob("j", schedule.Every(time.Hour), long,
			schedule.WithRetry(2, time.Second), schedule.WithStore(store), schedule.WithNode("n"),
			schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(time.Hour + 2*time.Minute)
		stop(t, j)
		assert.Equal(t, []string{
			"1h0m0s Failed Scheduled 1h0m0s-1h0m1s",
			"1h0m0s Succeeded Scheduled 1h0m2s-1h1m3s",
		}, l.summary())
		store.mu.Lock()
		defer store.mu.Unlock()
		require.NotEmpty(t, store.renews)
		assert.Equal(t, time.Hour+5*time.Second, store.renews[0].at, "a third of a lease after the retry's claim")
		assert.Len(t, store.renews, 20, "every third of a lease through the attempt: %v", store.renews)
	})
}

// A renewal whose first timer fired as its run was ending, and whose
// callback took the renewal's lock only once the run had ended, sends no
// Renew and leaves nothing running.
func TestRenewalBeginsAfterItsRunEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 9 * time.Second
		store := newLeaseStore(lease)
		began, release := make(chan struct{}, 1), make(chan struct{})
		schedule.SetBeginHook(func() {
			began <- struct{}{}
			<-release
		})
		defer schedule.SetBeginHook(nil)
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(lease/3+time.Second),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(time.Hour + lease/3)
		<-began // the first timer fired, a second before the run ends
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Len(t, l.recs(), 1, "the run ended")
		close(release)
		synctest.Wait()
		stop(t, j)
		store.mu.Lock()
		defer store.mu.Unlock()
		assert.Empty(t, store.renewed, "no Renew once the run ended")
	})
}

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

// countingLeaseStore is a leaseStore that counts its looks for expired
// claims: Expired calls, and Reclaim calls that find none.
type countingLeaseStore struct {
	*leaseStore
	expired, reclaims atomic.Int64
}

func (s *countingLeaseStore) Expired(ctx context.Context, limit int) ([]string, error) {
	s.expired.Add(1)
	return s.leaseStore.Expired(ctx, limit)
}

func (s *countingLeaseStore) Reclaim(ctx context.Context, job, node string, c schedule.Concurrency) (schedule.Record, error) {
	s.reclaims.Add(1)
	return s.leaseStore.Reclaim(ctx, job, node, c)
}

// A thousand idle jobs on a SharedStore share one look for claims to take
// over: four calls of Expired a lease, whatever the number of jobs, and no
// Reclaim while none expired.
func TestIdleJobsShareOneLookForExpiredClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &countingLeaseStore{leaseStore: newLeaseStore(20 * time.Second)}
		const jobs = 1000
		var js []*schedule.Job
		for i := range jobs {
			j := schedule.NewJob(fmt.Sprint("j", i), schedule.Every(time.Second), func(context.Context, schedule.Run) error { return nil },
				schedule.WithStore(c))
			start(t, j)
			js = append(js, j)
		}
		time.Sleep(time.Minute) // three leases; every job ran 60 slots
		synctest.Wait()
		assert.LessOrEqual(t, c.expired.Load(), int64(3*4+2), "Expired calls")
		assert.Zero(t, c.reclaims.Load(), "Reclaim calls")
		for _, j := range js {
			stop(t, j)
		}
	})
}

// A job whose schedule has ended (a Once job after its slot) still takes
// over the expired claims of its name: a replica that died holding the
// claim of the one slot of a job, one of a herd, leaves it to the others,
// whose jobs have no slot left.
func TestEndedJobTakesOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newLeaseStore(9 * time.Second)
		dead := schedule.Record{Job: "j", Due: at(time.Minute), Status: schedule.Running, Node: "dead", Attempt: 1}
		time.Sleep(time.Minute)
		require.NoError(t, store.Claim(context.Background(), dead)) // the dead replica's claim of the slot
		var l journal
		j := schedule.NewJob("j", schedule.Once(at(time.Minute)), l.work(time.Second),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithObserver(l.observe))
		start(t, j) // the slot is claimed: this replica's job has nothing left to run
		time.Sleep(time.Minute)
		stop(t, j)
		assert.Equal(t, []string{"1m0s Succeeded Recovered 1m11.25s-1m12.25s"}, l.summary())
		assert.Zero(t, j.Next())
	})
}

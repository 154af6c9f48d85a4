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

// leaseStore is a LeaseStore in memory: each running record holds a lease
// until a time on the clock, which Claim and Renew set to now + lease.
type leaseStore struct {
	*schedule.MemoryStore
	lease time.Duration

	mu      sync.Mutex
	leases  map[time.Time]lease // by Due (one job)
	renewed []time.Duration     // when Renew was called, since t0
}

type lease struct {
	node  string
	until time.Time
}

func newLeaseStore(d time.Duration) *leaseStore {
	return &leaseStore{MemoryStore: schedule.NewMemoryStore(100), lease: d, leases: map[time.Time]lease{}}
}

func (s *leaseStore) Lease() time.Duration { return s.lease }

func (s *leaseStore) Claim(ctx context.Context, r schedule.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.MemoryStore.Claim(ctx, r); err != nil {
		return err
	}
	s.leases[r.Due] = lease{r.Node, time.Now().Add(s.lease)}
	return nil
}

func (s *leaseStore) Renew(_ context.Context, r schedule.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewed = append(s.renewed, time.Since(t0))
	l := s.leases[r.Due]
	if l.node != r.Node || time.Now().After(l.until) {
		return schedule.ErrLeaseLost
	}
	s.leases[r.Due] = lease{r.Node, time.Now().Add(s.lease)}
	return nil
}

func (s *leaseStore) Finish(ctx context.Context, r schedule.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.leases[r.Due]; l.node != r.Node {
		return schedule.ErrLeaseLost
	}
	delete(s.leases, r.Due)
	return s.MemoryStore.Finish(ctx, r)
}

func (s *leaseStore) Reclaim(ctx context.Context, job, node string) (schedule.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := s.MemoryStore.History(ctx, job, 100)
	if err != nil {
		return schedule.Record{}, err
	}
	for i := len(h) - 1; i >= 0; i-- {
		r := h[i]
		l, ok := s.leases[r.Due]
		if r.Status != schedule.Running || !ok || !time.Now().After(l.until) {
			continue
		}
		r.Node, r.Attempt = node, r.Attempt+1
		s.leases[r.Due] = lease{node, time.Now().Add(s.lease)}
		if err := s.MemoryStore.Finish(ctx, r); err != nil {
			return schedule.Record{}, err
		}
		return r, nil
	}
	return schedule.Record{}, schedule.ErrNoRecord
}

// steal gives the lease of the slot due at due to another node.
func (s *leaseStore) steal(due time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leases[due] = lease{"thief", time.Now().Add(s.lease)}
}

// A run in flight renews its lease every Lease()/3, and no renewal
// follows its end.
func TestLeaseRenewedWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := newLeaseStore(9 * time.Second)
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(20*time.Second),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(90 * time.Second)
		stop(t, j)
		store.mu.Lock()
		defer store.mu.Unlock()
		var s []string
		for _, d := range store.renewed {
			s = append(s, d.String())
		}
		assert.Equal(t, []string{"1m3s", "1m6s", "1m9s", "1m12s", "1m15s", "1m18s"}, s)
		assert.Equal(t, []string{"1m0s Succeeded Scheduled 1m0s-1m20s"}, l.summary())
	})
}

// Renew returning ErrLeaseLost cancels the run's context.
func TestLeaseLostCancelsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := newLeaseStore(9 * time.Second)
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(20*time.Second),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(64 * time.Second)
		store.steal(at(time.Minute)) // the thief's lease runs until 1m13s
		time.Sleep(6 * time.Second)
		stop(t, j)
		r := l.recs()
		require.Len(t, r, 1)
		assert.Equal(t, schedule.Canceled, r[0].Status)
		assert.Equal(t, at(66*time.Second), r[0].End, "cancelled by the renewal at 1m6s")
		assert.Equal(t, "schedule: lease lost: schedule: finish: schedule: lease lost", r[0].Err)
	})
}

// A claim whose node died (its lease expired) is taken over by the job,
// at its Start and every Lease(), and run with Reason Recovered.
func TestReclaimRunsExpiredClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := newLeaseStore(9 * time.Second)
		dead := schedule.Record{Job: "j", Due: at(-time.Minute), Status: schedule.Running, Node: "dead", Attempt: 1}
		require.NoError(t, store.Claim(context.Background(), dead))
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Second),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithObserver(l.observe))
		time.Sleep(5 * time.Second) // the lease of the dead node runs until 9s
		start(t, j)
		time.Sleep(30 * time.Second)
		stop(t, j)
		var r []schedule.Record
		for _, rec := range l.recs() {
			if rec.Reason == schedule.Recovered {
				r = append(r, rec)
			}
		}
		require.Len(t, r, 1)
		assert.Equal(t, schedule.Record{Job: "j", Due: at(-time.Minute), Reason: schedule.Recovered, Status: schedule.Succeeded,
			Start: at(14 * time.Second), End: at(15 * time.Second), Node: "n", Attempt: 2}, r[0],
			"found by the look at Start+Lease()")
		h, err := store.History(context.Background(), "j", 10)
		require.NoError(t, err)
		assert.Equal(t, r[0], h[len(h)-1])
	})
}

// A LeaseStore job holds no timer after its schedule ends.
func TestLeaseJobEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sched countingScheduler
		store := newLeaseStore(9 * time.Second)
		j := schedule.NewJob("j", schedule.Once(at(time.Minute)), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(store), schedule.WithScheduler(&sched))
		start(t, j)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		assert.Zero(t, sched.Pending())
		stop(t, j)
	})
}

// A claim reclaimed at a slot while a run is in flight goes through the
// overlap policy: OverlapSkip drops it, and its record is finished as
// Skipped in the store, so that it is not taken over again and again.
func TestReclaimedRunUnderTheOverlapPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := newLeaseStore(9 * time.Second)
		dead := schedule.Record{Job: "j", Due: at(-time.Minute), Status: schedule.Running, Node: "dead", Attempt: 1}
		require.NoError(t, store.Claim(context.Background(), dead)) // its lease runs until 9s
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(25*time.Second),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithMisfire(schedule.MisfireSkip),
			schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(30 * time.Second)
		stop(t, j)
		var recovered []schedule.Record
		for _, r := range l.recs() {
			if r.Reason == schedule.Recovered {
				recovered = append(recovered, r)
			}
		}
		require.Len(t, recovered, 1)
		assert.Equal(t, schedule.Skipped, recovered[0].Status)
		assert.Equal(t, 2, recovered[0].Attempt)
		h, err := store.History(context.Background(), "j", 10)
		require.NoError(t, err)
		last := h[len(h)-1]
		assert.Equal(t, at(-time.Minute), last.Due)
		assert.Equal(t, schedule.Skipped, last.Status, "finished in the store")
		assert.Equal(t, "n", last.Node)
	})
}

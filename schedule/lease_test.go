package schedule_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// leaseStore is a SharedStore in memory with leases: each running record
// holds a lease until a time on the clock, which ClaimRun and Renew set to
// now + lease.
type leaseStore struct {
	*schedule.MemoryStore
	lease time.Duration

	mu        sync.Mutex
	leases    map[time.Time]lease    // by Due (one job)
	renewed   []time.Duration        // when Renew was called, since t0
	renewDown bool                   // Renew fails with errDown
	renewHang bool                   // Renew waits until its context is done
	slow      time.Duration          // the next Reclaim that takes a claim over returns this much later
	slowClaim time.Duration          // Claim takes this long before it claims
	takenFrom map[time.Time][]string // by Due: the node of each lease that expired and was taken over
	asked     map[time.Time]bool     // by Due: the runs a ClaimRun with Replace asked to end
}

type lease struct {
	node     string
	until    time.Time
	rec      schedule.Record // as claimed or reclaimed
	released bool
}

func newLeaseStore(d time.Duration) *leaseStore { return newLeaseStoreKeep(d, 100) }

func newLeaseStoreKeep(d time.Duration, keep int) *leaseStore {
	return &leaseStore{MemoryStore: schedule.NewMemoryStore(keep), lease: d, leases: map[time.Time]lease{}}
}

func (s *leaseStore) Lease() time.Duration { return s.lease }

func (s *leaseStore) Claim(ctx context.Context, r schedule.Record) error {
	_, err := s.ClaimRun(ctx, r, schedule.Concurrency{})
	return err
}

func (s *leaseStore) ClaimRun(ctx context.Context, r schedule.Record, c schedule.Concurrency) (time.Time, error) {
	sent := time.Now()
	s.mu.Lock()
	slow := s.slowClaim
	s.mu.Unlock()
	time.Sleep(slow) // the statement was sent, and waits
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.MemoryStore.Last(ctx, r.Job); err == nil {
		if h, _ := s.MemoryStore.History(ctx, r.Job, 1000); slices.ContainsFunc(h, func(x schedule.Record) bool { return x.Due.Equal(r.Due) }) {
			return time.Time{}, schedule.ErrClaimed
		}
	}
	if c.Max > 0 && r.Status == schedule.Running {
		var live []time.Time // in flight, or released and waiting to be taken over
		for due, l := range s.leases {
			if l.rec.Job == r.Job && (!time.Now().After(l.until) || l.released) {
				live = append(live, due)
			}
		}
		if len(live) >= c.Max {
			for _, due := range live {
				if l := s.leases[due]; c.Replace && l.rec.Reason != schedule.Recovered && !time.Now().After(l.until) {
					if s.asked == nil {
						s.asked = map[time.Time]bool{}
					}
					s.asked[due] = true
				}
			}
			return time.Time{}, schedule.ErrBusy
		}
	}
	if err := s.MemoryStore.Claim(ctx, r); err != nil {
		return time.Time{}, err
	}
	if r.Status == schedule.Running {
		s.leases[r.Due] = lease{node: r.Node, until: time.Now().Add(s.lease), rec: r}
	}
	return sent, nil
}

func (s *leaseStore) Renew(ctx context.Context, r schedule.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewed = append(s.renewed, time.Since(t0))
	if s.renewHang {
		s.mu.Unlock()
		<-ctx.Done()
		s.mu.Lock()
		return ctx.Err()
	}
	if s.renewDown {
		return errDown
	}
	l, ok := s.leases[r.Due]
	if !ok || l.node != r.Node || time.Now().After(l.until) {
		return schedule.ErrLeaseLost
	}
	l.until = time.Now().Add(s.lease)
	s.leases[r.Due] = l
	if s.asked[r.Due] {
		return schedule.ErrReplaced
	}
	return nil
}

func (s *leaseStore) Finish(ctx context.Context, r schedule.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.leases[r.Due]; ok && l.node != r.Node {
		return schedule.ErrLeaseLost
	}
	delete(s.leases, r.Due)
	delete(s.asked, r.Due)
	return s.MemoryStore.Finish(ctx, r)
}

// Release ends the lease of r at once, for Reclaim to take it over.
func (s *leaseStore) Release(ctx context.Context, r schedule.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.leases[r.Due]
	if !ok || l.node != r.Node {
		return schedule.ErrLeaseLost
	}
	l.until, l.released = time.Time{}, true
	s.leases[r.Due] = l
	return s.MemoryStore.Finish(ctx, r)
}

// Expired lists the jobs with an expired claim: the jobs on the store share
// one look for them, every Lease()/4.
func (s *leaseStore) Expired(ctx context.Context, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var names []string
	for _, l := range s.leases {
		if time.Now().After(l.until) && !seen[l.rec.Job] && len(names) < limit {
			seen[l.rec.Job] = true
			names = append(names, l.rec.Job)
		}
	}
	return names, nil
}

func (s *leaseStore) Reclaim(ctx context.Context, job, node string, c schedule.Concurrency) (schedule.Record, error) {
	r, err := s.reclaim(ctx, job, node, c)
	s.mu.Lock()
	slow := s.slow
	if err == nil {
		s.slow = 0
	}
	s.mu.Unlock()
	if err == nil && slow > 0 {
		time.Sleep(slow) // the answer is slow to come back
	}
	return r, err
}

func (s *leaseStore) reclaim(ctx context.Context, job, node string, c schedule.Concurrency) (schedule.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest *lease
	live := 0
	for _, l := range s.leases {
		if l.rec.Job != job {
			continue
		}
		if !time.Now().After(l.until) {
			live++
		} else if oldest == nil || l.rec.Due.Before(oldest.rec.Due) {
			oldest = &l
		}
	}
	if oldest == nil {
		return schedule.Record{}, schedule.ErrNoRecord
	}
	if c.Max > 0 && live >= c.Max {
		return schedule.Record{}, schedule.ErrBusy
	}
	r := oldest.rec
	if s.takenFrom == nil {
		s.takenFrom = map[time.Time][]string{}
	}
	s.takenFrom[r.Due] = append(s.takenFrom[r.Due], oldest.node)
	r.Node, r.Attempt, r.Status, r.Reason = node, r.Attempt+1, schedule.Running, schedule.Recovered
	s.leases[r.Due] = lease{node: node, until: time.Now().Add(s.lease), rec: r}
	if err := s.MemoryStore.Finish(ctx, r); err != nil {
		return schedule.Record{}, err
	}
	return r, nil
}

// steal gives the lease of the slot due at due to another node.
func (s *leaseStore) steal(due time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.leases[due]
	s.leases[due] = lease{node: "thief", until: time.Now().Add(s.lease), rec: l.rec}
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
// which looks at its Start, when it is free, and every Lease(), and run
// with Reason Recovered. The job's Start also owes its first slot, at 0s,
// missed while it was down: its catch-up's claim finds the dead node's
// run in flight and waits for it, in growing pauses; a run that waits so
// is not in flight here, and the takeover does not wait for it. The
// catch-up runs once the run taken over has ended.
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
		assert.Equal(t, []string{"-1m0s Succeeded Recovered 9.5s-10.5s", "0s Succeeded CatchUp 10.55s-11.55s"}, l.summary(),
			"the store's look finds the expired claim at 9.5s; the catch-up's claim, made again at 5.05s, 5.15s, 5.35s, 5.75s, 6.55s, 7.55s, 8.55s, 9.55s and 10.55s, finds the job free once the run taken over has ended")
		var r []schedule.Record
		for _, rec := range l.recs() {
			if rec.Reason == schedule.Recovered {
				r = append(r, rec)
			}
		}
		require.Len(t, r, 1)
		assert.Equal(t, schedule.Record{Job: "j", Due: at(-time.Minute), Reason: schedule.Recovered, Status: schedule.Succeeded,
			Start: at(9500 * time.Millisecond), End: at(10500 * time.Millisecond), Node: "n", Attempt: 2}, r[0])
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

// A run whose lease could not be renewed for a full Lease() since the
// last renewal is cancelled then, whether Renew fails or hangs: another
// node may take the slot over. Its outcome is not written to the store,
// so that the claim expires and the slot is run again, Recovered.
func TestLeaseNotRenewedCancelsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hang    bool
		renewed []string
		err     string
	}{
		{"fails", false, []string{"1m3s", "1m6s", "1m9s", "1m10.5s", "1m12s", "1m13.5s"},
			"schedule: lease could not be renewed for 9s: connection refused"},
		{"hangs", true, []string{"1m3s", "1m6s", "1m9s"},
			"schedule: lease could not be renewed for 9s: context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := newLeaseStore(9 * time.Second)
				var cause error
				work := l.work(time.Minute)
				j := schedule.NewJob("j", schedule.Every(time.Minute), func(ctx context.Context, r schedule.Run) error {
					err := work(ctx, r)
					cause = context.Cause(ctx)
					return err
				}, schedule.WithStore(store), schedule.WithNode("n"), schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(67 * time.Second) // renewed at 1m3s and 1m6s: the lease runs until 1m15s
				store.mu.Lock()
				store.renewDown, store.renewHang = true, tc.hang
				store.mu.Unlock()
				time.Sleep(9 * time.Second)
				stop(t, j)
				r := l.recs()
				require.Len(t, r, 1)
				assert.Equal(t, schedule.Canceled, r[0].Status)
				assert.Equal(t, at(75*time.Second), r[0].End, "a lease after the renewal at 1m6s")
				assert.Equal(t, tc.err, r[0].Err)
				assert.ErrorIs(t, cause, schedule.ErrLeaseNotRenewed)
				store.mu.Lock()
				var s []string
				for _, d := range store.renewed {
					s = append(s, d.String())
				}
				store.mu.Unlock()
				assert.Equal(t, tc.renewed, s)
				h, err := store.History(context.Background(), "j", 10)
				require.NoError(t, err)
				require.Len(t, h, 1)
				assert.Equal(t, schedule.Running, h[0].Status, "left for another node to take over")
			})
		})
	}
}

// A Claim that took most of a lease (the store's lease starts as it ends)
// is renewed before a lease has passed since the call, so that the run is
// not given up for want of a renewal never tried.
func TestSlowClaimIsRenewedInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := newLeaseStore(9 * time.Second)
		store.slowClaim = 8 * time.Second
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(20*time.Second),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(90 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{"1m0s Succeeded Scheduled 1m0s-1m28s"}, l.summary())
		store.mu.Lock()
		defer store.mu.Unlock()
		var s []string
		for _, d := range store.renewed {
			s = append(s, d.String())
		}
		assert.Equal(t, []string{"1m8.5s", "1m11.5s", "1m14.5s", "1m17.5s", "1m20.5s", "1m23.5s", "1m26.5s"}, s,
			"the claim was sent at 1m0s: the first renewal comes half-way to 1m9s")
	})
}

// A lease given up after the Func returned, before its outcome was
// recorded, decides the run's record: the slot is left to be taken over,
// and the Observer is not told it succeeded.
func TestLeaseGivenUpAfterTheFuncReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := newLeaseStore(9 * time.Second)
		schedule.SetReturnedHook(func() { time.Sleep(10 * time.Second) })
		defer schedule.SetReturnedHook(nil)
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(5*time.Second),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(61 * time.Second)
		store.mu.Lock()
		store.renewDown = true
		store.mu.Unlock()
		time.Sleep(20 * time.Second)
		stop(t, j)
		r := l.recs()
		require.NotEmpty(t, r)
		assert.Equal(t, schedule.Canceled, r[0].Status, r[0].Err)
		assert.ErrorContains(t, errors.New(r[0].Err), schedule.ErrLeaseNotRenewed.Error())
	})
}

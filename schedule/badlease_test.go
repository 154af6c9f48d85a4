package schedule_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// noLeaseStore is a SharedStore whose Lease is zero or negative, and which
// counts its Reclaim calls; past 10 of them, Reclaim blocks until release
// is closed, so that a job that spins stops spinning for the test to see.
type noLeaseStore struct {
	*schedule.MemoryStore
	lease    time.Duration
	reclaims atomic.Int64
	renews   atomic.Int64
	release  chan struct{}
}

func (s *noLeaseStore) Lease() time.Duration { return s.lease }

func (s *noLeaseStore) Renew(context.Context, schedule.Record) error {
	s.renews.Add(1)
	return nil
}

func (s *noLeaseStore) Reclaim(context.Context, string, string, schedule.Concurrency) (schedule.Record, error) {
	if s.reclaims.Add(1) > 10 {
		<-s.release
	}
	return schedule.Record{}, schedule.ErrNoRecord
}

// A store whose Lease is not positive has no lease to renew or expire: the
// job treats it as a plain Store and never spins looking for expired
// claims.
func TestLeaseNotPositive(t *testing.T) {
	for _, l := range []time.Duration{0, -time.Second} {
		t.Run(l.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &noLeaseStore{MemoryStore: schedule.NewMemoryStore(10), lease: l, release: make(chan struct{})}
				var runs atomic.Int64
				j := schedule.NewJob("j", schedule.Every(time.Second), func(context.Context, schedule.Run) error {
					runs.Add(1)
					time.Sleep(100 * time.Millisecond)
					return nil
				}, schedule.WithStore(s))
				start(t, j)
				time.Sleep(3500 * time.Millisecond)
				synctest.Wait()
				assert.LessOrEqual(t, s.reclaims.Load(), int64(0), "Reclaim calls in 3.5 s")
				assert.Zero(t, s.renews.Load(), "Renew calls")
				assert.EqualValues(t, 3, runs.Load())
				close(s.release)
				stop(t, j)
			})
		})
	}
}

// hungRenewStore is a LeaseStore whose Renew blocks, ignoring its
// context, until unblock is closed.
type hungRenewStore struct {
	*leaseStore
	unblock chan struct{}
	once    sync.Once
}

func (s *hungRenewStore) Renew(ctx context.Context, r schedule.Record) error {
	<-s.unblock
	return s.leaseStore.Renew(ctx, r)
}

// A Renew that hangs, deaf to its context, does not keep the run going
// past its lease: the run's context is cancelled with ErrLeaseNotRenewed
// one Lease() after the claim, whatever Renew does.
func TestHungRenewGivesTheRunUpOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &hungRenewStore{leaseStore: newLeaseStore(30 * time.Second), unblock: make(chan struct{})}
		var j journal
		var mu sync.Mutex
		var cancelled time.Duration
		var cause error
		job := schedule.NewJob("j", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
			<-ctx.Done()
			mu.Lock()
			if cause == nil { // the first run; the slot is then taken over, and given up again
				cancelled, cause = time.Since(t0), context.Cause(ctx)
			}
			mu.Unlock()
			return ctx.Err()
		}, schedule.WithStore(s), schedule.WithObserver(j.observe))
		start(t, job)
		defer func() {
			s.once.Do(func() { close(s.unblock) })
			stop(t, job)
		}()
		time.Sleep(time.Hour + time.Minute)
		synctest.Wait()
		mu.Lock()
		first, why := cancelled, cause
		mu.Unlock()
		assert.Equal(t, time.Hour+30*time.Second, first, "given up one lease after the claim")
		require.ErrorIs(t, why, schedule.ErrLeaseNotRenewed)
		recs := j.recs()
		require.NotEmpty(t, recs, "the Observer has the run given up while Renew still hangs")
		assert.Equal(t, schedule.Canceled, recs[0].Status)
		assert.Equal(t, time.Hour+30*time.Second, recs[0].End.Sub(t0))
		time.Sleep(5 * time.Minute)
	})
}

// slowFinishStore is a leaseStore whose Finish waits, as a Finish queued
// behind the calls of other jobs does, before it records the outcome.
type slowFinishStore struct {
	*leaseStore
	wait time.Duration
}

func (s *slowFinishStore) Finish(ctx context.Context, r schedule.Record) error {
	time.Sleep(s.wait)
	return s.leaseStore.Finish(ctx, r)
}

// A run's lease is renewed while its Finish waits: a Finish that took two
// leases to land let the lease expire, and another replica took the slot
// over and ran it again.
func TestLeaseRenewedWhileFinishWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &slowFinishStore{leaseStore: newLeaseStore(9 * time.Second), wait: 20 * time.Second}
		var mu sync.Mutex
		starts := map[time.Time]int{}
		f := func(ctx context.Context, r schedule.Run) error {
			mu.Lock()
			starts[r.Due]++
			mu.Unlock()
			time.Sleep(time.Second)
			return nil
		}
		var jobs []*schedule.Job
		for _, node := range []string{"a", "b"} {
			j := schedule.NewJob("j", schedule.Every(10*time.Second), f, schedule.WithStore(store), schedule.WithNode(node),
				schedule.WithOverlap(schedule.OverlapAllow))
			start(t, j)
			jobs = append(jobs, j)
		}
		time.Sleep(time.Minute)
		for _, j := range jobs {
			stop(t, j)
		}
		mu.Lock()
		defer mu.Unlock()
		for due, n := range starts {
			assert.Equal(t, 1, n, "slot %s ran %d times", since(due), n)
		}
		assert.NotEmpty(t, starts)
	})
}

// A run that ends within its lease while a Renew hangs, deaf to its
// context, records its outcome: the Finish is sent while the renewal goes
// on, not after it, and the slot runs once.
func TestHungRenewKeepsARunThatEndedInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		s := &hungRenewStore{leaseStore: newLeaseStore(9 * time.Second), unblock: make(chan struct{})}
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(4*time.Second), // 1m0s to 1m4s; first Renew at 1m3s hangs
			schedule.WithStore(s), schedule.WithObserver(l.observe), schedule.WithNode("n"))
		start(t, j)
		time.Sleep(80 * time.Second)
		s.once.Do(func() { close(s.unblock) })
		stop(t, j)
		assert.Equal(t, []string{"1m0s start Scheduled due 1m0s"}, l.starts(), "the slot of 1m0s runs once")
		r := l.recs()
		if assert.NotEmpty(t, r) {
			assert.Equal(t, schedule.Succeeded, r[0].Status, "the Func returned nil at 1m4s, the lease held until 1m9s: %s", r[0].Err)
		}
	})
}

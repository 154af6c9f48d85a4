package cron_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A downLease is a SharedStore whose Renew always fails, as in a database
// outage after the claim, and that has no expired claim to hand over. It
// counts no run in flight: a claim left running expires.
type downLease struct{ *schedule.MemoryStore }

func (downLease) Lease() time.Duration { return 300 * time.Millisecond }

func (l downLease) ClaimRun(ctx context.Context, r schedule.Record, _ schedule.Concurrency) (time.Time, error) {
	return l.MemoryStore.ClaimRun(ctx, r, schedule.Concurrency{})
}

func (downLease) Renew(context.Context, schedule.Record) error {
	return errors.New("connection refused")
}

func (downLease) Reclaim(context.Context, string, string, schedule.Concurrency) (schedule.Record, error) {
	return schedule.Record{}, schedule.ErrNoRecord
}

// A run that gives up its lease (schedule.ErrLeaseNotRenewed) leaves its
// claim unfinished, for another replica to take over. The Table must
// still count it as ended once its Handler returns: a task removed and
// added back then runs again, and Stop returns.
func TestTableRunThatGaveUpItsLeaseEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs, gaveUp atomic.Int32
		tab := cron.NewTable(map[string]cron.Handler{
			"h": func(ctx context.Context, _ string, r schedule.Run) error {
				runs.Add(1)
				<-ctx.Done()
				if errors.Is(context.Cause(ctx), schedule.ErrLeaseNotRenewed) {
					gaveUp.Add(1)
				}
				return ctx.Err()
			},
		}, cron.WithStore(downLease{schedule.NewMemoryStore(10)}), cron.WithLocation(time.UTC))
		ctx := context.Background()
		d := task("t", "h", "* * * * * *")
		_, err := tab.Apply(ctx, []cron.Task{d})
		require.NoError(t, err)
		time.Sleep(1500 * time.Millisecond) // the run of 1s gives up its lease at 1.3s
		synctest.Wait()
		require.Equal(t, int32(1), runs.Load())
		require.Equal(t, int32(1), gaveUp.Load())

		ch, err := tab.Apply(ctx, nil)
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Removed: []string{"t"}}, ch)
		time.Sleep(100 * time.Millisecond)
		ch, err = tab.Apply(ctx, []cron.Task{d})
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Added: []string{"t"}}, ch)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Greater(t, runs.Load(), int32(1), "the task added back never ran")
		next, ok := tab.Next("t")
		assert.True(t, ok)
		assert.False(t, next.IsZero(), "the task added back never started")

		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		require.NoError(t, tab.Stop(sctx))
	})
}

// A handoverLease is a SharedStore whose first Reclaim hands over an
// expired claim of another node only once the job has started a run: the
// job, busy, gives the claim back. It counts no run in flight.
type handoverLease struct {
	*schedule.MemoryStore
	busy   chan struct{} // closed by the first run
	handed atomic.Bool
}

func (*handoverLease) Lease() time.Duration { return time.Second }

func (*handoverLease) Renew(context.Context, schedule.Record) error { return nil }

func (l *handoverLease) ClaimRun(ctx context.Context, r schedule.Record, _ schedule.Concurrency) (time.Time, error) {
	return l.MemoryStore.ClaimRun(ctx, r, schedule.Concurrency{})
}

func (*handoverLease) Release(context.Context, schedule.Record) error { return nil }

func (l *handoverLease) Expired(context.Context, int) ([]string, error) {
	if l.handed.Load() {
		return nil, nil
	}
	return []string{"t"}, nil
}

func (l *handoverLease) Reclaim(ctx context.Context, job, node string, _ schedule.Concurrency) (schedule.Record, error) {
	if l.handed.Swap(true) {
		return schedule.Record{}, schedule.ErrNoRecord
	}
	select {
	case <-l.busy:
	case <-ctx.Done():
		return schedule.Record{}, ctx.Err()
	}
	return schedule.Record{Job: job, Due: time.Unix(0, 0), Reason: schedule.Scheduled, Status: schedule.Running,
		Start: time.Now(), Node: node, Attempt: 2}, nil
}

// A claim that a job takes over but does not run is no run in flight: the
// task removed and added back runs again, and Stop returns.
func TestTableClaimTakenOverButNotRunEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &handoverLease{MemoryStore: schedule.NewMemoryStore(10), busy: make(chan struct{})}
		var runs atomic.Int32
		tab := cron.NewTable(map[string]cron.Handler{
			"h": func(ctx context.Context, _ string, r schedule.Run) error {
				if runs.Add(1) == 1 {
					close(store.busy)
				}
				time.Sleep(100 * time.Millisecond)
				return nil
			},
		}, cron.WithStore(store), cron.WithLocation(time.UTC))
		ctx := context.Background()
		d := task("t", "h", "* * * * * *")
		_, err := tab.Apply(ctx, []cron.Task{d})
		require.NoError(t, err)
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		require.True(t, store.handed.Load())
		require.Equal(t, int32(1), runs.Load(), "the claim handed over while busy is not run")

		_, err = tab.Apply(ctx, nil)
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		_, err = tab.Apply(ctx, []cron.Task{d})
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Greater(t, runs.Load(), int32(1), "the task added back never ran")

		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		require.NoError(t, tab.Stop(sctx))
	})
}

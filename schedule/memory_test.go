package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// A job records its runs in a MemoryStore of its own the same way as in
// any other Store: the records a MemoryStore keeps, and those the Observer
// gets, are the same whether the job finds it behind the Store interface
// only (wrapped) or not. The runs succeed, fail, time out and panic, and
// the store drops old records as it goes; the last is stopped. With
// WithRetry, the same holds behind the SharedStore interface, and so do the
// records the Func finds in the store as each attempt starts.
func TestMemoryStoreRecordsAsAnyStore(t *testing.T) {
	type wrapped struct{ schedule.Store }
	type wrappedRetry struct{ schedule.SharedStore }
	history := func(wrap, retry bool) (h, seen, running []schedule.Record) {
		var old error
		var mu sync.Mutex // a Skipped record may come at the same time as a run's
		synctest.Test(t, func(t *testing.T) {
			mem := schedule.NewMemoryStore(3)
			var store schedule.Store = mem
			switch {
			case wrap && retry:
				store = wrappedRetry{mem}
			case wrap:
				store = wrapped{mem}
			}
			n := 0
			opts := []schedule.Option{schedule.WithStore(store), schedule.WithTimeout(5 * time.Second), schedule.WithNode("n"),
				schedule.WithObserver(func(r schedule.Record) {
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, r)
				})}
			if retry {
				opts = append(opts, schedule.WithRetry(2, time.Second))
			}
			j := schedule.NewJob("j", schedule.Every(10*time.Second), func(ctx context.Context, r schedule.Run) error {
				last, err := mem.Last(ctx, "j")
				require.NoError(t, err)
				running = append(running, last)
				n++
				switch n % 4 {
				case 1:
					return errors.New("failed")
				case 2:
					<-ctx.Done()
					return ctx.Err()
				case 3:
					panic("boom")
				}
				time.Sleep(time.Second)
				return nil
			}, opts...)
			start(t, j)
			time.Sleep(95 * time.Second)
			j.RunNow()
			if retry {
				time.Sleep(time.Second) // past the timeout of the slot at 90s, which the RunNow found in flight
			}
			time.Sleep(time.Second)
			stop(t, j)
			var err error
			h, err = mem.History(context.Background(), "j", 10)
			require.NoError(t, err)
			// The records of the early slots were dropped: a claim among
			// them cannot be told from a second claim of one of them.
			old = mem.Claim(context.Background(), schedule.Record{Job: "j", Due: at(15 * time.Second)})
		})
		assert.ErrorIs(t, old, schedule.ErrClaimed)
		return h, seen, running
	}
	t.Run("Store", func(t *testing.T) {
		direct, seenDirect, runningDirect := history(false, false)
		viaStore, seenViaStore, runningViaStore := history(true, false)
		require.Len(t, direct, 3)
		assert.Equal(t, viaStore, direct)
		assert.Equal(t, seenViaStore, seenDirect)
		assert.Equal(t, runningViaStore, runningDirect)
		assert.Equal(t, schedule.Record{Job: "j", Due: at(95 * time.Second), Reason: schedule.Manual, Status: schedule.Canceled,
			Start: at(95 * time.Second), End: at(96 * time.Second), Node: "n", Err: "schedule: job stopped: context canceled", Attempt: 1}, direct[0])
		assert.Equal(t, "failed", direct[1].Err)
		assert.Equal(t, schedule.Succeeded, direct[2].Status)
		var errs []string
		for _, r := range seenDirect[:4] {
			errs = append(errs, r.Err)
		}
		assert.Equal(t, []string{"failed", "schedule: run timed out after 5s: context deadline exceeded",
			"schedule: panic: boom", ""}, errs)
		assert.Equal(t, seenDirect[len(seenDirect)-1], direct[0])
	})
	t.Run("SharedStore", func(t *testing.T) {
		direct, seenDirect, runningDirect := history(false, true)
		viaStore, seenViaStore, runningViaStore := history(true, true)
		require.Len(t, direct, 3)
		assert.Equal(t, viaStore, direct)
		assert.Equal(t, seenViaStore, seenDirect)
		assert.Equal(t, runningViaStore, runningDirect)
		// Each slot fails, then times out (Failed, attempt 2), or panics,
		// then succeeds (attempt 2).
		var got []string
		for _, r := range seenDirect[:4] {
			got = append(got, fmt.Sprintf("%s %d %s %s", since(r.Due), r.Attempt, since(r.Start), r.Status))
		}
		assert.Equal(t, []string{"10s 1 10s Failed", "10s 2 11s Failed", "20s 1 20s Failed", "20s 2 21s Succeeded"}, got)
		assert.Equal(t, schedule.Record{Job: "j", Due: at(20 * time.Second), Reason: schedule.Scheduled, Status: schedule.Running,
			Start: at(21 * time.Second), Node: "n", Attempt: 2}, runningDirect[3], "the second attempt in progress")
		// The RunNow at 95s found the slot 90s in flight: its Skipped is
		// in the store too.
		assert.Equal(t, schedule.Record{Job: "j", Due: at(95 * time.Second), Reason: schedule.Manual, Status: schedule.Skipped,
			Node: "n", Err: "schedule: a run is in flight"}, direct[0])
		assert.Equal(t, schedule.Record{Job: "j", Due: at(80 * time.Second), Reason: schedule.Scheduled, Status: schedule.Succeeded,
			Start: at(81 * time.Second), End: at(82 * time.Second), Node: "n", Attempt: 2}, direct[2])
	})
}

// A MemoryStore's Retry claims the next attempt of its node's running
// record; a Finish of an earlier attempt is refused.
func TestMemoryStoreRetry(t *testing.T) {
	ctx := context.Background()
	mem := schedule.NewMemoryStore(3)
	r := schedule.Record{Job: "j", Due: t0, Status: schedule.Running, Start: t0, Node: "n", Attempt: 1}
	require.NoError(t, mem.Claim(ctx, r))
	failed := r
	failed.Status, failed.End, failed.Err = schedule.Failed, at(time.Second), "down"
	other := failed
	other.Node = "m"
	assert.ErrorIs(t, mem.Retry(ctx, other), schedule.ErrLeaseLost, "another node's claim")
	other = failed
	other.Attempt = 2
	assert.ErrorIs(t, mem.Retry(ctx, other), schedule.ErrLeaseLost, "another attempt")
	other = failed
	other.Due = at(time.Hour)
	assert.ErrorIs(t, mem.Retry(ctx, other), schedule.ErrNoRecord)
	require.NoError(t, mem.Retry(ctx, failed))
	last, err := mem.Last(ctx, "j")
	require.NoError(t, err)
	assert.Equal(t, schedule.Running, last.Status)
	assert.Equal(t, 2, last.Attempt)
	assert.Empty(t, last.Err)
	assert.True(t, last.End.IsZero())
	assert.ErrorIs(t, mem.Retry(ctx, failed), schedule.ErrLeaseLost, "a second Retry of one attempt")
	assert.ErrorIs(t, mem.Finish(ctx, failed), schedule.ErrLeaseLost, "a late write of the first attempt")
	done := last
	done.Status, done.End = schedule.Succeeded, at(2*time.Second)
	require.NoError(t, mem.Finish(ctx, done))
	done.Status = schedule.Failed
	assert.ErrorIs(t, mem.Retry(ctx, done), schedule.ErrLeaseLost, "a finished attempt")
	last, err = mem.Last(ctx, "j")
	require.NoError(t, err)
	assert.Equal(t, schedule.Succeeded, last.Status)
}

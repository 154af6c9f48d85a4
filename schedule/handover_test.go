package schedule_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// A run that one Job of a MemoryStore hands over (Shutdown) while the
// other Job of its name is paused is taken over once that Job resumes: a
// MemoryStore is never looked at periodically, so the offer made to the
// paused Job is remembered, and its claims that find the job busy look
// again. Before, the Released claim counted as a run in flight for every
// later claim, and the resumed Job skipped every slot for good.
func TestHandOverToAPausedJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var la, lb journal
		store := schedule.NewMemoryStore(100)
		a := schedule.NewJob("j", schedule.Every(time.Minute), la.work(time.Hour),
			schedule.WithStore(store), schedule.WithNode("a"), schedule.WithObserver(la.observe))
		b := schedule.NewJob("j", schedule.Every(time.Minute), lb.work(time.Second),
			schedule.WithStore(store), schedule.WithNode("b"), schedule.WithObserver(lb.observe))
		start(t, a)
		time.Sleep(time.Second)
		a.RunNow() // a's run of an hour is in flight
		time.Sleep(time.Second)
		start(t, b)
		b.RunNow() // b claims once (Skipped, busy): it is enlisted for takeovers
		time.Sleep(time.Second)
		b.Pause()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = a.Shutdown(ctx) // a's run is Released, to be taken over
		time.Sleep(time.Second)
		b.Resume()
		time.Sleep(10 * time.Minute)
		stop(t, b)
		var ran []string
		for _, r := range lb.recs() {
			if r.Status != schedule.Skipped {
				ran = append(ran, r.Status.String()+" "+r.Reason.String())
			}
		}
		t.Log(lb.summary(), la.summary())
		assert.NotEmpty(t, ran, "b never ran in 10 minutes after Resume; its records: %v", lb.summary())
		last, _ := store.History(context.Background(), "j", 100)
		for _, r := range last {
			assert.NotEqual(t, schedule.Released, r.Status, "slot %s still Released after 10 minutes", since(r.Due))
		}
	})
}

// A run with attempts left (WithRetry) whose attempt fails while its job
// shuts down is handed over, and the other Job retries it; before, it was
// recorded Failed, its retries lost, where Stop handed it over.
func TestShutdownHandsTheRetriesLeftOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(100)
		fail := func(ctx context.Context, r schedule.Run) error {
			select {
			case <-time.After(5 * time.Second):
			case <-ctx.Done():
				return ctx.Err()
			}
			if r.Attempt == 1 {
				return errors.New("transient")
			}
			return nil
		}
		js := replicas(t, 2, store, time.Minute, fail, schedule.WithObserver(l.observe),
			schedule.WithRetry(3, time.Second))
		time.Sleep(61 * time.Second)
		runner, other := runningJob(t, store, js)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, runner.Shutdown(ctx), "the run ended within the grace")
		time.Sleep(30 * time.Second)
		stop(t, other)
		h, err := store.History(context.Background(), "j", 1)
		assert.NoError(t, err)
		assert.Equal(t, schedule.Succeeded, h[0].Status,
			"the slot with two attempts left was retried or handed over; store: %+v, observed: %v", h[0], l.summary())
	})
}

// The same, when the Shutdown comes between the failed attempt's return
// and its record: the slot is handed over, as when the Shutdown comes
// before the Func returns or during the retry's pause.
func TestShutdownAfterAFailedAttemptHandsItOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(100)
		var j *schedule.Job
		done := make(chan error, 1)
		schedule.SetReturnedHook(func() {
			schedule.SetReturnedHook(nil)
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // no grace: the runs in flight are cancelled at once
			go func() { done <- j.Shutdown(ctx) }()
			synctest.Wait()
		})
		defer schedule.SetReturnedHook(nil)
		j = schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error {
			time.Sleep(time.Second)
			return errors.New("transient")
		}, schedule.WithStore(store), schedule.WithObserver(l.observe), schedule.WithRetry(3, time.Second))
		start(t, j)
		time.Sleep(90 * time.Second)
		<-done
		h, err := store.History(context.Background(), "j", 1)
		require.NoError(t, err)
		require.Len(t, h, 1)
		assert.Equal(t, schedule.Released, h[0].Status, "store: %+v, observed: %v", h[0], l.summary())
	})
}

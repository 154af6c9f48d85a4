package cron_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// Table.Shutdown on the Table's default store (a MemoryStore, no lease)
// returns a second after its context is done, whatever a Handler deaf to
// its context does; before, it waited for the Handler's hour.
func TestTableShutdownOfADeafHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		deaf := func(ctx context.Context, _ string, r schedule.Run) error {
			time.Sleep(time.Hour) // ignores ctx
			return nil
		}
		tab := cron.NewTable(map[string]cron.Handler{"h": deaf}, cron.WithLocation(time.UTC))
		_, err := tab.Apply(context.Background(), []cron.Task{task("t", "h", "* * * * *")})
		require.NoError(t, err)
		time.Sleep(90 * time.Second) // the run of 1m0s is in flight
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		began := time.Now()
		err = tab.Shutdown(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 6*time.Second, time.Since(began), "Shutdown with a 5 s deadline")
		time.Sleep(time.Hour) // the Handler returns, at last
	})
}

// A task whose job fails to start (here ctx is done: Start returns
// ctx.Err()) is refused, and the Table stays usable; before, recording
// the refusal panicked with the Table's lock held.
func TestApplyWithADoneContext(t *testing.T) {
	h := func(ctx context.Context, _ string, r schedule.Run) error { return nil }
	tab := cron.NewTable(map[string]cron.Handler{"h": h}, cron.WithLocation(time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		_, err := tab.Apply(ctx, []cron.Task{task("t", "h", "* * * * *")})
		var te *cron.TaskError
		assert.True(t, errors.As(err, &te) && te.Field == "start", "%v", err)
	}()
	require.Nil(t, panicked, "Apply panicked")
	ts := tab.Tasks()
	require.Len(t, ts, 1)
	assert.ErrorIs(t, ts[0].Refused, context.Canceled)
	require.NoError(t, tab.Stop(context.Background()))
}

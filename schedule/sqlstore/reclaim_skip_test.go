package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// A Job that is busy most of the time (OverlapSkip, runs of 250 ms every
// 100 ms) takes a dead node's expired claim over only while it is free,
// and runs it to its end once: the claim is never finished as Skipped.
func TestBusyJobRunsTheExpiredClaim(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const lease = 300 * time.Millisecond
		s := newStore(t, b, b.dsn(t), sqlstore.WithLease(lease))
		due := time.Now().Add(-time.Hour).Truncate(time.Second)
		dead := schedule.Record{Job: "j", Due: due, Reason: schedule.Scheduled, Status: schedule.Running,
			Start: due, Node: "dead"}
		require.NoError(t, s.Claim(ctx, dead))

		var mu sync.Mutex
		var recovered []schedule.Run // that ran to their end
		var notRun []schedule.Record
		done := make(chan struct{})
		j := schedule.NewJob("j", schedule.Every(100*time.Millisecond), func(ctx context.Context, r schedule.Run) error {
			select {
			case <-time.After(250 * time.Millisecond):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			if r.Reason == schedule.Recovered {
				mu.Lock()
				recovered = append(recovered, r)
				mu.Unlock()
			}
			return nil
		}, schedule.WithStore(s), schedule.WithNode("n"), schedule.WithMisfire(schedule.MisfireSkip),
			schedule.WithObserver(func(r schedule.Record) {
				switch {
				case r.Reason != schedule.Recovered:
				case r.Status == schedule.Succeeded:
					close(done)
				default:
					mu.Lock()
					notRun = append(notRun, r)
					mu.Unlock()
				}
			}))
		require.NoError(t, j.Start(ctx))
		select {
		case <-done:
		case <-time.After(patience):
		}
		require.NoError(t, j.Stop(ctx))

		mu.Lock()
		defer mu.Unlock()
		assert.Empty(t, notRun, "a Recovered run that did not run to its end")
		require.Len(t, recovered, 1, "the dead node's slot ran to its end once")
		assert.True(t, recovered[0].Due.Equal(due))
		assert.Equal(t, 2, recovered[0].Attempt)
		h, err := s.History(ctx, "j", 1000)
		require.NoError(t, err)
		var rec schedule.Record
		for _, r := range h {
			if r.Due.Equal(due) {
				rec = r
			}
		}
		assert.Equal(t, schedule.Succeeded, rec.Status, "%+v", rec)
		assert.Equal(t, "n", rec.Node)
		assert.Equal(t, 2, rec.Attempt)
	})
}

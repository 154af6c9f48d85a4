package sqlstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// TestPauseOnFailuresCountsInTheStore runs a job that fails on one Store
// until it has failed a few slots, stops it, and starts it on another
// Store of the same database, as another replica, pausing after one
// failure more than the store holds: its first failure pauses it, which
// only a count of both replicas' records does. The Stores keep their
// default history (one failed record), which pruning leaves, since the
// failures come after the job's latest success.
func TestPauseOnFailuresCountsInTheStore(t *testing.T) {
	const every = 100 * time.Millisecond
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		fail := func(context.Context, schedule.Run) error { return errors.New("boom") }
		failed := func(s interface {
			History(context.Context, string, int) ([]schedule.Record, error)
		}) int {
			h, err := s.History(ctx, "j", 200)
			require.NoError(t, err)
			n := 0
			for _, r := range h {
				if r.Status == schedule.Failed {
					n++
				}
			}
			return n
		}
		first := newStore(t, b, dsn)
		a := schedule.NewJob("j", schedule.Every(every), fail, schedule.WithStore(first), schedule.WithNode("a"))
		require.NoError(t, a.Start(ctx))
		eventually(t, "two failures", func() bool { return failed(first) >= 2 })
		require.NoError(t, a.Stop(ctx))
		before := failed(first)
		require.Less(t, before, schedule.MaxPauseOnFailures)

		second := newStore(t, b, dsn)
		notes := make(chan schedule.PauseNote, 1)
		j := schedule.NewJob("j", schedule.Every(every), fail, schedule.WithStore(second), schedule.WithNode("b"),
			schedule.WithPauseOnFailures(before+1, func(_ *schedule.Job, n schedule.PauseNote) { notes <- n }))
		require.NoError(t, j.Start(ctx))
		defer func() { require.NoError(t, j.Stop(ctx)) }()
		select {
		case n := <-notes:
			assert.True(t, strings.HasPrefix(n.Note, "paused after "+strconv.Itoa(before+1)+" failed slots in a row; the last, due "), n.Note)
			assert.True(t, strings.HasSuffix(n.Note, " on b: boom"), n.Note)
		case <-time.After(patience):
			t.Fatal("not paused")
		}
		assert.True(t, j.Paused())
		assert.Equal(t, before+1, failed(second), "b failed one slot, and paused")
	})
}

func TestPruningKeepsWhatPauseOnFailuresCounts(t *testing.T) {
	assert.Equal(t, strconv.Itoa(4*schedule.MaxPauseOnFailures+32), sqlstore.KeptStreak, "the records WithPauseOnFailures looks at")
}

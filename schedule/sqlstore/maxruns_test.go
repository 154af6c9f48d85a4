package sqlstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// MaxRuns counts in the store: two Jobs of one name with WithMaxRuns(3),
// each on a Store of its own on one database, as two replicas, the second
// started after the first slot, run the first 3 slots after the time the
// store recorded, each once, and no more; nor does a third, started
// after them, as a restart does.
func TestMaxRunsAcrossReplicas(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		const period = 300 * time.Millisecond
		var ran atomic.Int32
		f := func(context.Context, schedule.Run) error { ran.Add(1); return nil }
		job := func() *schedule.Job {
			return schedule.NewJob("j", schedule.Every(period), f, schedule.WithStore(newStore(t, b, dsn)),
				schedule.WithMaxRuns(3), schedule.WithMisfire(schedule.MisfireSkip))
		}
		a := job()
		require.NoError(t, a.Start(ctx))
		time.Sleep(period + period/2)
		c := job()
		require.NoError(t, c.Start(ctx))
		time.Sleep(4 * period)
		for _, j := range []*schedule.Job{a, c} {
			n, ok := j.Remaining()
			assert.True(t, ok)
			assert.Zero(t, n)
			assert.True(t, j.Next().IsZero())
			require.NoError(t, j.Stop(context.Background()))
		}
		restarted := job()
		require.NoError(t, restarted.Start(ctx))
		n, _ := restarted.Remaining()
		assert.Zero(t, n, "a restart goes on with the count")
		time.Sleep(2 * period)
		require.NoError(t, restarted.Stop(context.Background()))

		h, err := newStore(t, b, dsn).History(ctx, "j", 10)
		require.NoError(t, err)
		require.Len(t, h, 3, "three slots in all: %v", h)
		for i := range 2 {
			assert.Equal(t, period, h[i].Due.Sub(h[i+1].Due), "consecutive slots")
		}
		assert.Equal(t, int32(3), ran.Load()+int32(count(h, schedule.Missed)+count(h, schedule.Skipped)))
	})
}

func count(h []schedule.Record, s schedule.Status) int {
	n := 0
	for _, r := range h {
		if r.Status == s {
			n++
		}
	}
	return n
}

// The store keeps a jittered run's planned start: History reads it back
// as the job's Observer saw it, for claims in a lane (one run at a time)
// and counted ones (OverlapAllow with a limit of 2).
func TestPlannedKept(t *testing.T) {
	for _, opt := range []schedule.Option{schedule.WithOverlap(schedule.OverlapSkip),
		schedule.Preset(schedule.WithOverlap(schedule.OverlapAllow), schedule.WithMaxParallel(2))} {
		t.Run("", func(t *testing.T) { plannedKept(t, opt) })
	}
}

func plannedKept(t *testing.T, opt schedule.Option) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		s := newStore(t, b, dsn)
		seen := make(chan schedule.Record, 10)
		j := schedule.NewJob("j", schedule.Every(time.Second), func(context.Context, schedule.Run) error { return nil },
			opt, schedule.WithStore(s), schedule.WithJitter(400*time.Millisecond), schedule.WithObserver(func(r schedule.Record) { seen <- r }))
		require.NoError(t, j.Start(ctx))
		var got []schedule.Record
		for len(got) < 3 {
			got = append(got, <-seen)
		}
		require.NoError(t, j.Stop(context.Background()))
		h, err := s.History(ctx, "j", 10)
		require.NoError(t, err)
		byDue := map[int64]schedule.Record{}
		for _, r := range h {
			byDue[r.Due.UnixNano()] = r
		}
		jittered := 0
		for _, r := range got {
			want := r.Due.Add(schedule.Jitter("j", r.Due, 400*time.Millisecond))
			kept := byDue[r.Due.UnixNano()]
			if want.Equal(r.Due) {
				assert.True(t, r.Planned.IsZero())
				assert.True(t, kept.Planned.IsZero())
				continue
			}
			jittered++
			assert.True(t, want.Equal(r.Planned), "observed %v", r)
			assert.True(t, want.Equal(kept.Planned), "kept %v", kept)
		}
		assert.Positive(t, jittered)
	})
}

package sqlstore_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// TestSince records since when jobs are scheduled through two Stores, as
// two replicas: the earliest time recorded wins, whoever recorded it.
func TestSince(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		a, c := newStore(t, b, dsn), newStore(t, b, dsn)
		since := func(s *sqlstore.Store, job string, at time.Time) time.Time {
			t.Helper()
			got, err := s.Since(ctx, job, at)
			require.NoError(t, err)
			return got
		}
		assert.True(t, since(a, "j", slot(20)).Equal(slot(20)), "the first time recorded")
		assert.True(t, since(c, "j", slot(30)).Equal(slot(20)), "a later time: the earliest stays")
		assert.True(t, since(c, "j", slot(10)).Equal(slot(10)), "an earlier time replaces it")
		assert.True(t, since(a, "j", slot(25)).Equal(slot(10)), "through the other Store")
		assert.True(t, since(a, "k", slot(40)).Equal(slot(40)), "per job")
		odd := slot(0).Add(time.Nanosecond)
		assert.True(t, since(a, "ns", odd).Equal(odd), "to the nanosecond")

		_, err := a.Since(ctx, "", slot(0))
		assert.ErrorContains(t, err, "empty")
		_, err = a.Since(ctx, "bad\x00", slot(0))
		assert.ErrorContains(t, err, "NUL")
		_, err = a.Since(ctx, "j", time.Time{})
		assert.ErrorContains(t, err, "1678 to 2262")
		_, err = a.Since(ctx, "j", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
		assert.ErrorContains(t, err, "1678 to 2262")
		assert.True(t, since(a, "j", slot(50)).Equal(slot(10)), "refused calls recorded nothing")

		// Both Stores at once, in any order: each gets a time no later
		// than its own, and the earliest stays.
		var wg sync.WaitGroup
		for i, k := range rand.Perm(40) {
			s := []*sqlstore.Store{a, c}[i%2]
			wg.Go(func() {
				got, err := s.Since(ctx, "race", slot(100+k))
				if assert.NoError(t, err) {
					assert.False(t, got.After(slot(100+k)), "Since(%v) = %v", slot(100+k), got)
				}
			})
		}
		wg.Wait()
		assert.True(t, since(c, "race", slot(500)).Equal(slot(100)))

		// Deleting a definition forgets since when its job is scheduled.
		defs := a.Definitions()
		v, err := defs.Create(ctx, task("def"))
		require.NoError(t, err)
		since(a, "def", slot(5))
		require.NoError(t, defs.Delete(ctx, "def", v))
		assert.True(t, since(a, "def", slot(50)).Equal(slot(50)))
		assert.True(t, since(a, "j", slot(50)).Equal(slot(10)), "other jobs keep theirs")
	})
}

// TestSinceOf records the times of many jobs in one call, as StartAll does
// for the jobs with no record: the earliest wins per job, as with Since,
// past a statement's thousand jobs too.
func TestSinceOf(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		a, c := newStore(t, b, dsn), newStore(t, b, dsn)
		_, err := a.Since(ctx, "j5", slot(1))
		require.NoError(t, err)
		want := map[string]time.Time{}
		ask := map[string]time.Time{}
		for i := range 2500 {
			job := fmt.Sprint("j", i)
			ask[job] = slot(10)
			want[job] = slot(10)
		}
		want["j5"] = slot(1)
		got, err := c.SinceOf(ctx, ask)
		require.NoError(t, err)
		require.Len(t, got, len(want))
		for job, w := range want {
			assert.True(t, got[job].Equal(w), "%s: %v, want %v", job, got[job], w)
		}
		got, err = a.SinceOf(ctx, map[string]time.Time{"j7": slot(20), "j8": slot(5)})
		require.NoError(t, err)
		assert.True(t, got["j7"].Equal(slot(10)), "a later time: the earliest stays")
		assert.True(t, got["j8"].Equal(slot(5)), "an earlier time replaces it")
		_, err = a.SinceOf(ctx, map[string]time.Time{"": slot(0)})
		assert.ErrorContains(t, err, "empty")
	})
}

// TestNote records slots that did not run, unless they have a record: a
// slot a replica ran keeps its record.
func TestNote(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t))
		run := schedule.Record{Job: "j", Due: slot(2), Status: schedule.Running, Node: "a", Attempt: 1}
		require.NoError(t, s.Claim(ctx, run))
		run.Status = schedule.Succeeded
		require.NoError(t, s.Finish(ctx, run))
		var rs []schedule.Record
		for i := range 1500 {
			rs = append(rs, schedule.Record{Job: "j", Due: slot(i), Reason: schedule.CatchUp, Status: schedule.Missed, Node: "b"})
		}
		require.NoError(t, s.Note(ctx, rs))
		h, err := s.History(ctx, "j", 2000)
		require.NoError(t, err)
		require.Len(t, h, 1500)
		for _, r := range h {
			if r.Due.Equal(slot(2)) {
				assert.Equal(t, schedule.Succeeded, r.Status, "a slot with a record keeps it")
				assert.Equal(t, "a", r.Node)
				continue
			}
			assert.Equal(t, schedule.Missed, r.Status)
			assert.Equal(t, schedule.CatchUp, r.Reason)
		}
		require.NoError(t, s.Note(ctx, rs), "noting again changes nothing")
		assert.Error(t, s.Note(ctx, []schedule.Record{{Job: "", Due: slot(1), Status: schedule.Missed}}))
	})
}

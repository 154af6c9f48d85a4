package sqlstore_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

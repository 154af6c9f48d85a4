package schedule_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// A claim that fails while the store is busy for a moment is tried again:
// the slot runs late, Scheduled, instead of being Skipped and caught up at
// the next slot. Past the window (three quarters of the way to the next
// slot), the store failing is an outage: the slot is Skipped and owed.
func TestFailedClaimIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name    string
		down    time.Duration // from the slot of 10s
		misfire schedule.Misfire
		want    []string
	}{
		{"busy for 3s", 3 * time.Second, schedule.MisfireRunAll,
			[]string{"10s Succeeded Scheduled 13.15s-14.15s", "20s Succeeded Scheduled 20s-21s"}},
		{"down past the window", 8 * time.Second, schedule.MisfireRunAll,
			[]string{"10s Skipped Scheduled", "10s Succeeded CatchUp 20s-21s", "20s Succeeded Scheduled 21s-22s"}},
		{"busy past the grace under MisfireSkip", 3 * time.Second, schedule.MisfireSkip,
			[]string{"10s Skipped Scheduled", "20s Succeeded Scheduled 20s-21s"}},
		{"busy within the grace under MisfireSkip", 500 * time.Millisecond, schedule.MisfireSkip,
			[]string{"10s Succeeded Scheduled 10.75s-11.75s", "20s Succeeded Scheduled 20s-21s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
				j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
					schedule.WithStore(store), schedule.WithMisfire(tc.misfire), schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(10*time.Second - time.Millisecond)
				store.setDown(true)
				time.Sleep(tc.down + time.Millisecond)
				store.setDown(false)
				time.Sleep(25*time.Second - tc.down - 10*time.Second) // 25s
				stop(t, j)
				assert.Equal(t, tc.want, l.summary())
			})
		})
	}
}

// A Stop during the pause between two tries of a claim returns at once:
// the slot is reported Skipped, as stopped.
func TestStopDuringAClaimRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
			schedule.WithStore(store), schedule.WithObserver(l.observe))
		start(t, j)
		store.setDown(true)
		time.Sleep(12 * time.Second) // the claim of 10s is being tried again
		begin := time.Now()
		stop(t, j)
		assert.Zero(t, time.Since(begin))
		recs := l.recs()
		if assert.Len(t, recs, 1) {
			assert.Equal(t, schedule.Skipped, recs[0].Status)
			assert.Equal(t, "schedule: job stopped", recs[0].Err)
		}
		assert.Empty(t, l.starts())
	})
}

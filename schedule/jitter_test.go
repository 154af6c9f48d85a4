package schedule_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// A thousand jobs due at the same instant with WithJitter(time.Minute)
// start through the minute after it, each at its Planned instant (to the
// wheel's tick), each once and Scheduled; their starts are spread evenly over the minute.
func TestJitterSpreadsAHerd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		starts := map[string][]time.Time{}
		reasons := map[schedule.Reason]int{}
		due := time.Now().Add(time.Hour)
		w := wheel.New()
		defer w.Stop()
		var jobs []*schedule.Job
		for i := range 1000 {
			j := schedule.NewJob(fmt.Sprint("task-", i), schedule.Once(due), func(_ context.Context, r schedule.Run) error {
				mu.Lock()
				starts[r.Job] = append(starts[r.Job], time.Now())
				reasons[r.Reason]++
				mu.Unlock()
				return nil
			}, schedule.WithJitter(time.Minute), schedule.WithScheduler(w))
			jobs = append(jobs, j)
		}
		require.NoError(t, schedule.StartAll(context.Background(), jobs...))
		time.Sleep(time.Hour + 2*time.Minute)
		synctest.Wait()
		var buckets [6]int
		for _, j := range jobs {
			s := starts[j.Name()]
			require.Len(t, s, 1, j.Name())
			planned := j.Planned(due)
			assert.True(t, !s[0].Before(planned) && s[0].Sub(planned) < 10*time.Millisecond, // the wheel's tick
				"%s started at %v, planned %v", j.Name(), s[0].Sub(due), planned.Sub(due))
			off := planned.Sub(due)
			require.True(t, off >= 0 && off < time.Minute, "%v", off)
			buckets[off/(10*time.Second)]++
		}
		for i, n := range buckets {
			assert.InDelta(t, 1000/6, n, 60, "starts in the %d0 s after the due time: %v", i, buckets)
		}
		assert.Equal(t, map[schedule.Reason]int{schedule.Scheduled: 1000}, reasons, "on time: the grace counts from the planned start")
		for _, j := range jobs {
			stop(t, j)
		}
	})
}

// Two replicas of a job, sharing a store, plan each slot at the same
// instant and run it once; a slot's delay never reaches the next slot,
// so an Every(10s) job with a jitter of a minute runs every slot, in
// order.
func TestJitterOnReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(100)
		var js []*schedule.Job
		for _, node := range []string{"a", "b"} {
			j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second), schedule.WithStore(store),
				schedule.WithNode(node), schedule.WithJitter(time.Minute), schedule.WithObserver(l.observe))
			start(t, j)
			js = append(js, j)
		}
		time.Sleep(55 * time.Second)
		for _, j := range js {
			stop(t, j)
		}
		var dues []time.Duration
		for _, r := range l.recs() {
			require.Equal(t, schedule.Succeeded, r.Status, "%v", l.summary())
			require.Equal(t, schedule.Scheduled, r.Reason)
			assert.True(t, r.Start.Equal(js[0].Planned(r.Due)) && r.Start.Equal(js[1].Planned(r.Due)), "%v", l.summary())
			assert.Less(t, r.Start.Sub(r.Due), 10*time.Second, "before the next slot")
			dues = append(dues, r.Due.Sub(at(0)))
		}
		assert.Equal(t, []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second}, dues, "each slot once, in order")
		assert.Equal(t, 1, l.maxRun)
	})
}

// Jitter is the same for the same job and slot, differs between jobs,
// stays in [0, d), and is 0 without a d.
func TestJitter(t *testing.T) {
	due := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	assert.Equal(t, schedule.Jitter("report-shop-1", due, time.Minute), schedule.Jitter("report-shop-1", due, time.Minute))
	assert.NotEqual(t, schedule.Jitter("report-shop-1", due, time.Minute), schedule.Jitter("report-shop-2", due, time.Minute))
	assert.NotEqual(t, schedule.Jitter("report-shop-1", due, time.Minute), schedule.Jitter("report-shop-1", due.Add(24*time.Hour), time.Minute))
	assert.Zero(t, schedule.Jitter("j", due, 0))
	assert.Zero(t, schedule.Jitter("j", due, -time.Second))
	assert.Zero(t, schedule.Jitter("j", due, time.Nanosecond))
	// A fixed value, so that a change of the hash, which would move every
	// replica's slots while others still run the old one, fails here.
	assert.Equal(t, time.Duration(2261948687897), schedule.Jitter("report-shop-1", due, time.Hour)) // 37m41.9s
	j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil })
	assert.Equal(t, due, j.Planned(due), "no jitter")
}

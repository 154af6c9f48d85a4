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
// instant and run it once; a slot's delay stays in the first half of the
// time to the next slot, so an Every(10s) job with a jitter of a minute
// runs every slot, in order.
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
			assert.Less(t, r.Start.Sub(r.Due), 5*time.Second, "in the first half of the time to the next slot")
			dues = append(dues, r.Due.Sub(at(0)))
		}
		assert.Equal(t, []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second, 50 * time.Second}, dues,
			"each slot once, in order")
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

// A slot whose due time has passed and whose planned start has not come
// is neither lost nor run after a newer run: a Pause reports it Skipped,
// a SetSchedule runs it first, at once, and so does a RunNow, before its
// own run.
func TestJitterSlotBetweenItsDueAndItsStart(t *testing.T) {
	for _, call := range []string{"Pause", "SetSchedule", "RunNow"} {
		t.Run(call, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := schedule.NewMemoryStore(100)
				j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Second), schedule.WithStore(store),
					schedule.WithJitter(30*time.Minute), schedule.WithObserver(l.observe), schedule.WithOverlap(schedule.OverlapBufferAll))
				start(t, j)
				due := at(time.Hour)
				off := j.Planned(due).Sub(due)
				require.Greater(t, off, time.Minute, "a slot delayed by more than a minute")
				time.Sleep(time.Hour + off/2) // past the due time, before the planned start
				switch call {
				case "Pause":
					j.Pause()
					j.Resume()
				case "SetSchedule":
					j.SetSchedule(schedule.Every(time.Hour))
				case "RunNow":
					j.RunNow()
				}
				time.Sleep(time.Hour)
				stop(t, j)
				var first []string
				for _, r := range l.recs() {
					if r.Due.Equal(due) && r.Start.IsZero() {
						first = append(first, fmt.Sprintf("%s %s", r.Status, r.Reason))
					} else if r.Due.Equal(due) {
						first = append(first, fmt.Sprintf("%s %s at %v", r.Status, r.Reason, r.Start.Sub(due)))
					}
				}
				want := map[string][]string{
					"Pause":       {"Skipped Scheduled"},
					"SetSchedule": {fmt.Sprintf("Succeeded Scheduled at %v", off/2)},
					"RunNow":      {fmt.Sprintf("Succeeded Scheduled at %v", off/2)},
				}[call]
				assert.Equal(t, want, first, "the slot of 1h: %v", l.summary())
				if call == "Pause" {
					return // a paused job's Skipped slots are not kept: another node may run them
				}
				h, err := store.History(context.Background(), "j", 10)
				require.NoError(t, err)
				var kept []string
				for _, r := range h {
					if r.Due.Equal(due) {
						kept = append(kept, r.Status.String())
					}
				}
				assert.Len(t, kept, 1, "the store has the slot: %v", l.summary())
			})
		})
	}
}

// A claim that fails at a slot's planned start is tried again within the
// grace period after it, not after its due time, under MisfireSkip.
func TestJitterRetriesAFailedClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Second), schedule.WithStore(store),
			schedule.WithJitter(30*time.Minute), schedule.WithObserver(l.observe), schedule.WithMisfire(schedule.MisfireSkip))
		start(t, j)
		planned := j.Planned(at(time.Hour))
		require.Greater(t, planned.Sub(at(time.Hour)), 2*time.Second, "delayed by more than the grace period")
		time.Sleep(time.Until(planned) - time.Millisecond)
		store.setDown(true)
		time.Sleep(20 * time.Millisecond)
		store.setDown(false)
		time.Sleep(time.Minute)
		stop(t, j)
		recs := l.recs()
		require.NotEmpty(t, recs)
		assert.Equal(t, schedule.Succeeded, recs[0].Status, "%v", l.summary())
	})
}

// A run's Record carries its planned start, to the Observer and in the
// store, for a jittered slot; a Manual run's has none, and neither has a
// job without a jitter.
func TestRecordPlanned(t *testing.T) {
	for _, d := range []time.Duration{0, 20 * time.Second} {
		synctest.Test(t, func(t *testing.T) {
			store := schedule.NewMemoryStore(100)
			var l journal
			j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(time.Second),
				schedule.WithStore(store), schedule.WithJitter(d), schedule.WithObserver(l.observe))
			start(t, j)
			time.Sleep(3*time.Minute + 30*time.Second)
			j.RunNow()
			time.Sleep(5 * time.Second)
			stop(t, j)
			h, err := store.History(t.Context(), "j", 10)
			require.NoError(t, err)
			require.Len(t, h, 4)
			jittered := 0
			for _, r := range append(h, l.recs()...) {
				want := r.Due.Add(schedule.Jitter("j", r.Due, d))
				switch {
				case r.Reason == schedule.Manual, want.Equal(r.Due):
					assert.True(t, r.Planned.IsZero(), "%+v", r)
				default:
					jittered++
					assert.True(t, want.Equal(r.Planned), "%+v", r)
					assert.True(t, want.Equal(r.Start), "%+v", r)
				}
			}
			if d > 0 {
				assert.Positive(t, jittered)
			}
		})
	}
}

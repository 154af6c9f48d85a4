package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// First keeps the first n times of its Schedule after its anchor, answers
// Next at any time, before the anchor, within the times it walked and
// past them, and a new First of the same definition gives the same times.
func TestFirst(t *testing.T) {
	every := schedule.Every(time.Minute)
	f := schedule.First(every, at(0), 3)
	want := []time.Time{at(time.Minute), at(2 * time.Minute), at(3 * time.Minute)}
	assert.Equal(t, want, schedule.Upcoming(f, at(-time.Hour), 10), "from before the anchor")
	assert.Equal(t, want[1:], schedule.Upcoming(f, at(time.Minute), 10), "from its first time")
	assert.True(t, f.Next(at(3*time.Minute)).IsZero(), "after its last time")
	assert.Equal(t, want[2], f.Next(at(150*time.Second)), "within the times walked")
	assert.True(t, schedule.First(every, at(0), 3).Next(at(time.Hour)).IsZero(), "a new First asked far ahead first")
	assert.Equal(t, []time.Time{at(time.Minute), at(2 * time.Minute)}, schedule.Upcoming(schedule.First(every, at(30*time.Second), 2), at(0), 10), "an anchor between two times")
	assert.Equal(t, want[:2], schedule.Upcoming(schedule.First(every, at(0), 3), at(0), 2), "Upcoming's n")
	assert.Empty(t, schedule.Upcoming(schedule.First(every, at(0), 0), at(0), 10), "n = 0")
	assert.Equal(t, []time.Time{at(time.Minute)}, schedule.Upcoming(schedule.First(schedule.At(at(time.Minute)), at(0), math.MaxInt), at(0), 10), "a Schedule that ends first")
	assert.Empty(t, schedule.Upcoming(schedule.First(schedule.At(), at(0), math.MaxInt), at(0), 10), "a Schedule with no time")
	big := schedule.First(every, at(0), math.MaxInt)
	assert.Equal(t, at(24*time.Hour+time.Minute), big.Next(at(24*time.Hour)), "math.MaxInt")
}

// First is safe for concurrent use: callers asking at different times see
// the times one caller alone sees.
func TestFirstConcurrent(t *testing.T) {
	f := schedule.First(schedule.Every(time.Second), at(0), 1000)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < 1100; i += 8 {
				got := f.Next(at(time.Duration(i) * time.Second))
				if i < 1000 {
					assert.Equal(t, at(time.Duration(i+1)*time.Second), got)
				} else {
					assert.True(t, got.IsZero())
				}
			}
		})
	}
	wg.Wait()
}

func TestFirstAndWithMaxRunsPanic(t *testing.T) {
	assert.PanicsWithValue(t, "schedule: First with a nil Schedule", func() { schedule.First(nil, at(0), 1) })
	assert.PanicsWithValue(t, "schedule: First with a negative count -1", func() { schedule.First(schedule.Every(time.Second), at(0), -1) })
	assert.PanicsWithValue(t, "schedule: WithMaxRuns(-1): negative count", func() { schedule.WithMaxRuns(-1) })
	assert.NotPanics(t, func() { schedule.WithMaxRuns(0) })
}

// A job with WithMaxRuns(3) runs its first 3 slots after its Start, and
// then has no Next; Remaining counts down as each falls due.
func TestMaxRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		var l journal
		j := schedule.NewJob("j", schedule.Every(30*time.Second), l.work(time.Second),
			schedule.WithStore(store), schedule.WithMaxRuns(3))
		n, ok := j.Remaining()
		assert.False(t, ok, "before Start")
		assert.Zero(t, n)
		start(t, j)
		time.Sleep(time.Millisecond) // each look after the slot of its instant
		var left []string
		for range 5 {
			n, ok := j.Remaining()
			left = append(left, fmt.Sprintf("%s %d %v next %s", since(time.Now()), n, ok, since(j.Next())))
			time.Sleep(30 * time.Second)
		}
		stop(t, j)
		assert.Equal(t, []string{"1ms 3 true next 30s", "30.001s 2 true next 1m0s", "1m0.001s 1 true next 1m30s", "1m30.001s 0 true next -", "2m0.001s 0 true next -"}, left)
		assert.Equal(t, []string{"30s Succeeded Scheduled", "1m0s Succeeded Scheduled", "1m30s Succeeded Scheduled"}, history(t, store))
	})
}

// A job without WithMaxRuns has no limit to report.
func TestNoMaxRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(30*time.Second), l.work(time.Second))
		start(t, j)
		_, ok := j.Remaining()
		assert.False(t, ok)
		stop(t, j)
	})
}

// A slot that the overlap policy Skipped uses its turn, as one Missed
// while the job was down does.
func TestMaxRunsCountsSkippedSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		var l journal
		j := schedule.NewJob("j", schedule.Every(30*time.Second), l.work(40*time.Second),
			schedule.WithStore(store), schedule.WithMaxRuns(3), schedule.WithOverlap(schedule.OverlapSkip))
		start(t, j)
		time.Sleep(5 * time.Minute)
		stop(t, j)
		assert.Equal(t, []string{"30s Succeeded Scheduled", "1m0s Skipped Scheduled", "1m30s Succeeded Scheduled"}, history(t, store))
		n, _ := j.Remaining()
		assert.Zero(t, n)
	})
}

// A job stopped after two of its four slots, and a new Job of its name
// started on the same SharedStore after a third passed, go on with the
// count the store recorded: the third is caught up, the fourth runs, and
// no fifth.
func TestMaxRunsAcrossARestart(t *testing.T) {
	for _, m := range []schedule.Misfire{schedule.MisfireRunOnce, schedule.MisfireSkip} {
		t.Run(m.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := schedule.NewMemoryStore(100)
				var l journal
				job := func() *schedule.Job {
					return schedule.NewJob("j", schedule.Every(30*time.Second), l.work(time.Second),
						schedule.WithStore(store), schedule.WithMaxRuns(4), schedule.WithMisfire(m))
				}
				j := job()
				start(t, j)
				time.Sleep(70 * time.Second)
				stop(t, j)
				time.Sleep(30 * time.Second)
				j = job() // restarted at 1m40s
				start(t, j)
				n, _ := j.Remaining()
				assert.Equal(t, 1, n, "at the restart")
				time.Sleep(5 * time.Minute)
				stop(t, j)
				third := "1m30s Succeeded CatchUp"
				if m == schedule.MisfireSkip {
					third = "1m30s Missed CatchUp"
				}
				assert.Equal(t, []string{"30s Succeeded Scheduled", "1m0s Succeeded Scheduled", third, "2m0s Succeeded Scheduled"}, history(t, store))
				n, _ = j.Remaining()
				assert.Zero(t, n)
				assert.True(t, j.Next().IsZero())
			})
		})
	}
}

// Two Jobs of one name on one SharedStore, started at different times, run
// the first 3 slots between them, each once, and no more.
func TestMaxRunsOnReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		var l journal
		var jobs []*schedule.Job
		for i := range 2 {
			j := schedule.NewJob("j", schedule.Every(30*time.Second), l.work(time.Second),
				schedule.WithStore(store), schedule.WithMaxRuns(3), schedule.WithNode(fmt.Sprint("n", i)))
			start(t, j)
			jobs = append(jobs, j)
			time.Sleep(45 * time.Second) // the second starts after the first slot
		}
		time.Sleep(5 * time.Minute)
		for _, j := range jobs {
			n, _ := j.Remaining()
			assert.Zero(t, n)
			stop(t, j)
		}
		assert.Equal(t, []string{"30s Succeeded Scheduled", "1m0s Succeeded Scheduled", "1m30s Succeeded Scheduled"}, history(t, store))
		assert.Len(t, l.starts(), 3)
	})
}

// WithSince sets where the count begins: slots that passed before the
// Start use their turns, and are owed by the misfire policy.
func TestMaxRunsFromSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		var l journal
		time.Sleep(100 * time.Second)
		j := schedule.NewJob("j", schedule.Every(30*time.Second), l.work(time.Second),
			schedule.WithStore(store), schedule.WithMaxRuns(4), schedule.WithSince(at(10*time.Second)))
		start(t, j) // at 1m40s: 30s, 1m0s and 1m30s have passed
		time.Sleep(5 * time.Minute)
		stop(t, j)
		assert.Equal(t, []string{"30s Missed CatchUp", "1m0s Missed CatchUp", "1m30s Succeeded CatchUp", "2m0s Succeeded Scheduled"}, history(t, store))
	})
}

// SetSchedule counts the slots of the new Schedule from where the count
// of the old one began: those that passed use their turns.
func TestMaxRunsSetSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(time.Second),
			schedule.WithStore(store), schedule.WithMaxRuns(4))
		start(t, j)
		time.Sleep(70 * time.Second) // 1m0s ran
		j.SetSchedule(schedule.Every(20 * time.Second))
		n, _ := j.Remaining()
		assert.Equal(t, 1, n, "20s, 40s and 1m0s of the new schedule have passed")
		time.Sleep(5 * time.Minute)
		stop(t, j)
		assert.Equal(t, []string{"1m0s Succeeded Scheduled", "1m20s Succeeded Scheduled"}, history(t, store))
	})
}

// A limit that no slot reaches changes nothing: a huge one, and one on a
// Schedule with no time, whose job has no Next and its whole count left.
func TestMaxRunsHugeAndNeverDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Second), l.work(0), schedule.WithMaxRuns(math.MaxInt))
		start(t, j)
		time.Sleep(10*time.Second + time.Millisecond)
		n, _ := j.Remaining()
		assert.Equal(t, math.MaxInt-10, n)
		assert.Equal(t, at(11*time.Second), j.Next())
		stop(t, j)
		assert.Len(t, l.starts(), 10)

		never := schedule.NewJob("never", schedule.At(), l.work(0), schedule.WithMaxRuns(2))
		start(t, never)
		n, ok := never.Remaining()
		assert.True(t, ok)
		assert.Equal(t, 2, n)
		assert.True(t, never.Next().IsZero())
		stop(t, never)
	})
}

// With a jitter, the job's last slot starts within its jitter too (it has
// no next slot to bound it), runs once, and ends the job; the limit
// counts slots by their due times, not their starts.
func TestMaxRunsWithJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(time.Second),
			schedule.WithStore(store), schedule.WithMaxRuns(2), schedule.WithJitter(50*time.Second))
		start(t, j)
		time.Sleep(5 * time.Minute)
		stop(t, j)
		assert.Equal(t, []string{"1m0s Succeeded Scheduled", "2m0s Succeeded Scheduled"}, history(t, store))
		h, err := store.History(t.Context(), "j", 10)
		require.NoError(t, err)
		last := h[0]
		d := schedule.Jitter("j", last.Due, 50*time.Second)
		assert.Equal(t, last.Due.Add(d), last.Start, "the last slot's jitter is Jitter(job, due, d)")
		for _, r := range h {
			if r.Start.After(r.Due) {
				assert.Equal(t, r.Start, r.Planned, "the record keeps its planned start")
			} else {
				assert.True(t, r.Planned.IsZero())
			}
		}
		require.Positive(t, d, "a test with a jitter")
	})
}

// A Once schedule with a limit of 1, or of more, runs once.
func TestMaxRunsWithOnce(t *testing.T) {
	for _, n := range []int{1, 3} {
		synctest.Test(t, func(t *testing.T) {
			store := schedule.NewMemoryStore(100)
			var l journal
			j := schedule.NewJob("j", schedule.Once(at(time.Minute)), l.work(time.Second),
				schedule.WithStore(store), schedule.WithMaxRuns(n))
			start(t, j)
			time.Sleep(5 * time.Minute)
			stop(t, j)
			assert.Equal(t, []string{"1m0s Succeeded Scheduled"}, history(t, store))
			left, _ := j.Remaining()
			assert.Equal(t, n-1, left)
		})
	}
}

// Remaining counts the slots that have fallen due, however far the job's
// Schedule was asked ahead: by its jitter, which looks at the slot after
// the next, or by a preview of the First the job runs on.
func TestMaxRunsRemainingCountsDueSlotsOnly(t *testing.T) {
	t.Run("jitter", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var l journal
			j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(time.Second),
				schedule.WithMaxRuns(3), schedule.WithJitter(50*time.Second))
			start(t, j)
			n, _ := j.Remaining()
			assert.Equal(t, 3, n, "at Start, no slot has fallen due")
			time.Sleep(61 * time.Second)
			n, _ = j.Remaining()
			assert.Equal(t, 2, n, "after the first slot")
			stop(t, j)
		})
	})
	t.Run("preview", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var l journal
			f := schedule.First(schedule.Every(time.Minute), time.Now(), 10)
			j := schedule.NewJob("j", f, l.work(time.Second))
			start(t, j)
			assert.Len(t, schedule.Upcoming(f, time.Now(), 5), 5) // an admin page's preview
			n, _ := j.Remaining()
			assert.Equal(t, 10, n)
			time.Sleep(150 * time.Second)
			n, _ = j.Remaining()
			assert.Equal(t, 8, n)
			stop(t, j)
		})
	})
}

// sinceDown is a MemoryStore whose Since fails while down is set.
type sinceDown struct {
	*schedule.MemoryStore
	down atomic.Bool
}

func (s *sinceDown) Since(ctx context.Context, job string, t time.Time) (time.Time, error) {
	if s.down.Load() {
		return time.Time{}, errors.New("connection refused")
	}
	return s.MemoryStore.Since(ctx, job, t)
}

// A job restarted on a SharedStore whose Since fails cannot tell where its
// count began: it runs no slot until the store answers, and then counts
// from the store's time. Counted from its restart, it would have run two
// slots more than its four.
func TestMaxRunsHeldWhileSinceFails(t *testing.T) {
	for _, answers := range []bool{false, true} {
		t.Run(fmt.Sprint("answers=", answers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &sinceDown{MemoryStore: schedule.NewMemoryStore(100)}
				var l journal
				job := func() *schedule.Job {
					return schedule.NewJob("j", schedule.Every(30*time.Second), l.work(time.Second),
						schedule.WithStore(store), schedule.WithMaxRuns(4))
				}
				j := job()
				start(t, j)
				time.Sleep(70 * time.Second) // 30s and 1m0s ran
				stop(t, j)
				store.down.Store(true)
				j = job()
				start(t, j) // at 1m10s
				assert.True(t, j.Next().IsZero(), "held")
				time.Sleep(time.Minute) // 1m30s and 2m0s held
				if answers {
					store.down.Store(false)
				}
				time.Sleep(5 * time.Minute)
				stop(t, j)
				want := []string{"30s Succeeded Scheduled", "1m0s Succeeded Scheduled"}
				if answers {
					// The first retry that finds the store gives the slots
					// held the misfire policy, as a Start then would.
					want = append(want, "1m30s Missed CatchUp", "2m0s Succeeded CatchUp")
				}
				assert.Equal(t, want, history(t, store))
				n, _ := j.Remaining()
				assert.Zero(t, n, "counted from 0s or from 1m10s, two slots after 2m0s have passed")
			})
		})
	}
}

// Replicas that give the same WithSince count the same slots, whenever
// each starts: here, one starts after another recorded the store's Since,
// and the count includes a slot before both started.
func TestMaxRunsReplicasWithSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		var l journal
		job := func(node string) *schedule.Job {
			return schedule.NewJob("j", schedule.Every(30*time.Second), l.work(time.Second),
				schedule.WithStore(store), schedule.WithMaxRuns(3), schedule.WithNode(node),
				schedule.WithSince(at(20*time.Second)), schedule.WithMisfire(schedule.MisfireSkip))
		}
		time.Sleep(35 * time.Second)
		a := job("a")
		start(t, a) // at 35s: counts 30s, 1m0s, 1m30s
		time.Sleep(10 * time.Second)
		b := job("b")
		start(t, b) // at 45s: the same
		time.Sleep(5 * time.Minute)
		stop(t, a)
		stop(t, b)
		assert.Equal(t, []string{"30s Missed CatchUp", "1m0s Succeeded Scheduled", "1m30s Succeeded Scheduled"}, history(t, store))
	})
}

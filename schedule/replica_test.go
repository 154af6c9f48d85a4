package schedule_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// Two Jobs with the same name sharing a store run each slot once: the one
// whose claim succeeds runs it, and the other's ErrClaimed reaches no
// Observer.
func TestReplicasRunEachSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(100)
		var jobs []*schedule.Job
		for _, node := range []string{"a", "b"} {
			j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
				schedule.WithStore(store), schedule.WithNode(node), schedule.WithObserver(l.observe))
			start(t, j)
			jobs = append(jobs, j)
		}
		time.Sleep(55 * time.Second)
		for _, j := range jobs {
			stop(t, j)
		}
		assert.Equal(t, []string{
			"10s Succeeded Scheduled 10s-11s", "20s Succeeded Scheduled 20s-21s", "30s Succeeded Scheduled 30s-31s",
			"40s Succeeded Scheduled 40s-41s", "50s Succeeded Scheduled 50s-51s",
		}, l.summary())
	})
}

// A store outage: the claims of the slots while it is down fail (Skipped),
// and at the first slot whose claim can be attempted again the job applies
// its Misfire policy to the slots since the last record it knows. Two
// replicas sharing the store still run each slot once.
func TestStoreOutageFollowsTheMisfirePolicy(t *testing.T) {
	for _, tc := range []struct {
		misfire  schedule.Misfire
		replicas int
		want     []string
		window   time.Duration
	}{
		{schedule.MisfireRunAll, 1, []string{"10s Succeeded Scheduled 10s-11s",
			"20s Skipped Scheduled", "30s Skipped Scheduled", "40s Skipped Scheduled",
			"20s Succeeded CatchUp 50s-51s", "30s Succeeded CatchUp 51s-52s", "40s Succeeded CatchUp 52s-53s",
			"50s Succeeded Scheduled 53s-54s"}, 0},
		{schedule.MisfireRunOnce, 1, []string{"10s Succeeded Scheduled 10s-11s",
			"20s Skipped Scheduled", "30s Skipped Scheduled", "40s Skipped Scheduled",
			"50s Succeeded Scheduled 50s-51s"}, 0},
		{schedule.MisfireRunAll, 2, nil, 0},
		// With a catch-up window of 25s, the catch-up at 50s leaves out
		// the slot of 20s, Skipped when it fell due, and Missed in the
		// store.
		{schedule.MisfireRunAll, 1, []string{"10s Succeeded Scheduled 10s-11s",
			"20s Skipped Scheduled", "30s Skipped Scheduled", "40s Skipped Scheduled",
			"30s Succeeded CatchUp 50s-51s", "40s Succeeded CatchUp 51s-52s",
			"50s Succeeded Scheduled 52s-53s"}, 25 * time.Second},
	} {
		t.Run(fmt.Sprintf("%v/%d/%v", tc.misfire, tc.replicas, tc.window), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
				var jobs []*schedule.Job
				for i := range tc.replicas {
					j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
						schedule.WithStore(store), schedule.WithMisfire(tc.misfire),
						schedule.WithNode(fmt.Sprint(i)), schedule.WithObserver(l.observe), schedule.WithClaimRetry(0),
						schedule.WithCatchUpWindow(tc.window))
					start(t, j)
					jobs = append(jobs, j)
				}
				time.Sleep(15 * time.Second)
				store.setDown(true)
				time.Sleep(30 * time.Second)
				store.setDown(false)
				time.Sleep(13 * time.Second) // 58s
				for _, j := range jobs {
					stop(t, j)
				}
				if tc.replicas == 1 {
					assert.Equal(t, tc.want, l.summary())
					if tc.window > 0 {
						h, err := store.MemoryStore.History(context.Background(), "j", 10)
						require.NoError(t, err)
						fates := map[string]schedule.Status{}
						for _, r := range h {
							fates[since(r.Due)] = r.Status
						}
						assert.Equal(t, schedule.Missed, fates["20s"], "the slot the window left: %v", fates)
					}
					return
				}
				// Which replica runs which slot is up to the scheduler of
				// goroutines. Each slot runs once at most, one run at a
				// time on the two: the catch-ups of one replica are runs
				// in flight to the other. The owed slots are caught up;
				// the slot of 50s, due while they run, is run or Skipped,
				// once, in the store.
				assert.Equal(t, 1, l.maxRun, "runs overlapped: %v", l.summary())
				ran := map[string]int{}
				for _, line := range onlyDues(l.summary()) {
					if strings.Contains(line, "Succeeded") {
						ran[strings.Fields(line)[0]]++
					}
				}
				for _, due := range []string{"10s", "20s", "30s", "40s"} {
					assert.Equal(t, 1, ran[due], "runs of %s: %v", due, l.summary())
				}
				assert.LessOrEqual(t, ran["50s"], 1)
				h, err := store.MemoryStore.History(context.Background(), "j", 10)
				require.NoError(t, err)
				fates := map[string]schedule.Status{}
				for _, r := range h {
					fates[since(r.Due)] = r.Status
				}
				assert.Equal(t, map[string]schedule.Status{"10s": schedule.Succeeded, "20s": schedule.Succeeded,
					"30s": schedule.Succeeded, "40s": schedule.Succeeded, "50s": fates["50s"]}, fates)
				assert.Contains(t, []schedule.Status{schedule.Succeeded, schedule.Skipped}, fates["50s"])
			})
		})
	}
}

// A claim that works again before the catch-up, here a RunNow, does not
// stand for the slots whose claims failed: they are still caught up.
func TestOutageCaughtUpAfterALaterClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
		j := startRunAll(t, &l, store)
		time.Sleep(15 * time.Second)
		store.setDown(true)
		time.Sleep(30 * time.Second) // 45s
		store.setDown(false)
		time.Sleep(time.Second)
		j.RunNow()                   // 46s: its claim works
		time.Sleep(12 * time.Second) // 58s
		stop(t, j)
		summary := l.summary()
		assert.Contains(t, summary, "20s Succeeded CatchUp 50s-51s")
		assert.Contains(t, summary, "30s Succeeded CatchUp 51s-52s")
		assert.Contains(t, summary, "40s Succeeded CatchUp 52s-53s")
		assert.Contains(t, summary, "50s Succeeded Scheduled 53s-54s")
	})
}

// onlyDues keeps the due, status and reason of summary lines.
func onlyDues(s []string) []string {
	var d []string
	for _, line := range s {
		var due, status, reason string
		fmt.Sscan(line, &due, &status, &reason)
		d = append(d, due+" "+status+" "+reason)
	}
	return d
}

// A store that fails at Start does not prevent it: the job catches up
// from the last record once the store answers.
func TestStoreDownAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
		require.NoError(t, store.Claim(context.Background(), schedule.Record{Job: "j", Due: at(-20 * time.Second)}))
		store.setDown(true)
		j := startRunAll(t, &l, store)
		time.Sleep(15 * time.Second)
		store.setDown(false)
		time.Sleep(10 * time.Second)
		stop(t, j)
		// Start (0s) found the slot of 0s on time and -10s missed, but
		// could not read the store: once it answers (16s), they get what
		// Start would have given them. The slot of 10s, whose claim
		// failed, is caught up at the next.
		assert.Equal(t, []string{"10s Skipped Scheduled",
			"-10s Succeeded CatchUp 16s-17s", "0s Succeeded Scheduled 17s-18s",
			"10s Succeeded CatchUp 20s-21s", "20s Succeeded Scheduled 21s-22s"}, l.summary())
	})
}

// Two replicas on one MemoryStore, on the real clock, with 2ms slots and
// runs of random length under every overlap policy: no slot runs twice,
// no run of a job overlaps another unless OverlapAllow, and every slot
// is claimed (and run, unless replaced or stopped before it started) or
// reported Skipped or Missed by both.
func TestReplicasStress(t *testing.T) {
	for _, o := range []schedule.Overlap{schedule.OverlapSkip, schedule.OverlapBufferOne, schedule.OverlapReplace, schedule.OverlapAllow, schedule.OverlapBufferAll} {
		t.Run(o.String(), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			claims := map[time.Time][]string{}
			seen := map[string]time.Time{} // the latest slot each replica handled
			store := &loggingStore{MemoryStore: schedule.NewMemoryStore(1 << 12), log: func(r schedule.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				claims[r.Due] = append(claims[r.Due], fmt.Sprintf("%s claims %v at %v: %v", r.Node, r.Reason, r.Start.Sub(r.Due), err))
				if r.Due.After(seen[r.Node]) {
					seen[r.Node] = r.Due
				}
			}}
			ran := map[time.Time]int{}
			notRun := map[time.Time]int{}
			reports := map[time.Time][]string{}
			inFlight := map[string]int{}
			overlaps := 0
			var jobs []*schedule.Job
			for _, node := range []string{"a", "b"} {
				j := schedule.NewJob("j", schedule.Every(2*time.Millisecond), func(ctx context.Context, r schedule.Run) error {
					mu.Lock()
					ran[r.Due]++
					inFlight[node]++
					if inFlight[node] > 1 {
						overlaps++
					}
					mu.Unlock()
					select {
					case <-time.After(time.Duration(rand.IntN(3000)) * time.Microsecond):
					case <-ctx.Done():
					}
					mu.Lock()
					inFlight[node]--
					mu.Unlock()
					return nil
				}, schedule.WithStore(store), schedule.WithNode(node), schedule.WithOverlap(o),
					schedule.WithObserver(func(r schedule.Record) {
						mu.Lock()
						defer mu.Unlock()
						reports[r.Due] = append(reports[r.Due], node+" "+r.Status.String()+" "+r.Reason.String()+" "+r.Err)
						if r.Due.After(seen[node]) {
							seen[node] = r.Due
						}
						if r.Status == schedule.Skipped || r.Status == schedule.Missed {
							notRun[r.Due]++
						}
					}))
				start(t, j)
				jobs = append(jobs, j)
			}
			first := time.Now()
			time.Sleep(300 * time.Millisecond)
			for _, j := range jobs {
				stop(t, j)
			}
			mu.Lock()
			defer mu.Unlock()
			// Slots after the latest one both replicas handled had not
			// fallen due to both when they stopped.
			last := seen["a"]
			if seen["b"].Before(last) {
				last = seen["b"]
			}
			if o != schedule.OverlapAllow {
				assert.Zero(t, overlaps, "runs of one job overlapped")
			}
			claimed := map[time.Time]bool{}
			h, err := store.History(context.Background(), "j", 1<<12)
			require.NoError(t, err)
			for _, r := range h {
				claimed[r.Due] = true
			}
			lost, slots := 0, 0
			for _, due := range schedule.Upcoming(schedule.Every(2*time.Millisecond), first.Add(10*time.Millisecond), 1000) {
				if due.After(last) {
					break
				}
				slots++
				n := ran[due.Local()]
				assert.LessOrEqual(t, n, 1, "slot %v ran %d times", due, n)
				if n == 0 && !claimed[due.Local()] && notRun[due.Local()] < 2 {
					lost++
					if lost < 4 {
						t.Logf("lost %v %s: %q %q", due.Sub(first), due.Format("05.000000"), reports[due.Local()], claims[due.Local()])
					}
				}
			}
			assert.Zero(t, lost, "slots neither run nor reported by both replicas, of %d", slots)
			assert.Greater(t, slots, 50)
		})
	}
}

type loggingStore struct {
	*schedule.MemoryStore
	log func(schedule.Record, error)
}

func (s *loggingStore) Claim(ctx context.Context, r schedule.Record) error {
	err := s.MemoryStore.Claim(ctx, r)
	s.log(r, err)
	return err
}

func (s *loggingStore) ClaimRun(ctx context.Context, r schedule.Record, c schedule.Concurrency) (time.Time, error) {
	sent, err := s.MemoryStore.ClaimRun(ctx, r, c)
	s.log(r, err)
	return sent, err
}

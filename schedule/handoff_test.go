package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// sharer is a node's view of a MemoryStore shared with other nodes, as a
// Sharer: it owns the jobs owns says. It counts its claims, and its
// calls of Claimed with the slots asked.
type sharer struct {
	*schedule.MemoryStore
	mu      sync.Mutex
	owns    func(job string) bool
	claims  int
	asks    int
	asked   int
	failAsk bool

	perSlot   time.Duration // Claimed takes this long a slot, or until its context is done
	failAfter int           // calls of Claimed after this many fail, if not zero

	lease time.Duration           // its Lease, if not zero: the MemoryStore's claims never expire
	owner func(job string) string // the owner of each job, if not nil (Owner)
	slow  func() error            // called before each claim, if not nil, one claim at a time
	claim chan struct{}           // holds a token while a slow claim runs (a channel, which synctest waits on)
}

func (s *sharer) ClaimRun(ctx context.Context, r schedule.Record, c schedule.Concurrency) (time.Time, error) {
	s.mu.Lock()
	s.claims++
	s.mu.Unlock()
	if s.slow != nil {
		s.claim <- struct{}{}
		err := s.slow()
		<-s.claim
		if err != nil {
			return time.Time{}, err
		}
	}
	return s.MemoryStore.ClaimRun(ctx, r, c)
}

func (s *sharer) Lease() time.Duration { return s.lease }

// Owner names the owner of job; the schedule package asks it of a Sharer
// that has it.
func (s *sharer) Owner(job string) string {
	if s.owner == nil {
		return ""
	}
	return s.owner(job)
}

func (s *sharer) Claimed(ctx context.Context, rs []schedule.Record) ([]bool, error) {
	s.mu.Lock()
	s.asks++
	s.asked += len(rs)
	fail := s.failAsk || s.failAfter > 0 && s.asks > s.failAfter
	s.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("the store is down")
	}
	if s.perSlot > 0 {
		select {
		case <-time.After(s.perSlot * time.Duration(len(rs))):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := make([]bool, len(rs))
	for i, r := range rs {
		h, err := s.History(ctx, r.Job, 1000)
		if err != nil {
			return nil, err
		}
		for _, rec := range h {
			if rec.Due.Equal(r.Due) {
				out[i] = true
			}
		}
	}
	return out, nil
}

func (s *sharer) Owns(job string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owns(job)
}

var _ schedule.Sharer = (*sharer)(nil)

// A job's owner claims each slot at its due time; the other node, in a
// RunLimit, holds it, and asks a quarter of the grace period later, only
// to find it claimed: every slot runs once, on the owner, on time. With
// the owner not claiming (and still taken for live), the other node runs
// each slot half the grace period late. Without a RunLimit, there is no
// hand-off: each slot runs once, on either.
func TestHandOffToTheOwner(t *testing.T) {
	for _, limited := range []bool{false, true} {
		t.Run(fmt.Sprint("limit=", limited), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				mem := schedule.NewMemoryStore(100)
				var mu sync.Mutex
				var ran []string
				nodes := map[string]*sharer{}
				jobs := map[string]*schedule.Job{}
				for _, node := range []string{"owner", "other"} {
					s := &sharer{MemoryStore: mem, owns: func(string) bool { return node == "owner" }}
					opts := []schedule.Option{schedule.WithStore(s), schedule.WithNode(node),
						schedule.WithMisfire(schedule.MisfireSkip), schedule.WithGrace(2 * time.Second)}
					if limited {
						opts = append(opts, schedule.WithRunLimit(schedule.NewRunLimit(4)))
					}
					j := schedule.NewJob("j", schedule.Every(10*time.Second), func(_ context.Context, r schedule.Run) error {
						mu.Lock()
						ran = append(ran, fmt.Sprintf("%s %v at +%v", node, r.Due.Sub(t0), time.Since(r.Due)))
						mu.Unlock()
						return nil
					}, opts...)
					start(t, j)
					nodes[node], jobs[node] = s, j
				}
				time.Sleep(25 * time.Second)
				stop(t, jobs["owner"]) // gone: the other node takes its slots, late
				time.Sleep(20 * time.Second)
				stop(t, jobs["other"])
				if !limited {
					// Without a RunLimit, no hand-off: the nodes race,
					// and the other may win a slot while the owner runs.
					assert.Len(t, ran, 4, "%v", ran)
					for _, r := range ran {
						assert.True(t, strings.HasSuffix(r, " at +0s"), r)
					}
					return
				}
				// The other node asks its store when the hand-off is over,
				// and waits up to half the grace period for a live owner.
				assert.Equal(t, []string{"owner 10s at +0s", "owner 20s at +0s",
					"other 30s at +1s", "other 40s at +1s"}, ran)
			})
		})
	}
}

// With WithJitter, the hand-off counts from a slot's planned start: the
// owner claims each slot at it, and the other node, once the owner has
// stopped claiming, runs it half the grace period after it.
func TestHandOffWithJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		mem := schedule.NewMemoryStore(100)
		var mu sync.Mutex
		var ran []string
		jobs := map[string]*schedule.Job{}
		for _, node := range []string{"owner", "other"} {
			s := &sharer{MemoryStore: mem, owns: func(string) bool { return node == "owner" }}
			var j *schedule.Job
			j = schedule.NewJob("j", schedule.Every(10*time.Second), func(_ context.Context, r schedule.Run) error {
				mu.Lock()
				ran = append(ran, fmt.Sprintf("%s %v at planned+%v", node, r.Due.Sub(t0), time.Since(j.Planned(r.Due))))
				mu.Unlock()
				return nil
			}, schedule.WithStore(s), schedule.WithNode(node), schedule.WithMisfire(schedule.MisfireSkip),
				schedule.WithGrace(2*time.Second), schedule.WithRunLimit(schedule.NewRunLimit(4)), schedule.WithJitter(5*time.Second))
			start(t, j)
			jobs[node] = j
		}
		time.Sleep(25 * time.Second)
		stop(t, jobs["owner"])
		time.Sleep(20 * time.Second)
		stop(t, jobs["other"])
		assert.Equal(t, []string{"owner 10s at planned+0s", "owner 20s at planned+0s",
			"other 30s at planned+1s", "other 40s at planned+1s"}, ran)
		assert.NotEqual(t, at(30*time.Second), jobs["other"].Planned(at(30*time.Second)), "the slots are delayed")
	})
}

// A herd of slots handed to an owner that is gone waits in the RunLimit,
// holding no goroutine, until their hand-off time, when each runs once;
// a job stopped during the wait runs nothing, and leaves nothing behind.
func TestHandOffHerdHoldsNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		s := &sharer{MemoryStore: schedule.NewMemoryStore(100), owns: func(string) bool { return false }}
		limit := schedule.NewRunLimit(4096)
		var mu sync.Mutex
		runs := map[string]int{}
		var jobs []*schedule.Job
		for i := range n {
			name := fmt.Sprint("j", i)
			j := schedule.NewJob(name, schedule.Every(time.Minute), func(context.Context, schedule.Run) error {
				mu.Lock()
				runs[name]++
				mu.Unlock()
				return nil
			}, schedule.WithStore(s), schedule.WithRunLimit(limit))
			start(t, j)
			jobs = append(jobs, j)
		}
		time.Sleep(time.Minute - time.Millisecond)
		synctest.Wait()
		idle := runtime.NumGoroutine()
		time.Sleep(100 * time.Millisecond) // due, and a part of the hand-off delay
		synctest.Wait()
		assert.Less(t, runtime.NumGoroutine(), idle+10, "goroutines during the hand-off")
		assert.Zero(t, limit.Waiting(), "runs waiting for their turn: the held slots are not")
		assert.Zero(t, limit.Running())
		stop(t, jobs[1]) // stopped while its wake waits for the end of the hand-off: it runs nothing
		assert.False(t, jobs[1].Waits(), "a job stopped during its hand-off keeps the list of its waits")
		for i := 0; limit.Held() < n-1 && i < 2000; i++ {
			time.Sleep(time.Millisecond) // to the end of the hand-off, when the slots are held
			synctest.Wait()
		}
		require.Equal(t, n-1, limit.Held(), "slots held once the hand-off is over")
		assert.Less(t, runtime.NumGoroutine(), idle+10, "goroutines while the slots are held")
		for _, j := range append(jobs[:1:1], jobs[2:]...) {
			require.True(t, j.Waits(), "a job that holds its slot for its owner")
		}
		stop(t, jobs[0]) // stopped while it holds its slot: it runs nothing
		assert.False(t, jobs[0].Waits(), "a job stopped while it holds keeps the list of its waits")
		time.Sleep(time.Second)
		synctest.Wait()
		for _, j := range jobs[2:] {
			if j.Waits() {
				t.Fatalf("%s keeps the list of its waits once its hand-off is over", j.Name())
			}
		}
		mu.Lock()
		assert.Equal(t, n-2, len(runs), "jobs that ran")
		for name, c := range runs {
			if c != 1 {
				t.Errorf("%s ran %d times", name, c)
			}
		}
		mu.Unlock()
		assert.Zero(t, limit.Waiting())
		for _, j := range jobs[2:] {
			stop(t, j)
		}
	})
}

// A herd whose owner claimed every slot costs the other node one call of
// Claimed for all the slots once the hand-off is over, and no claim; if
// that call fails, the other node claims each slot, and finds it claimed.
// Every slot runs once, on the owner.
func TestHandOffAsksOnceForAHerd(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("fail=", fail), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 500
				mem := schedule.NewMemoryStore(100)
				owner := &sharer{MemoryStore: mem, owns: func(string) bool { return true }}
				other := &sharer{MemoryStore: mem, owns: func(string) bool { return false }, failAsk: fail}
				var mu sync.Mutex
				runs := map[string]int{}
				var jobs []*schedule.Job
				for _, s := range []*sharer{owner, other} {
					limit := schedule.NewRunLimit(4096)
					for i := range n {
						name := fmt.Sprint("j", i)
						node := "owner"
						if s == other {
							node = "other"
						}
						jobs = append(jobs, schedule.NewJob(name, schedule.Once(time.Now().Add(time.Minute)), func(context.Context, schedule.Run) error {
							mu.Lock()
							runs[node+" "+name]++
							mu.Unlock()
							return nil
						}, schedule.WithStore(s), schedule.WithRunLimit(limit)))
					}
				}
				for _, j := range jobs {
					start(t, j)
				}
				time.Sleep(time.Minute + time.Second)
				synctest.Wait()
				for _, j := range jobs {
					stop(t, j)
				}
				mu.Lock()
				defer mu.Unlock()
				assert.Equal(t, n, len(runs), "slots run")
				for k, c := range runs {
					if c != 1 || k[:5] != "owner" {
						t.Errorf("%s ran %d times", k, c)
					}
				}
				assert.Equal(t, n, owner.claims)
				assert.Equal(t, 0, owner.asks)
				assert.Equal(t, 1, other.asks, "calls of Claimed")
				assert.Equal(t, n, other.asked)
				if fail {
					assert.Equal(t, n, other.claims, "claims after a failed Claimed")
				} else {
					assert.Equal(t, 0, other.claims, "claims of slots the owner claimed")
				}
			})
		})
	}
}

// A look at a herd asks Claimed in calls of 5,000 slots at most, each
// bounded in time alone: a herd too large for one call within its time
// (a second here) is answered in pieces, and the other node finds every
// slot claimed by the owner, where asked in one call the look timed out
// and it claimed every slot. After a call that fails, the look asks no
// more, and the other node claims the slots of that call and the rest,
// but not those of the calls before it.
func TestHandOffAsksInPieces(t *testing.T) {
	for _, c := range []struct {
		name      string
		n         int
		perSlot   time.Duration
		failAfter int
		asks      int // calls of Claimed
		claims    int // by the other node
	}{
		{"too slow for one call", 6000, 180 * time.Microsecond, 0, 2, 0},
		{"the second call fails", 11000, 0, 1, 2, 6000},
		{"5000 in one call", 5000, 0, 0, 1, 0},
		{"5001 in two", 5001, 0, 0, 2, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := schedule.NewMemoryStore(1)
				owner := &sharer{MemoryStore: mem, owns: func(string) bool { return true }}
				other := &sharer{MemoryStore: mem, owns: func(string) bool { return false }, perSlot: c.perSlot, failAfter: c.failAfter}
				var mu sync.Mutex
				runs := map[string]int{}
				var jobs []*schedule.Job
				due := time.Now().Add(time.Minute)
				for _, s := range []*sharer{owner, other} {
					limit := schedule.NewRunLimit(c.n)
					for i := range c.n {
						name := fmt.Sprint("j", i)
						jobs = append(jobs, schedule.NewJob(name, schedule.Once(due), func(context.Context, schedule.Run) error {
							mu.Lock()
							runs[name]++
							mu.Unlock()
							return nil
						}, schedule.WithStore(s), schedule.WithRunLimit(limit)))
					}
				}
				require.NoError(t, schedule.StartAll(context.Background(), jobs...))
				time.Sleep(time.Minute + 5*time.Second)
				synctest.Wait()
				for _, j := range jobs {
					stop(t, j)
				}
				mu.Lock()
				defer mu.Unlock()
				assert.Len(t, runs, c.n, "slots run")
				for k, n := range runs {
					if n != 1 {
						t.Errorf("%s ran %d times", k, n)
					}
				}
				assert.Equal(t, c.n, owner.claims)
				assert.Equal(t, c.asks, other.asks, "calls of Claimed")
				assert.Equal(t, c.claims, other.claims, "claims of slots the owner claimed")
			})
		})
	}
}

// A herd whose owner takes longer to claim than the hand-off's wait for a
// live owner (half the grace period) does not make the other node claim
// it: while each look finds more of the slots it holds for that owner
// claimed, it waits on, up to half a lease. When the owner stops claiming
// (gone, but not yet seen so), the other node claims the rest at its next
// look; the slots of another owner that claims nothing (here, one that
// does not run those jobs) are claimed when the wait for a live owner
// ends, whatever the herd's owner does; and under MisfireSkip, whose slots
// must start within the grace period, the wait ends then too. Every slot
// runs once.
func TestHandOffWaitsForAHerdItsOwnerClaims(t *testing.T) {
	for _, c := range []struct {
		name   string
		dies   bool // the owner stops claiming half way
		lonely int  // jobs of another owner, which does not run them
		skip   bool // MisfireSkip
	}{{name: "claims"}, {name: "dies", dies: true}, {name: "lonely", lonely: 50}, {name: "MisfireSkip", skip: true}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 400
				mem := schedule.NewMemoryStore(100)
				gone := make(chan struct{})
				claims := 0
				ownerOf := func(job string) string {
					if strings.HasPrefix(job, "lonely") {
						return "elsewhere"
					}
					return "owner"
				}
				owner := &sharer{MemoryStore: mem, owns: func(string) bool { return true }, lease: 10 * time.Second, owner: ownerOf,
					claim: make(chan struct{}, 1), slow: func() error {
						// 5ms a claim: the herd takes 2s, four times the
						// wait for a live owner. If it dies, half way.
						if claims++; c.dies && claims > n/2 {
							<-gone
							return errors.New("the owner is gone")
						}
						time.Sleep(5 * time.Millisecond)
						return nil
					}}
				other := &sharer{MemoryStore: mem, owns: func(string) bool { return false }, lease: 10 * time.Second, owner: ownerOf}
				due := time.Now().Add(time.Minute)
				var mu sync.Mutex
				runs := map[string]int{}
				late := map[string]time.Duration{}
				var jobs []*schedule.Job
				for _, s := range []*sharer{owner, other} {
					limit := schedule.NewRunLimit(4096)
					node := "owner"
					if s == other {
						node = "other"
					}
					var names []string
					for i := range n {
						names = append(names, fmt.Sprint("j", i))
					}
					if s == other {
						for i := range c.lonely {
							names = append(names, fmt.Sprint("lonely", i))
						}
					}
					opts := []schedule.Option{schedule.WithStore(s), schedule.WithNode(node), schedule.WithRunLimit(limit)}
					if c.skip {
						opts = append(opts, schedule.WithMisfire(schedule.MisfireSkip))
					}
					for _, name := range names {
						jobs = append(jobs, schedule.NewJob(name, schedule.Once(due), func(_ context.Context, r schedule.Run) error {
							mu.Lock()
							runs[name]++
							late[node+" "+name[:1]] = max(late[node+" "+name[:1]], time.Since(r.Due))
							mu.Unlock()
							return nil
						}, opts...))
					}
				}
				for _, j := range jobs {
					start(t, j)
				}
				time.Sleep(time.Minute + 4*time.Second)
				synctest.Wait()
				close(gone)
				for _, j := range jobs {
					stop(t, j)
				}
				mu.Lock()
				defer mu.Unlock()
				assert.Len(t, runs, n+c.lonely, "slots run")
				for name, k := range runs {
					if k != 1 {
						t.Errorf("%s ran %d times", name, k)
					}
				}
				switch {
				case c.dies:
					assert.Equal(t, n/2, other.claims, "the other node's claims: those the owner did not make")
					assert.Less(t, late["other j"], 2*time.Second, "the other node's last start")
				case c.skip:
					assert.Positive(t, other.claims, "the other node's claims")
					assert.LessOrEqual(t, late["other j"], 500*time.Millisecond, "the other node's last start")
				default:
					assert.Equal(t, c.lonely, other.claims, "the other node's claims")
					assert.Less(t, late["owner j"], 2100*time.Millisecond, "the owner's last start")
					assert.Greater(t, other.asks, 2, "looks")
					assert.Less(t, other.asks, 10, "looks")
					if c.lonely > 0 {
						assert.Equal(t, 500*time.Millisecond, late["other l"], "the lonely jobs' last start")
					}
				}
			})
		})
	}
}

// However long the owner takes to claim a herd, a node waits on for it no
// longer than half the lease, nor than half the time to the job's next
// slot: with a herd of 2s, a lease of 2s, or a period of 2s, makes the
// other node claim the rest of the first slots 1s after their due time.
func TestHandOffWaitsNoLongerThanFar(t *testing.T) {
	for _, c := range []struct {
		name   string
		lease  time.Duration
		period time.Duration // 0: Once
	}{{"half a lease", 2 * time.Second, 0}, {"half the period", 10 * time.Second, 2 * time.Second}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 400
				mem := schedule.NewMemoryStore(100)
				ownerOf := func(string) string { return "owner" }
				owner := &sharer{MemoryStore: mem, owns: func(string) bool { return true }, lease: c.lease, owner: ownerOf,
					claim: make(chan struct{}, 1), slow: func() error { time.Sleep(5 * time.Millisecond); return nil }}
				other := &sharer{MemoryStore: mem, owns: func(string) bool { return false }, lease: c.lease, owner: ownerOf}
				due := time.Now().Add(time.Minute)
				sched := schedule.Once(due)
				if c.period > 0 {
					sched = schedule.Between(schedule.Every(c.period), due, due.Add(c.period))
				}
				var mu sync.Mutex
				late := time.Duration(0)
				firsts := 0
				var jobs []*schedule.Job
				for _, s := range []*sharer{owner, other} {
					limit := schedule.NewRunLimit(1000)
					for i := range n {
						jobs = append(jobs, schedule.NewJob(fmt.Sprint("j", i), sched, func(_ context.Context, r schedule.Run) error {
							if s == other && r.Due.Equal(due) {
								mu.Lock()
								firsts++
								late = max(late, time.Since(r.Due))
								mu.Unlock()
							}
							return nil
						}, schedule.WithStore(s), schedule.WithRunLimit(limit)))
					}
				}
				for _, j := range jobs {
					start(t, j)
				}
				time.Sleep(time.Minute + 4*time.Second)
				synctest.Wait()
				for _, j := range jobs {
					stop(t, j)
				}
				assert.Positive(t, firsts, "first slots the other node ran")
				assert.LessOrEqual(t, late, time.Second, "the other node's last start of a first slot")
			})
		})
	}
}

// A slot handed off waits no more than a quarter of the time to the
// job's next slot, and half of it for a live owner, so that under
// OverlapSkip a waiting run never makes the next slot Skipped: with the
// owner not claiming, the other node runs every slot of a job every
// 400ms, in a RunLimit 200ms late (without one, at once).
func TestHandOffKeepsToThePeriod(t *testing.T) {
	for _, limited := range []bool{false, true} {
		t.Run(fmt.Sprint("limit=", limited), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				s := &sharer{MemoryStore: schedule.NewMemoryStore(100), owns: func(string) bool { return false }}
				opts := []schedule.Option{schedule.WithStore(s), schedule.WithOverlap(schedule.OverlapSkip)}
				if limited {
					opts = append(opts, schedule.WithRunLimit(schedule.NewRunLimit(4)))
				}
				var mu sync.Mutex
				var ran []string
				j := schedule.NewJob("j", schedule.Every(400*time.Millisecond), func(_ context.Context, r schedule.Run) error {
					mu.Lock()
					ran = append(ran, fmt.Sprintf("%v at +%v", r.Due.Sub(t0), time.Since(r.Due)))
					mu.Unlock()
					time.Sleep(50 * time.Millisecond)
					return nil
				}, opts...)
				start(t, j)
				time.Sleep(1450 * time.Millisecond)
				stop(t, j)
				late := "0s" // without a RunLimit, no hand-off
				if limited {
					late = "200ms"
				}
				assert.Equal(t, []string{"400ms at +" + late, "800ms at +" + late, "1.2s at +" + late}, ran)
			})
		})
	}
}

// A slot held for its owner is not a run in flight of this node: a
// RunNow on it starts at once under OverlapSkip, and the held slot, the
// owner not having claimed it, is Skipped when its wait is over (it runs
// then under OverlapAllow); and when both
// nodes move to a faster schedule during a hold, every slot runs on the
// owner, none Skipped for a run in flight that was only held.
func TestHandOffLeavesTheJobFree(t *testing.T) {
	for _, overlap := range []schedule.Overlap{schedule.OverlapSkip, schedule.OverlapAllow} {
		t.Run(fmt.Sprint("RunNow/", overlap), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				s := &sharer{MemoryStore: schedule.NewMemoryStore(100), owns: func(string) bool { return false }}
				var mu sync.Mutex
				var ran, skipped []string
				j := schedule.NewJob("j", schedule.Every(10*time.Second), func(_ context.Context, r schedule.Run) error {
					mu.Lock()
					ran = append(ran, fmt.Sprintf("%v %v at +%v", r.Reason, r.Due.Sub(t0), time.Since(t0)))
					mu.Unlock()
					return nil
				}, schedule.WithStore(s), schedule.WithGrace(8*time.Second), schedule.WithOverlap(overlap),
					schedule.WithRunLimit(schedule.NewRunLimit(4)), schedule.WithObserver(func(r schedule.Record) {
						if r.Status == schedule.Skipped {
							mu.Lock()
							skipped = append(skipped, fmt.Sprintf("%v %v: %s", r.Reason, r.Due.Sub(t0), r.Err))
							mu.Unlock()
						}
					}))
				start(t, j)
				time.Sleep(10*time.Second + 100*time.Millisecond)
				j.RunNow()
				time.Sleep(5 * time.Second)
				stop(t, j)
				mu.Lock()
				defer mu.Unlock()
				if overlap == schedule.OverlapAllow {
					assert.Equal(t, []string{"Manual 10.1s at +10.1s", "Scheduled 10s at +14s"}, ran)
					assert.Empty(t, skipped)
					return
				}
				// The held slot, older than the run handed since, does
				// not follow it: it is Skipped when its wait is over.
				assert.Equal(t, []string{"Manual 10.1s at +10.1s"}, ran)
				assert.Equal(t, []string{"Scheduled 10s: schedule: a run is in flight"}, skipped)
			})
		})
	}
	t.Run("SetSchedule", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			mem := schedule.NewMemoryStore(1000)
			jobs := map[string]*schedule.Job{}
			for _, node := range []string{"owner", "other"} {
				s := &sharer{MemoryStore: mem, owns: func(string) bool { return node == "owner" }}
				j := schedule.NewJob("j", schedule.Every(10*time.Second), func(context.Context, schedule.Run) error { return nil },
					schedule.WithStore(s), schedule.WithNode(node), schedule.WithGrace(8*time.Second),
					schedule.WithOverlap(schedule.OverlapSkip), schedule.WithRunLimit(schedule.NewRunLimit(4)))
				start(t, j)
				jobs[node] = j
			}
			time.Sleep(10*time.Second + 100*time.Millisecond)
			jobs["owner"].SetSchedule(schedule.Every(time.Second))
			jobs["other"].SetSchedule(schedule.Every(time.Second))
			time.Sleep(5 * time.Second)
			stop(t, jobs["owner"])
			stop(t, jobs["other"])
			h, err := mem.History(context.Background(), "j", 100)
			require.NoError(t, err)
			var got []string
			for _, r := range h {
				got = append(got, fmt.Sprintf("%v %v %s", r.Due.Sub(t0), r.Status, r.Node))
			}
			assert.Equal(t, []string{"15s Succeeded owner", "14s Succeeded owner", "13s Succeeded owner",
				"12s Succeeded owner", "11s Succeeded owner", "10s Succeeded owner"}, got)
		})
	})
}

// A Pause drops the slots held for their owner, with no record: a Resume
// within their wait does not bring them back, and the job runs its next
// slot as usual.
func TestHandOffPause(t *testing.T) {
	for _, held := range []bool{false, true} {
		name := "while its wake waits for the end of the hand-off"
		if held {
			name = "while it holds the slot"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				s := &sharer{MemoryStore: schedule.NewMemoryStore(100), owns: func(string) bool { return false }}
				var mu sync.Mutex
				var log []string
				j := schedule.NewJob("j", schedule.Every(10*time.Second), func(_ context.Context, r schedule.Run) error {
					mu.Lock()
					log = append(log, fmt.Sprintf("ran %v", r.Due.Sub(t0)))
					mu.Unlock()
					return nil
				}, schedule.WithStore(s), schedule.WithGrace(8*time.Second), schedule.WithRunLimit(schedule.NewRunLimit(4)),
					schedule.WithObserver(func(r schedule.Record) {
						mu.Lock()
						log = append(log, fmt.Sprintf("%v %v", r.Status, r.Due.Sub(t0)))
						mu.Unlock()
					}))
				start(t, j)
				time.Sleep(10*time.Second + 100*time.Millisecond)
				if held {
					for i := 0; !j.Waits() && i < 5000; i++ {
						time.Sleep(time.Millisecond) // to the end of the hand-off, when the slot is held
					}
					require.True(t, j.Waits(), "a job that holds its slot for its owner")
				} else {
					require.False(t, j.Waits(), "a job whose wake waits for the end of the hand-off holds nothing")
				}
				j.Pause()
				assert.False(t, j.Waits(), "a paused job keeps the list of its waits")
				j.Resume()
				time.Sleep(15 * time.Second)
				stop(t, j)
				mu.Lock()
				defer mu.Unlock()
				assert.Equal(t, []string{"ran 20s", "Succeeded 20s"}, log)
			})
		})
	}
}

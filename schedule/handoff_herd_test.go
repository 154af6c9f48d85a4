package schedule_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// A node wakes the jobs another node owns at the end of their slots'
// hand-off, not at their due time: until then it holds nothing for them,
// makes no state for them and asks the store nothing, so that a herd
// costs it nothing while the owner claims it. Here no owner claims: a job
// whose owner is gone by its due time is claimed then; one whose owner
// goes during the hand-off is claimed as it ends; the others are claimed
// once their wait for the owner is over (the Sharer has no lease, so that
// wait is half the grace period, herd or not).
func TestHandOffDefersTheWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		t0 := time.Now()
		var mu sync.Mutex
		gone := map[string]bool{} // the jobs this node owns: their owner is gone
		s := &sharer{MemoryStore: schedule.NewMemoryStore(1000), owns: func(job string) bool { return gone[job] }}
		limit := schedule.NewRunLimit(4096)
		ran := map[string]time.Duration{}
		var jobs []*schedule.Job
		for i := range n {
			name := fmt.Sprint("j", i)
			j := schedule.NewJob(name, schedule.Once(t0.Add(time.Minute)), func(_ context.Context, r schedule.Run) error {
				mu.Lock()
				ran[name] = time.Since(r.Due)
				mu.Unlock()
				return nil
			}, schedule.WithStore(s), schedule.WithRunLimit(limit))
			start(t, j)
			jobs = append(jobs, j)
		}
		s.mu.Lock()
		gone["j0"] = true // before the due time: claimed at once
		s.mu.Unlock()
		time.Sleep(time.Minute + 100*time.Millisecond)
		synctest.Wait()
		assert.Zero(t, limit.Held(), "slots held during the hand-off")
		for i, j := range jobs {
			if i != 0 && j.Active() {
				t.Errorf("%s made its state during the hand-off", j.Name())
			}
		}
		s.mu.Lock()
		assert.Zero(t, s.asks, "calls of Claimed during the hand-off")
		assert.Equal(t, 1, s.claims, "claims during the hand-off")
		gone["j1"] = true // its owner went during the hand-off
		s.mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		for _, j := range jobs {
			stop(t, j)
		}
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, n, len(ran), "slots run")
		assert.Equal(t, time.Duration(0), ran["j0"], "j0, whose owner was gone")
		assert.Equal(t, 250*time.Millisecond, ran["j1"], "j1, whose owner went during the hand-off")
		for name, late := range ran {
			if name != "j0" && name != "j1" && late != 500*time.Millisecond {
				t.Errorf("%s ran %v late, not when its wait for the owner ended", name, late)
			}
		}
	})
}

// A node takes a herd of 100 slots or more, held for one owner, for one
// the owner is claiming, even if the first look at them finds none
// claimed yet: the owner is slow to begin (its first claim takes 600ms,
// past the half grace period a live owner gets). It waits while the owner
// claims them, and claims none. A smaller herd (99) gets no such wait:
// the other node claims it half the grace period late. An owner that
// never begins (dead, and not yet seen so) is waited for a quarter of the
// way from there to half the lease (500ms + 4.5s/4), not until then.
// Every slot runs once.
func TestHandOffWaitsForAHerdItsOwnerHasNotBegun(t *testing.T) {
	for _, c := range []struct {
		n    int
		dead bool
	}{{99, false}, {100, false}, {100, true}} {
		n := c.n
		t.Run(fmt.Sprint(n, " dead=", c.dead), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := schedule.NewMemoryStore(100)
				ownerOf := func(string) string { return "owner" }
				begun := false
				owner := &sharer{MemoryStore: mem, owns: func(string) bool { return true }, lease: 10 * time.Second, owner: ownerOf,
					claim: make(chan struct{}, 1), slow: func() error {
						if !begun {
							begun = true
							time.Sleep(600 * time.Millisecond)
						}
						time.Sleep(time.Millisecond)
						return nil
					}}
				other := &sharer{MemoryStore: mem, owns: func(string) bool { return false }, lease: 10 * time.Second, owner: ownerOf}
				due := time.Now().Add(time.Minute)
				var mu sync.Mutex
				runs := map[string]int{}
				late := time.Duration(0)
				var jobs []*schedule.Job
				nodes := []*sharer{owner, other}
				if c.dead {
					nodes = nodes[1:] // the owner runs nothing
				}
				for _, s := range nodes {
					limit := schedule.NewRunLimit(4096)
					for i := range n {
						name := fmt.Sprint("j", i)
						jobs = append(jobs, schedule.NewJob(name, schedule.Once(due), func(_ context.Context, r schedule.Run) error {
							mu.Lock()
							runs[name]++
							late = max(late, time.Since(r.Due))
							mu.Unlock()
							return nil
						}, schedule.WithStore(s), schedule.WithRunLimit(limit)))
					}
				}
				for _, j := range jobs {
					start(t, j)
				}
				time.Sleep(time.Minute + 3*time.Second)
				synctest.Wait()
				if c.dead {
					for _, j := range jobs {
						stop(t, j)
					}
					mu.Lock()
					defer mu.Unlock()
					assert.Len(t, runs, n, "slots run")
					assert.Equal(t, n, other.claims, "the other node's claims")
					assert.Greater(t, late, 1500*time.Millisecond, "the last start: the wait for a herd not begun")
					assert.Less(t, late, 1700*time.Millisecond, "the last start: no longer than that wait")
					return
				}
				for _, j := range jobs {
					stop(t, j)
				}
				mu.Lock()
				defer mu.Unlock()
				assert.Len(t, runs, n, "slots run")
				for name, k := range runs {
					if k != 1 {
						t.Errorf("%s ran %d times", name, k)
					}
				}
				if n < 100 {
					assert.Equal(t, n, other.claims, "the other node's claims of a small herd")
				} else {
					assert.Zero(t, other.claims, "the other node's claims of a herd")
				}
			})
		})
	}
}

// A slot that a late wake (late: a machine too busy to wake its jobs on
// time) makes a catch-up is handed to its owner as well,
// while its hand-off may still wait (half a lease here, the herd's far):
// the other node, waking 1.5s late, past the grace period, finds each slot
// claimed by the owner and claims none. Waking 6s late, past that, it
// claims each slot at once, as any catch-up, and finds it taken. Every
// slot runs once, on the owner.
func TestHandOffOfALateWake(t *testing.T) {
	for _, c := range []struct {
		late   time.Duration
		claims int
	}{{1500 * time.Millisecond, 0}, {6 * time.Second, 20}} {
		t.Run(c.late.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 20
				mem := schedule.NewMemoryStore(100)
				owner := &sharer{MemoryStore: mem, owns: func(string) bool { return true }, lease: 10 * time.Second}
				other := &sharer{MemoryStore: mem, owns: func(string) bool { return false }, lease: 10 * time.Second}
				due := time.Now().Add(time.Minute)
				var mu sync.Mutex
				runs := map[string]int{}
				var jobs []*schedule.Job
				for _, s := range []*sharer{owner, other} {
					node := "owner"
					opts := []schedule.Option{schedule.WithStore(s), schedule.WithRunLimit(schedule.NewRunLimit(100))}
					if s == other {
						node = "other"
						opts = append(opts, schedule.WithScheduler(late(c.late)))
					}
					for i := range n {
						name := fmt.Sprint("j", i)
						jobs = append(jobs, schedule.NewJob(name, schedule.Once(due), func(context.Context, schedule.Run) error {
							mu.Lock()
							runs[node+" "+name]++
							mu.Unlock()
							return nil
						}, opts...))
					}
				}
				for _, j := range jobs {
					start(t, j)
				}
				time.Sleep(time.Minute + 30*time.Second)
				synctest.Wait()
				for _, j := range jobs {
					stop(t, j)
				}
				mu.Lock()
				defer mu.Unlock()
				assert.Len(t, runs, n, "slots run")
				for k, r := range runs {
					if r != 1 || !strings.HasPrefix(k, "owner ") {
						t.Errorf("%s ran %d times", k, r)
					}
				}
				assert.Equal(t, c.claims, other.claims, "the other node's claims")
			})
		})
	}
}

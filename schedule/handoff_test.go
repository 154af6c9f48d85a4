package schedule_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// sharer is a node's view of a MemoryStore shared with other nodes, as a
// Sharer: it owns the jobs owns says.
type sharer struct {
	*schedule.MemoryStore
	mu   sync.Mutex
	owns func(job string) bool
}

func (s *sharer) Owns(job string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.owns(job)
}

var _ schedule.Sharer = (*sharer)(nil)

// A job's owner claims each slot at its due time; the other node claims
// it a quarter of the grace period later, only to find it claimed: every
// slot runs once, on the owner, on time. With the owner gone, the other
// node runs each slot a quarter of the grace period late. This holds with
// and without a RunLimit, in which the hand-off holds no goroutine.
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
				assert.Equal(t, []string{"owner 10s at +0s", "owner 20s at +0s",
					"other 30s at +500ms", "other 40s at +500ms"}, ran)
			})
		})
	}
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
		assert.Equal(t, n, limit.Waiting())
		stop(t, jobs[0]) // stopped during its hand-off: it runs nothing
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, n-1, len(runs), "jobs that ran")
		for name, c := range runs {
			if c != 1 {
				t.Errorf("%s ran %d times", name, c)
			}
		}
		mu.Unlock()
		assert.Zero(t, limit.Waiting())
		for _, j := range jobs[1:] {
			stop(t, j)
		}
	})
}

package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// TestShareOfAHerd runs a herd of jobs of 300ms (900, 300 under the race
// detector, or SQLSTORE_SHARE_JOBS) due at once on three
// Stores that share a table, each job on all three: each slot runs once,
// none is left unrun, and each node runs its share, a third ± 5%, the
// jobs it owns, at the due time. A node that is not a job's owner asks
// a quarter of the grace period late, and finds the slot claimed. A run
// of the owner that started after that, or one taken over after a lease
// the machine let expire, tells nothing: withLease tries again with a
// longer lease and grace.
func TestShareOfAHerd(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		jobs := 900
		if testing.Short() || race {
			jobs = 300
		}
		if v := os.Getenv("SQLSTORE_SHARE_JOBS"); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, "SQLSTORE_SHARE_JOBS")
			jobs = n
		}
		nodes := []string{"a", "b", "c"}
		withLease(t, time.Second, func(lease time.Duration) bool {
			dsn := b.dsn(t)
			grace := lease
			var stores []*sqlstore.Store
			for _, n := range nodes {
				stores = append(stores, newStore(t, b, dsn, sqlstore.WithLease(lease), sqlstore.WithNode(n)))
			}
			due := time.Now().Add(3*lease + time.Second).Round(0)
			var mu sync.Mutex
			ran := map[string]int{}  // by node
			runs := map[string]int{} // by job
			late := time.Duration(0) // the latest start after the due time
			recovered := 0           // runs taken over: a lease the machine let expire
			var all []*schedule.Job
			for i, s := range stores {
				node := nodes[i]
				for k := range jobs {
					name := fmt.Sprint("share-", k)
					all = append(all, schedule.NewJob(name, schedule.Once(due), func(ctx context.Context, r schedule.Run) error {
						mu.Lock()
						if r.Reason == schedule.Recovered {
							recovered++
						} else {
							ran[node]++
							runs[name]++
						}
						late = max(late, time.Since(r.Due))
						mu.Unlock()
						sleepCtx(ctx, 300*time.Millisecond)
						return nil
					}, schedule.WithStore(s), schedule.WithNode(node), schedule.WithGrace(grace)))
				}
			}
			stopAll := func() {
				for _, j := range all {
					require.NoError(t, j.Stop(ctx))
				}
			}
			require.NoError(t, schedule.StartAll(ctx, all...))
			eventually(t, "each Store sees three nodes", func() bool {
				for _, s := range stores {
					if len(s.Sharing()) != len(nodes) {
						return false
					}
				}
				return true
			})
			if time.Until(due) < lease/4 {
				stopAll()
				t.Logf("the nodes saw each other %v before the due time", time.Until(due))
				return false
			}
			// Every job runs, or, on a machine too slow for the lease, has
			// a record saying why not (a claim that failed for longer than
			// the grace period is Skipped): that tells nothing, and the
			// test tries again. A job with neither is a slot lost.
			for deadline := time.Now().Add(patience); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				mu.Lock()
				n := len(runs)
				mu.Unlock()
				if n == jobs {
					break
				}
			}
			mu.Lock()
			var unrun []string
			for k := range jobs {
				if name := fmt.Sprint("share-", k); runs[name] == 0 {
					unrun = append(unrun, name)
				}
			}
			mu.Unlock()
			if len(unrun) > 0 {
				stopAll()
				reader := newStore(t, b, dsn)
				for _, name := range unrun {
					r, err := reader.Last(ctx, name)
					require.NoError(t, err, "%s never ran, and has no record", name)
					require.NotEqual(t, schedule.Succeeded, r.Status, "%s: %+v", name, r)
				}
				t.Logf("%d jobs did not run, each with a record: %v", len(unrun), unrun[:min(len(unrun), 5)])
				return false
			}
			time.Sleep(300*time.Millisecond + grace/2) // the others' claims, a quarter grace late
			stopAll()
			mu.Lock()
			defer mu.Unlock()
			for name, n := range runs {
				if n != 1 {
					t.Errorf("%s ran %d times, not counting takeovers", name, n)
				}
			}
			if late >= grace/4 || recovered > 0 {
				t.Logf("a run started %v after its due time, past the hand-off; %d taken over", late, recovered)
				return false
			}
			owned := map[string]int{}
			for k := range jobs {
				owned[sqlstore.OwnerOf(fmt.Sprint("share-", k), nodes)]++
			}
			t.Logf("runs by node %v; owned %v", ran, owned)
			delta := 0.05 // a third ± 5% of 900 or more; of fewer, the hash's shares vary more
			if jobs < 900 {
				delta = 0.08
			}
			for _, n := range nodes {
				assert.InDelta(t, 1.0/3, float64(ran[n])/float64(jobs), delta, "%s's share of %d: %v", n, jobs, ran)
				assert.Equal(t, owned[n], ran[n], "%s ran the jobs it owns", n)
			}
			return true
		})
	})
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// TestShareWhileNodesComeAndGo runs a herd of jobs every 500ms on three
// Stores; a fourth joins halfway, and one leaves later, so that for a
// while the nodes disagree on who owns what: some slots are claimed by
// two owners at once, some by none until the hand-off. Each slot still
// runs once, and none is left unrun. The jobs are under OverlapAllow: on
// a loaded machine a slot handed off, then claimed late, may still be in
// flight at the next, which OverlapSkip would then skip.
func TestShareWhileNodesComeAndGo(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const every = 500 * time.Millisecond
		jobs := 200
		if testing.Short() || race {
			jobs = 60
		}
		dsn := b.dsn(t)
		lease := 2 * time.Second // a view changes every half second
		var mu sync.Mutex
		runs := map[string]int{} // by job and due
		byNode := map[string]int{}
		start := func(node string) []*schedule.Job {
			s := newStore(t, b, dsn, sqlstore.WithLease(lease), sqlstore.WithNode(node))
			var js []*schedule.Job
			for k := range jobs {
				name := fmt.Sprint("herd-", k)
				js = append(js, schedule.NewJob(name, schedule.Every(every), func(_ context.Context, r schedule.Run) error {
					mu.Lock()
					runs[fmt.Sprint(name, " ", r.Due.UnixNano())]++
					byNode[node]++
					mu.Unlock()
					return nil
				}, schedule.WithStore(s), schedule.WithNode(node), schedule.WithMisfire(schedule.MisfireRunAll),
					schedule.WithOverlap(schedule.OverlapAllow)))
			}
			require.NoError(t, schedule.StartAll(ctx, js...))
			return js
		}
		stop := func(js []*schedule.Job) {
			for _, j := range js {
				require.NoError(t, j.Stop(ctx))
			}
		}
		a, b2, c := start("a"), start("b"), start("c")
		from := time.Now()
		time.Sleep(2 * time.Second)
		d := start("d")
		time.Sleep(2 * time.Second)
		stop(b2) // gone: its share waits a hand-off until the others see it so
		time.Sleep(2 * time.Second)
		to := time.Now().Add(-time.Second)
		unrun := func() []string {
			mu.Lock()
			defer mu.Unlock()
			var out []string
			for k := range jobs {
				sched := schedule.Every(every)
				for due := sched.Next(from); !due.After(to); due = sched.Next(due) {
					if runs[fmt.Sprint("herd-", k, " ", due.UnixNano())] == 0 {
						out = append(out, fmt.Sprint("herd-", k, " ", due.Sub(from).Round(time.Millisecond)))
					}
				}
			}
			return out
		}
		deadline := time.Now().Add(patience)
		for len(unrun()) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if u := unrun(); len(u) > 0 {
			t.Errorf("%d slots never ran: %v", len(u), u[:min(len(u), 20)])
			h, _ := newStore(t, b, dsn).History(ctx, strings.Fields(u[0])[0], 100)
			for _, r := range h {
				t.Logf("record: %v %v %v %s %d %s", r.Due.Sub(from).Round(time.Millisecond), r.Status, r.Reason, r.Node, r.Attempt, r.Err)
			}
		}
		stop(a)
		stop(c)
		stop(d)
		mu.Lock()
		defer mu.Unlock()
		for slot, n := range runs {
			if n != 1 {
				t.Errorf("%s ran %d times", slot, n)
			}
		}
		t.Logf("%d runs by node: %v", len(runs), byNode)
		for _, n := range []string{"a", "b", "c", "d"} {
			assert.NotZero(t, byNode[n], "%s ran nothing", n)
		}
	})
}

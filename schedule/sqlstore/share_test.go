package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// TestShareOfAHerd runs a herd of jobs of 300ms (900, 300 under the race
// detector, or SQLSTORE_SHARE_JOBS) due at once on three
// Stores that share a table, each job on all three: no slot runs twice
// but by a takeover, each runs or is reported (none is lost), and each
// node runs its share, a third ± 5%, the jobs it owns, at the due time. A
// node that is not a job's owner asks a quarter of the grace period late,
// and finds the slot claimed. Some delays of the machine tell nothing of
// the shares, and withLease tries again with a longer lease and grace: a
// run of the owner that started after that, one taken over after a lease
// the machine let expire, a slot reported Missed or Skipped because its
// claim ran out of time, a look at the claims that failed or was slow,
// and a view of the nodes that lapsed (claimedClock). A slot reported for
// any other reason fails the test.
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
		withLease(t, 2*time.Second, func(lease time.Duration) bool {
			dsn := b.dsn(t)
			grace := lease
			var stores []*claimedClock
			for _, n := range nodes {
				stores = append(stores, &claimedClock{Store: newStore(t, b, dsn, sqlstore.WithLease(lease), sqlstore.WithNode(n)), nodes: len(nodes)})
			}
			due := time.Now().Add(3*lease + time.Second).Round(0)
			var mu sync.Mutex
			ran := map[string]int{}                  // by node
			runs := map[string]int{}                 // by job
			late := time.Duration(0)                 // the latest start after the due time
			recovered := map[string]int{}            // by job: runs taken over, a lease the machine let expire
			reported := map[string]schedule.Record{} // by job: Missed or Skipped
			var all []*schedule.Job
			for i, s := range stores {
				node := nodes[i]
				for k := range jobs {
					name := fmt.Sprint("share-", k)
					all = append(all, schedule.NewJob(name, schedule.Once(due), func(ctx context.Context, r schedule.Run) error {
						mu.Lock()
						if r.Reason == schedule.Recovered {
							recovered[name]++
						} else {
							ran[node]++
							runs[name]++
						}
						late = max(late, time.Since(r.Due))
						mu.Unlock()
						sleepCtx(ctx, 300*time.Millisecond)
						return nil
					}, schedule.WithStore(s), schedule.WithNode(node), schedule.WithGrace(grace),
						schedule.WithObserver(func(r schedule.Record) {
							if notRun(r) {
								mu.Lock()
								reported[name] = r
								mu.Unlock()
							}
						})))
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
			// Every job runs, or, on a machine too slow for the lease, is
			// reported Missed or Skipped (a claim that failed for longer
			// than the grace period), or is taken over: that tells
			// nothing, and the test tries again. A job with none of these
			// is a slot lost.
			unrun := func() []string {
				mu.Lock()
				defer mu.Unlock()
				var out []string
				for k := range jobs {
					name := fmt.Sprint("share-", k)
					if _, ok := reported[name]; !ok && runs[name]+recovered[name] == 0 {
						out = append(out, name)
					}
				}
				return out
			}
			for deadline := time.Now().Add(patience); len(unrun()) > 0 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			if u := unrun(); len(u) > 0 {
				stopAll()
				reader := newStore(t, b, dsn)
				for _, name := range u[:min(len(u), 5)] {
					r, err := reader.Last(ctx, name)
					t.Errorf("%s neither ran nor was reported; its record: %+v, %v", name, r, err)
				}
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
			for _, r := range reported {
				if !slowClaim(r) {
					t.Errorf("%s reported %v: %s", r.Job, r.Status, r.Err)
				}
			}
			slow := false
			for _, s := range stores {
				slow = slow || s.Slow()
			}
			if late >= grace/4 || len(recovered) > 0 || len(reported) > 0 || slow {
				t.Logf("a run started %v after its due time, past the hand-off; %d taken over, %d reported; a look at the claims slow or failed: %v",
					late, len(recovered), len(reported), slow)
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
			for i, n := range nodes {
				assert.InDelta(t, 1.0/3, float64(ran[n])/float64(jobs), delta, "%s's share of %d: %v", n, jobs, ran)
				assert.Equal(t, owned[n], ran[n], "%s ran the jobs it owns", n)
				assert.Equal(t, owned[n], int(stores[i].Stats().Claims), "%s claimed the jobs it owns, no other", n)
			}
			return true
		})
	})
}

// notRun reports whether r says that its slot did not run, and no other
// node will run it: Missed, or Skipped but not by a Stop or Pause on this
// node, which leaves the slot to the others.
func notRun(r schedule.Record) bool {
	switch {
	case r.Status == schedule.Missed:
		return true
	case r.Status != schedule.Skipped:
		return false
	}
	return r.Err != "schedule: job stopped" && r.Err != "schedule: job paused"
}

// slowClaim reports whether r, a record of a slot that did not run
// (notRun), says what a machine too slow for the test does: the slot was
// Missed (its wake came past the grace period), or its claim ran out of
// time. Any other reason is a failure of the store or the library.
func slowClaim(r schedule.Record) bool {
	return r.Status == schedule.Missed ||
		strings.HasSuffix(r.Err, context.DeadlineExceeded.Error()) || strings.HasSuffix(r.Err, context.Canceled.Error())
}

// A claimedClock is a Store whose looks at which slots are claimed
// (Claimed) are timed, and whose view of the nodes is checked at each
// Owns: a look that fails, or takes as long as the hand-off gives it (a
// quarter lease, 1s to 10s), or a view that lapsed (heartbeats a lease
// late), makes the nodes claim slots they do not own, which is the
// machine's delay, not sharing gone wrong.
type claimedClock struct {
	*sqlstore.Store
	nodes int // in a view that has not lapsed
	slow  atomic.Bool
}

func (c *claimedClock) Owns(job string) bool {
	if len(c.Store.Sharing()) != c.nodes {
		c.slow.Store(true)
	}
	return c.Store.Owns(job)
}

func (c *claimedClock) Claimed(ctx context.Context, rs []schedule.Record) ([]bool, error) {
	start := time.Now()
	claimed, err := c.Store.Claimed(ctx, rs)
	if err != nil || time.Since(start) >= max(c.Lease()/4, time.Second) {
		c.slow.Store(true)
	}
	return claimed, err
}

// Slow reports whether a look at the claims failed or took too long, or
// the view of the nodes lapsed.
func (c *claimedClock) Slow() bool { return c.slow.Load() }

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// TestShareWhileNodesComeAndGo runs a herd of jobs every quarter lease
// (every 500ms, 60 jobs under the race detector, 200 without) for three
// leases on three Stores; a fourth joins after the first lease, and one
// leaves after the second, so that for a while the nodes disagree on who
// owns what: some slots are claimed by two owners at once, some by none
// until the hand-off. No slot runs twice but by a takeover, and each is
// run or reported (Missed, Skipped): none is lost. The jobs are under
// OverlapAllow: on a loaded machine a slot handed off, then claimed late,
// may still be in flight at the next, which OverlapSkip would then skip.
//
// A machine too slow for the load lets claims run out of time and slots
// go by: the slots reported Missed, or Skipped for a claim that ran out of
// time, tell nothing of the sharing, and withLease tries again with a
// longer lease and a period twice as long, half the load; a slot reported
// for any other reason fails the test. (Runs taken over tell no less: the run a Stop cut short,
// or whose lease expired, runs again, as it must.)
func TestShareWhileNodesComeAndGo(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		jobs := 200
		if testing.Short() || race {
			jobs = 60
		}
		withLease(t, 2*time.Second, func(lease time.Duration) bool {
			return comeAndGo(t, b, jobs, lease)
		})
	})
}

// comeAndGo runs TestShareWhileNodesComeAndGo once, with jobs jobs and a
// lease of lease, and reports whether it could tell.
func comeAndGo(t *testing.T, b backend, jobs int, lease time.Duration) (told bool) {
	dsn := b.dsn(t)
	every := lease / 4 // a view changes every half lease
	// The slots from first to end, three leases: first is a lease away,
	// for the three Stores to start; the fourth starts a lease after it,
	// and the second stops a lease later.
	n := time.Now().Add(lease).UnixNano()
	first := time.Unix(0, n-n%int64(every)).Add(every)
	end := first.Add(3 * lease)
	var slots []time.Time
	for due := first; !due.After(end); due = due.Add(every) {
		slots = append(slots, due)
	}
	type slot struct {
		job string
		due int64
	}
	var mu sync.Mutex
	runs := map[slot]int{}                 // not counting takeovers
	recovered := map[slot]int{}            // takeovers: a lease released, or let expire
	reported := map[slot]schedule.Record{} // notRun
	byNode := map[string]int{}
	start := func(node string) []*schedule.Job {
		s := newStore(t, b, dsn, sqlstore.WithLease(lease), sqlstore.WithNode(node))
		var js []*schedule.Job
		for k := range jobs {
			name := fmt.Sprint("herd-", k)
			js = append(js, schedule.NewJob(name, schedule.Between(schedule.Every(every), first, end), func(_ context.Context, r schedule.Run) error {
				mu.Lock()
				defer mu.Unlock()
				if r.Reason == schedule.Recovered {
					recovered[slot{name, r.Due.UnixNano()}]++
				} else {
					runs[slot{name, r.Due.UnixNano()}]++
				}
				byNode[node]++
				return nil
			}, schedule.WithStore(s), schedule.WithNode(node), schedule.WithMisfire(schedule.MisfireRunAll),
				schedule.WithOverlap(schedule.OverlapAllow), schedule.WithObserver(func(r schedule.Record) {
					if notRun(r) {
						mu.Lock()
						reported[slot{name, r.Due.UnixNano()}] = r
						mu.Unlock()
					}
				})))
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
	if !time.Now().Before(first) {
		stop(a)
		stop(b2)
		stop(c)
		t.Logf("the Stores started %v after the first slot", time.Since(first))
		return false
	}
	time.Sleep(time.Until(first.Add(lease)))
	d := start("d")
	time.Sleep(time.Until(first.Add(2 * lease)))
	stop(b2) // gone: its share waits a hand-off until the others see it so
	unaccounted := func() []slot {
		mu.Lock()
		defer mu.Unlock()
		var out []slot
		for k := range jobs {
			for _, due := range slots {
				s := slot{fmt.Sprint("herd-", k), due.UnixNano()}
				if _, ok := reported[s]; !ok && runs[s]+recovered[s] == 0 {
					out = append(out, s)
				}
			}
		}
		return out
	}
	time.Sleep(time.Until(end))
	for deadline := time.Now().Add(patience); len(unaccounted()) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	lost := unaccounted()
	stop(a)
	stop(c)
	stop(d)
	mu.Lock()
	defer mu.Unlock()
	if len(lost) > 0 {
		var some []string
		for _, s := range lost[:min(len(lost), 20)] {
			some = append(some, fmt.Sprint(s.job, " ", time.Unix(0, s.due).Sub(first)))
		}
		t.Errorf("%d slots neither ran nor were reported: %v", len(lost), some)
		h, _ := newStore(t, b, dsn).History(ctx, lost[0].job, 100)
		for _, r := range h {
			t.Logf("record: %v %v %v %s %d %s", r.Due.Sub(first), r.Status, r.Reason, r.Node, r.Attempt, r.Err)
		}
	}
	for s, n := range runs {
		if n > 1 {
			t.Errorf("%s %v ran %d times, not counting takeovers", s.job, time.Unix(0, s.due).Sub(first), n)
		}
	}
	for _, r := range reported {
		if !slowClaim(r) {
			t.Errorf("%s %v reported %v: %s", r.Job, r.Due.Sub(first), r.Status, r.Err)
		}
	}
	t.Logf("%d runs by node: %v; %d taken over, %d reported", len(runs), byNode, len(recovered), len(reported))
	if len(reported) > 0 {
		for _, r := range reported {
			t.Logf("for example: %s %v %v %s", r.Job, r.Due.Sub(first), r.Status, r.Err)
			break
		}
		return false
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		assert.NotZero(t, byNode[n], "%s ran nothing", n)
	}
	return true
}

package sqlstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// mostInFlight returns the most runs in flight at once among events, from
// each run's start to its end or quit: the replicas run on one machine,
// whose wall clock times their events. A run's events are printed once it
// has started and before it returns, so that runs seen at once were.
func mostInFlight(events []event) int {
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, e := range events {
		switch e.kind {
		case "start":
			edges = append(edges, edge{e.at, +1})
		case "end", "quit":
			edges = append(edges, edge{e.at, -1})
		}
	}
	// At one instant, an end comes before a start.
	slices.SortStableFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d
	})
	most, n := 0, 0
	for _, e := range edges {
		n += e.d
		most = max(most, n)
	}
	return most
}

// overlapCluster runs a job of 700 ms every 300 ms under the overlap
// policy overlap (and WithMaxParallel(maxParallel)) on three replica
// processes sharing b for 3 s, and returns the most runs in flight at
// once between them, and the fate of each slot due while all three were
// up but in the last second, from the store. With race, the replicas race
// for every slot (WithSharing(false)): had the job's owner claimed each
// slot first, the others' claims, a hand-off later, would find the slot
// recorded, and the count of the job's runs on other replicas would be
// left untried. Under buffer-all, each replica buffers one slot at most,
// so that the slots that do not fit are Skipped; the slots a stop finds
// buffered, or waiting for another replica's run, end with no record
// (another replica may run them), and may have waited two runs and more:
// the cluster runs 5 s, and the slots of its last 2.5 s are not checked.
func overlapCluster(t *testing.T, b backend, overlap string, maxParallel int, mutant string, race bool) (most int, fates map[schedule.Status]int) {
	buffer, run, tail := 0, 3*time.Second, time.Second
	if overlap == "buffer-all" {
		buffer, run, tail = 1, 5*time.Second, 2500*time.Millisecond
	}
	c := newCluster(t, b, replicaConfig{Every: 300 * time.Millisecond, Lease: 2 * time.Second, Misfire: schedule.MisfireRunOnce,
		MinRun: 700 * time.Millisecond, MaxRun: 700 * time.Millisecond, Overlap: overlap, MaxParallel: maxParallel, Mutant: mutant,
		Race: race, Buffer: buffer})
	for i := range 3 {
		c.start(fmt.Sprint("n", i))
	}
	from := time.Now()
	time.Sleep(run)
	to := time.Now().Add(-tail)
	for _, p := range c.procs {
		c.stop(p)
	}
	recs := map[int64]schedule.Record{}
	h, err := newStore(t, b, c.dsn).History(ctx, replicaJob, 1000)
	require.NoError(t, err)
	for _, r := range h {
		recs[r.Due.UnixNano()] = r
	}
	fates = map[schedule.Status]int{}
	for _, due := range c.slotsBetween(from, to) {
		r, ok := recs[due]
		if !ok {
			t.Errorf("slot %v has no record", time.Unix(0, due).UTC())
			continue
		}
		fates[r.Status]++
	}
	return mostInFlight(c.snapshot()), fates
}

// TestOverlapAcrossReplicas runs a job whose runs last more than two of its
// periods on three replica processes, under each overlap policy: the runs
// in flight on the three never exceed what the policy allows one job, the
// slots it does not run are Skipped in the store, and each slot has its
// one record. (Before, each replica's policy counted its own runs: three
// ran at once under OverlapSkip.)
func TestOverlapAcrossReplicas(t *testing.T) {
	for _, tc := range []struct {
		overlap     string
		maxParallel int
		most        int
		share       bool // the replicas share the job (the default), not race for it
	}{
		{"skip", 0, 1, false}, {"buffer-one", 0, 1, false}, {"buffer-all", 0, 1, false}, {"replace", 0, 1, false}, {"allow", 2, 2, false},
		{"skip", 0, 1, true},
	} {
		t.Run(fmt.Sprintf("%s/%d/share=%v", tc.overlap, tc.maxParallel, tc.share), func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T, b backend) {
				most, fates := overlapCluster(t, b, tc.overlap, tc.maxParallel, "", !tc.share)
				t.Logf("most runs in flight at once: %d; the slots: %v", most, fates)
				assert.LessOrEqual(t, most, tc.most, "runs in flight at once on the three replicas")
				if tc.overlap != "replace" {
					assert.NotZero(t, fates[schedule.Skipped], "no slot was Skipped: the test proves nothing")
				} else {
					assert.NotZero(t, fates[schedule.Canceled], "no run was replaced: the test proves nothing")
				}
			})
		})
	}
}

// A store whose claims do not count the job's runs on other replicas (the
// overlap policy per process, as before) fails TestOverlapAcrossReplicas's
// check; one that records Canceled what a stopping replica hands over
// fails TestRollingRestart's.
func TestClusterMutants(t *testing.T) {
	b := backends()[0] // SQLite: one backend shows it
	t.Run("overlap per replica", func(t *testing.T) {
		most, _ := overlapCluster(t, b, "skip", 0, "overlap per replica", true)
		assert.Greater(t, most, 1, "the mutant's runs never overlapped")
	})
	t.Run("release records Canceled", func(t *testing.T) {
		lost, _, _ := rolling(t, b, deployConfig{Lease: 2 * time.Second, Run: 1500 * time.Millisecond, Mutant: "release records Canceled"}, 10)
		assert.NotZero(t, lost, "the mutant lost no slot")
	})
}

// Under OverlapReplace, a RunNow on one replica's Job cancels the run in
// flight on another's: that run learns it at its next renewal, within a
// third of a lease, its context's cause is ErrReplaced and its record
// Canceled; the new run starts once it has returned.
func TestReplaceAcrossStores(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		withLease(t, 900*time.Millisecond, func(lease time.Duration) bool { return replaceAcross(t, b, lease) })
	})
}

// replaceAcross is TestReplaceAcrossStores with a lease: it reports false,
// having checked nothing, if a node's lease ran out meanwhile (a busy
// machine), since a takeover of a's claim then runs the slot again.
func replaceAcross(t *testing.T, b backend, lease time.Duration) (told bool) {
	dsn := b.dsn(t)
	var mu sync.Mutex
	var log []string
	var ended time.Time   // when a's run, replaced, returned
	var started time.Time // when b's began
	var jobs []*schedule.Job
	var clocks []*leaseClock
	for _, node := range []string{"a", "b"} {
		work := func(ctx context.Context, r schedule.Run) error {
			mu.Lock()
			log = append(log, "start "+node)
			if node == "b" {
				started = time.Now()
			}
			mu.Unlock()
			select {
			case <-time.After(10 * time.Second):
			case <-ctx.Done():
			}
			mu.Lock()
			defer mu.Unlock()
			log = append(log, fmt.Sprintf("end %s %v", node, context.Cause(ctx)))
			if node == "a" {
				ended = time.Now()
			}
			return context.Cause(ctx)
		}
		c := newLeaseClock(newStore(t, b, dsn, sqlstore.WithLease(lease)))
		clocks = append(clocks, c)
		j := schedule.NewJob("j", schedule.Every(time.Hour), work, schedule.WithStore(c), schedule.WithNode(node),
			schedule.WithOverlap(schedule.OverlapReplace))
		require.NoError(t, j.Start(ctx))
		jobs = append(jobs, j)
	}
	jobs[0].RunNow() // a's run, in flight
	time.Sleep(100 * time.Millisecond)
	asked := time.Now()
	jobs[1].RunNow() // b's replaces it
	deadline := time.Now().Add(patience)
	for {
		mu.Lock()
		done := !started.IsZero()
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, j := range jobs {
		require.NoError(t, j.Cancel(ctx))
	}
	if clocks[0].Late() || clocks[1].Late() {
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	require.False(t, started.IsZero(), "b's run never started: %v", log)
	require.Len(t, log, 4, "%v", log)
	assert.Equal(t, "end a "+schedule.ErrReplaced.Error(), log[1], "a's run was replaced: %v", log)
	assert.False(t, started.Before(ended), "b's run started before a's returned")
	// a learns it at its next renewal, a third of a lease after its
	// claim at most (the rest is the database and this machine), and
	// not at its end, 10 s after it began.
	t.Logf("a's run learnt it was replaced %v after the RunNow", ended.Sub(asked))
	assert.Less(t, ended.Sub(asked), max(5*time.Second, lease))
	h, err := newStore(t, b, dsn).History(ctx, "j", 10)
	require.NoError(t, err)
	require.Len(t, h, 2)
	assert.Equal(t, schedule.Canceled, h[1].Status, "a's run")
	assert.Contains(t, h[1].Err, "replaced")
	assert.Equal(t, "a", h[1].Node)
	return true
}

// handOver runs a job of one run on two replicas' Stores, a's run lasting
// run (until it is cancelled, if zero) and b's a second, ends the replica
// a with end, given its Job, then returns the store's record of the slot
// once it is final, and the error end returned.
func handOver(t *testing.T, b backend, run time.Duration, end func(*schedule.Job) error) (schedule.Record, error) {
	dsn := b.dsn(t)
	const lease = 900 * time.Millisecond
	runs := make(chan string, 10)
	var jobs []*schedule.Job
	for _, node := range []string{"a", "b"} {
		d := time.Second
		if node == "a" {
			d = run
		}
		s := newStore(t, b, dsn, sqlstore.WithLease(lease))
		j := schedule.NewJob("j", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
			runs <- node
			var done <-chan time.Time
			if d > 0 {
				done = time.After(d)
			}
			select {
			case <-done:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}, schedule.WithStore(s), schedule.WithNode(node))
		require.NoError(t, j.Start(ctx))
		jobs = append(jobs, j)
	}
	jobs[0].RunNow()
	require.Equal(t, "a", <-runs)
	err := end(jobs[0])
	s := newStore(t, b, dsn)
	var last schedule.Record
	eventually(t, "a final record of the slot", func() bool {
		last, _ = s.Last(ctx, "j")
		return last.Status == schedule.Succeeded || last.Status == schedule.Canceled
	})
	require.NoError(t, jobs[1].Stop(ctx))
	return last, err
}

// Shutdown lets the run finish while its context lasts; once it is done,
// it cuts the run short and hands it over: the other replica takes the
// slot over within a quarter lease, Recovered, Attempt 2, and runs it to
// its end. Stop on a store with a lease hands over at once; Cancel records
// the run Canceled, and no replica runs it again.
func TestHandOverAcrossStores(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		t.Run("Shutdown, long enough", func(t *testing.T) {
			r, err := handOver(t, b, time.Second, func(j *schedule.Job) error { return j.Shutdown(ctx) })
			require.NoError(t, err)
			assert.Equal(t, "Succeeded Manual a 1", fmt.Sprint(r.Status, " ", r.Reason, " ", r.Node, " ", r.Attempt))
		})
		t.Run("Shutdown, cut short", func(t *testing.T) {
			r, err := handOver(t, b, 0, func(j *schedule.Job) error {
				c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				return j.Shutdown(c)
			})
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, "Succeeded Recovered b 2", fmt.Sprint(r.Status, " ", r.Reason, " ", r.Node, " ", r.Attempt))
		})
		t.Run("Stop", func(t *testing.T) {
			r, err := handOver(t, b, 0, func(j *schedule.Job) error { return j.Stop(ctx) })
			require.NoError(t, err)
			assert.Equal(t, "Succeeded Recovered b 2", fmt.Sprint(r.Status, " ", r.Reason, " ", r.Node, " ", r.Attempt))
		})
		t.Run("Cancel", func(t *testing.T) {
			r, err := handOver(t, b, 0, func(j *schedule.Job) error { return j.Cancel(ctx) })
			require.NoError(t, err)
			assert.Equal(t, "Canceled Manual a 1", fmt.Sprint(r.Status, " ", r.Reason, " ", r.Node, " ", r.Attempt))
		})
	})
}

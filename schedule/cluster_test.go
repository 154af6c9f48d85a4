package schedule_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// replicas starts n Jobs named "j" on store, as nodes a, b, c..., which run
// f every period with opts, and returns them.
func replicas(t *testing.T, n int, store schedule.Store, period time.Duration, f schedule.Func, opts ...schedule.Option) []*schedule.Job {
	t.Helper()
	var js []*schedule.Job
	for i := range n {
		o := append([]schedule.Option{schedule.WithStore(store), schedule.WithNode(string(rune('a' + i)))}, opts...)
		j := schedule.NewJob("j", schedule.Every(period), f, o...)
		start(t, j)
		js = append(js, j)
	}
	return js
}

// fates returns the status of each slot of job j the store holds, by
// "due status" lines, oldest first.
func fates(t *testing.T, store schedule.Store) []string {
	t.Helper()
	h, err := store.History(context.Background(), "j", 1000)
	require.NoError(t, err)
	var s []string
	for i := len(h) - 1; i >= 0; i-- {
		s = append(s, since(h[i].Due)+" "+h[i].Status.String())
	}
	return s
}

// overlapScenario runs three Jobs of one name sharing a MemoryStore, each
// a run of work every second under opts, for d, and returns the most runs
// in flight at once between them, their starts, and the fate of each slot
// in the store.
func overlapScenario(t *testing.T, work, d time.Duration, opts ...schedule.Option) (maxRun int, starts, slots []string) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(100)
		js := replicas(t, 3, store, time.Second, l.work(work), append(opts, schedule.WithObserver(l.observe))...)
		time.Sleep(d)
		for _, j := range js {
			stop(t, j)
		}
		maxRun, starts, slots = l.maxRun, l.starts(), fates(t, store)
	})
	return maxRun, starts, slots
}

// Three Jobs of one name sharing a store are one job to the overlap
// policy: under OverlapSkip, a run of 2.5 s every second never has another
// run beside it on any of them, and each slot that fell due meanwhile is
// Skipped, in the store once.
func TestClusterOverlapSkip(t *testing.T) {
	maxRun, starts, slots := overlapScenario(t, 2500*time.Millisecond, 9800*time.Millisecond)
	assert.Equal(t, 1, maxRun, "runs in flight at once: %v", starts)
	assert.Equal(t, []string{"1s Succeeded", "2s Skipped", "3s Skipped", "4s Succeeded", "5s Skipped", "6s Skipped",
		"7s Succeeded", "8s Skipped", "9s Skipped"}, slots)
}

// Under OverlapBufferOne across three Jobs, one run follows the run in
// flight at once, for the latest slot that fell due meanwhile, whichever
// Job runs it; the slots it superseded are Skipped in the store.
func TestClusterOverlapBufferOne(t *testing.T) {
	maxRun, starts, slots := overlapScenario(t, 2400*time.Millisecond, 10500*time.Millisecond,
		schedule.WithOverlap(schedule.OverlapBufferOne))
	assert.Equal(t, 1, maxRun, "runs in flight at once: %v", starts)
	// 1s runs until 3.4s; 3s, the latest due meanwhile, at once after it,
	// until 5.8s; then 5s, until 8.2s; then 8s.
	assert.Equal(t, []string{"1s start Scheduled due 1s", "3.4s start Scheduled due 3s",
		"5.8s start Scheduled due 5s", "8.2s start Scheduled due 8s"}, starts)
	assert.Equal(t, []string{"1s Succeeded", "2s Skipped", "3s Succeeded", "4s Skipped", "5s Succeeded",
		"6s Skipped", "7s Skipped", "8s Canceled", "9s Skipped"}, slots, "10s, buffered, is dropped by Stop: another node may run it")
}

// Under OverlapBufferAll across three Jobs, every slot that fell due
// during a run runs after it, one after another, in the order they fell
// due, whichever Job runs each; none runs twice, and none beside another.
func TestClusterOverlapBufferAll(t *testing.T) {
	maxRun, starts, slots := overlapScenario(t, 2400*time.Millisecond, 10500*time.Millisecond,
		schedule.WithOverlap(schedule.OverlapBufferAll))
	assert.Equal(t, 1, maxRun, "runs in flight at once: %v", starts)
	var dues []string
	for _, s := range starts {
		dues = append(dues, s[strings.LastIndex(s, " ")+1:])
	}
	assert.Equal(t, []string{"1s", "2s", "3s", "4s"}, dues, "each slot in turn: %v", starts)
	assert.Equal(t, []string{"1s Succeeded", "2s Succeeded", "3s Succeeded", "4s Canceled"}, slots[:4])
}

// Under OverlapAllow with WithMaxParallel(2), three Jobs never have more
// than two runs in flight between them, and the slots over the limit are
// Skipped.
func TestClusterMaxParallel(t *testing.T) {
	maxRun, starts, slots := overlapScenario(t, 3500*time.Millisecond, 9500*time.Millisecond,
		schedule.WithOverlap(schedule.OverlapAllow), schedule.WithMaxParallel(2))
	assert.Equal(t, 2, maxRun, "runs in flight at once: %v", starts)
	assert.Equal(t, []string{"1s Succeeded", "2s Succeeded", "3s Skipped", "4s Skipped"}, slots[:4])
}

// Under OverlapReplace, a RunNow on one Job cancels the run in flight on
// another (its context's cause is ErrReplaced, its record Canceled), and
// starts once that run has returned, not before.
func TestClusterOverlapReplace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(100)
		js := replicas(t, 3, store, time.Minute, l.work(30*time.Second),
			schedule.WithOverlap(schedule.OverlapReplace), schedule.WithObserver(l.observe))
		time.Sleep(70 * time.Second) // 1m runs until 1m30s
		_, other := runningJob(t, store, js)
		other.RunNow() // on another Job: the run in flight is asked to end
		time.Sleep(40 * time.Second)
		for _, j := range js {
			stop(t, j)
		}
		assert.Equal(t, 1, l.maxRun, "runs in flight at once: %v", l.starts())
		recs := l.recs()
		require.NotEmpty(t, recs)
		assert.Equal(t, schedule.Canceled, recs[0].Status)
		assert.Equal(t, at(time.Minute), recs[0].Due)
		assert.Contains(t, recs[0].Err, schedule.ErrReplaced.Error())
		assert.Equal(t, at(70*time.Second), recs[0].End, "cancelled at once")
		starts := l.starts()
		require.Len(t, starts, 2, "%v", starts)
		assert.Contains(t, starts[1], "start Manual due 1m10s")
		assert.Equal(t, "1m10.05s start Manual due 1m10s", starts[1], "the new run starts at its first claim after the old one returned")
	})
}

// nodeOf returns the node name replicas gave j, the i-th of js.
func nodeOf(j *schedule.Job, js []*schedule.Job) string {
	return string(rune('a' + slices.Index(js, j)))
}

// The scenarios of the overlap policies across replicas see runs
// overlap when a claim asks nothing of the runs on other nodes (the policy
// per process), and those of the hand-over see no slot taken over when a
// stopping Job cancels its runs.
func TestClusterMutants(t *testing.T) {
	// Under the mutant, a Job's own Skipped record of a slot may reach the
	// store before another Job claims it, and keep it from running: which
	// comes first is the goroutines' order, so the scenarios run long
	// enough for several such slots, and one overlap of any is the proof.
	restore := schedule.SetMutant(schedule.ClusterMutants["the overlap policy per process"])
	most := 0
	for _, tc := range []struct {
		name string
		opts []schedule.Option
	}{
		{"OverlapSkip", nil},
		{"OverlapBufferOne", []schedule.Option{schedule.WithOverlap(schedule.OverlapBufferOne)}},
		{"OverlapBufferAll", []schedule.Option{schedule.WithOverlap(schedule.OverlapBufferAll)}},
		{"MaxParallel(1)", []schedule.Option{schedule.WithOverlap(schedule.OverlapAllow), schedule.WithMaxParallel(1)}},
	} {
		maxRun, _, _ := overlapScenario(t, 2500*time.Millisecond, 15500*time.Millisecond, tc.opts...)
		t.Logf("%s, the policy per process: %d runs at once at most", tc.name, maxRun)
		most = max(most, maxRun)
	}
	assert.Greater(t, most, 1, "the Jobs never ran at once")
	restore()
	restore = schedule.SetMutant(schedule.ClusterMutants["a stopping job cancels, not hands over"])
	defer restore()
	assert.Equal(t, []string{"1m0s Canceled Scheduled 1m0s-1m3s"}, shutdownScenario(t, 2*time.Second))
	assert.Equal(t, []string{"1m0s Canceled Scheduled 1m0s-1m1s"}, stopScenario(t, "Stop"))
}

// shutdownScenario runs two Jobs of one name sharing a MemoryStore, each a
// run of 20 s every minute; at 1m1s it shuts the one running down with a
// context of grace, and returns the records the two Observers got by
// 1m31s.
func shutdownScenario(t *testing.T, grace time.Duration) []string {
	var summary []string
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(100)
		js := replicas(t, 2, store, time.Minute, l.work(20*time.Second), schedule.WithObserver(l.observe))
		time.Sleep(61 * time.Second)
		runner, other := runningJob(t, store, js)
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		began := time.Now()
		err := runner.Shutdown(ctx)
		if grace < 19*time.Second {
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, grace, time.Since(began), "Shutdown returns once its cancelled run has returned")
		} else {
			assert.NoError(t, err)
			assert.Equal(t, at(80*time.Second), time.Now(), "Shutdown returns once its run has finished")
		}
		time.Sleep(30 * time.Second)
		stop(t, other)
		assert.Equal(t, 1, l.maxRun)
		summary = l.summary()
		if len(summary) == 2 {
			assert.Equal(t, 2, l.recs()[1].Attempt)
		}
	})
	return summary
}

// Shutdown lets the run in flight finish until its context is done, then
// cancels it and hands it over: another Job sharing the store takes the
// slot over at once, Recovered, at Attempt 2, and runs it to its end.
// Shutdown returns the context's error once the run has returned.
func TestShutdownHandsOver(t *testing.T) {
	assert.Equal(t, []string{"1m0s Released Scheduled 1m0s-1m3s", "1m0s Succeeded Recovered 1m3s-1m23s"},
		shutdownScenario(t, 2*time.Second))
}

// Shutdown whose runs finish before its context is done returns nil once
// they have, and their outcomes are theirs.
func TestShutdownWaitsForTheRuns(t *testing.T) {
	assert.Equal(t, []string{"1m0s Succeeded Scheduled 1m0s-1m20s"}, shutdownScenario(t, time.Minute))
}

// runningJob returns the Job of js whose run is in flight in store, and
// another.
func runningJob(t *testing.T, store schedule.Store, js []*schedule.Job) (runner, other *schedule.Job) {
	t.Helper()
	last, err := store.Last(context.Background(), "j")
	require.NoError(t, err)
	require.Equal(t, schedule.Running, last.Status)
	for _, j := range js {
		if nodeOf(j, js) == last.Node {
			runner = j
		} else if other == nil {
			other = j
		}
	}
	require.NotNil(t, runner)
	return runner, other
}

// stopScenario runs two Jobs of one name sharing a store with a 9 s
// lease, each a run of 20 s every minute; at 1m1s it stops the one running
// (how: "Stop" or "Cancel"), and returns the records the two Observers got
// by 1m31s.
func stopScenario(t *testing.T, how string) []string {
	var summary []string
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := newLeaseStore(9 * time.Second)
		js := replicas(t, 2, store, time.Minute, l.work(20*time.Second), schedule.WithObserver(l.observe))
		time.Sleep(61 * time.Second)
		runner, other := runningJob(t, store, js)
		if how == "Stop" {
			require.NoError(t, runner.Stop(context.Background()))
		} else {
			require.NoError(t, runner.Cancel(context.Background()))
		}
		time.Sleep(30 * time.Second)
		stop(t, other)
		summary = l.summary()
	})
	return summary
}

// Stop on a SharedStore with a lease hands the runs it cuts short over, as
// a deploy does: the other Job takes the slot over at once. Cancel records
// them Canceled, and no Job runs them again.
func TestStopHandsOverOnALeaseStore(t *testing.T) {
	assert.Equal(t, []string{"1m0s Released Scheduled 1m0s-1m1s", "1m0s Succeeded Recovered 1m1s-1m21s"}, stopScenario(t, "Stop"))
	assert.Equal(t, []string{"1m0s Canceled Scheduled 1m0s-1m1s"}, stopScenario(t, "Cancel"))
}

// A Func that returns nil once Stop cancelled it has done its work: its
// slot is Succeeded, not handed over.
func TestStopAfterTheWorkIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := newLeaseStore(9 * time.Second)
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(ctx context.Context, r schedule.Run) error {
			<-ctx.Done()
			return nil
		}, schedule.WithStore(store), schedule.WithNode("a"), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(61 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{"1m0s Succeeded Scheduled 1m0s-1m1s"}, l.summary())
	})
}

// A Func that calls runtime.Goexit on a MemoryStore, whose claims never
// expire, leaves its slot Failed: it would otherwise count as a run in
// flight for good, and every later slot of the job be Skipped.
func TestGoexitOnAMemoryStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		n := 0
		j := schedule.NewJob("j", schedule.Every(time.Second), func(ctx context.Context, r schedule.Run) error {
			n++
			if n == 1 {
				runtime.Goexit()
			}
			return nil
		}, schedule.WithStore(store), schedule.WithNode("a"))
		start(t, j)
		time.Sleep(3500 * time.Millisecond)
		stop(t, j)
		assert.Equal(t, []string{"1s Failed", "2s Succeeded", "3s Succeeded"}, fates(t, store))
		h, err := store.History(context.Background(), "j", 10)
		require.NoError(t, err)
		assert.True(t, strings.Contains(h[2].Err, "Goexit"), h[2].Err)
	})
}

package cron_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A recorder keeps the Records an Observer receives.
type recorder struct {
	mu      sync.Mutex
	records []schedule.Record
}

func (r *recorder) observe(rec schedule.Record) {
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
}

// of returns the records of job with status s.
func (r *recorder) of(job string, s schedule.Status) []schedule.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []schedule.Record
	for _, rec := range r.records {
		if rec.Job == job && rec.Status == s {
			out = append(out, rec)
		}
	}
	return out
}

// A paused task is loaded, listed and has a job, paused: its slots do not
// run, and are not caught up when its definition resumes it. Pausing and
// resuming by definition keeps the task's job: a run in flight goes on,
// and the job is resumed at once, where a new job would wait for it.
func TestTablePausedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 2500*time.Millisecond)}, cron.WithLocation(time.UTC))
		ctx := context.Background()
		t0 := time.Now().UTC()
		a, b := task("a", "h", "* * * * * *"), task("b", "h", "* * * * * *")
		a.Paused = true
		ch, err := tab.Apply(ctx, []cron.Task{a, b})
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Added: []string{"a", "b"}}, ch)
		ts := tab.Tasks()
		require.Len(t, ts, 2)
		assert.True(t, ts[0].Task.Paused)
		assert.Zero(t, ts[0].Next)
		assert.False(t, ts[1].Task.Paused)
		assert.Equal(t, t0.Add(time.Second), ts[1].Next)

		time.Sleep(10 * time.Second)
		assert.Empty(t, l.of("a"), "a paused task runs nothing")
		assert.NotEmpty(t, l.of("b"))

		a.Paused = false
		ch, err = tab.Apply(ctx, []cron.Task{a, b})
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Changed: []string{"a"}}, ch)
		next, _ := tab.Next("a")
		assert.Equal(t, t0.Add(11*time.Second), next, "resumed: its next slot is the first after now")
		time.Sleep(1500 * time.Millisecond) // the run of 11s is in flight
		synctest.Wait()
		require.Len(t, l.of("a"), 1)
		assert.Equal(t, t0.Add(11*time.Second), l.of("a")[0].due, "the slots of the pause are not caught up")

		// Paused and resumed while its run is in flight: the same job.
		a.Paused = true
		ch, err = tab.Apply(ctx, []cron.Task{a, b})
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Changed: []string{"a"}}, ch)
		a.Paused = false
		_, err = tab.Apply(ctx, []cron.Task{a, b})
		require.NoError(t, err)
		next, _ = tab.Next("a")
		assert.Equal(t, t0.Add(12*time.Second), next, "a new job would wait for the run in flight")
		time.Sleep(5 * time.Second)
		require.NoError(t, tab.Stop(ctx))
		assert.False(t, l.of("a")[0].cancelled, "pausing does not cancel the run in flight")
		assert.Zero(t, l.overlaps)
	})
}

// Without a Source, Pause and Resume act on the Table's job: a task paused
// stays paused through Applies that leave its definition's Paused as it
// was, even one that gives it a new job, until Resume, or an Apply that
// changes its Paused.
func TestTablePauseResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC))
		ctx := context.Background()
		a, b := task("a", "h", "* * * * * *"), task("b", "h", "* * * * * *")
		_, err := tab.Apply(ctx, []cron.Task{a, b})
		require.NoError(t, err)
		runs := func(d time.Duration) int {
			before := len(l.of("a"))
			time.Sleep(d)
			synctest.Wait()
			return len(l.of("a")) - before
		}
		paused := func() bool {
			for _, s := range tab.Tasks() {
				if s.Task.Name == "a" {
					return s.Task.Paused
				}
			}
			t.Fatal("a is not listed")
			return false
		}
		assert.Equal(t, 3, runs(3500*time.Millisecond))

		require.NoError(t, tab.Pause("a"))
		require.NoError(t, tab.Pause("a"), "pausing a paused task does nothing")
		assert.True(t, paused())
		assert.Zero(t, runs(3*time.Second))
		ch, err := tab.Apply(ctx, []cron.Task{a, b})
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{}, ch)
		assert.Zero(t, runs(3*time.Second), "the same definitions again leave it paused")
		a.Misfire = "skip" // a new job
		ch, err = tab.Apply(ctx, []cron.Task{a, b})
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Changed: []string{"a"}}, ch)
		assert.Zero(t, runs(3*time.Second), "its new job starts paused")
		assert.True(t, paused())

		require.NoError(t, tab.Resume("a"))
		assert.False(t, paused())
		assert.Equal(t, 3, runs(3*time.Second))

		// The definition's change wins: paused by it, resumed by Resume,
		// paused by Pause and resumed by it.
		a.Paused = true
		_, err = tab.Apply(ctx, []cron.Task{a, b})
		require.NoError(t, err)
		assert.Zero(t, runs(3*time.Second))
		require.NoError(t, tab.Resume("a"))
		assert.Equal(t, 3, runs(3*time.Second))
		require.NoError(t, tab.Pause("a"))
		a.Paused = false
		_, err = tab.Apply(ctx, []cron.Task{a, b})
		require.NoError(t, err)
		assert.False(t, paused())
		assert.Equal(t, 3, runs(3*time.Second))

		err = tab.Pause("nobody")
		assert.ErrorIs(t, err, cron.ErrUnknownTask)
		assert.EqualError(t, err, `cron: unknown task "nobody"`)
		assert.ErrorIs(t, tab.Resume("nobody"), cron.ErrUnknownTask)

		require.NoError(t, tab.Stop(ctx))
		assert.ErrorIs(t, tab.Pause("a"), cron.ErrTableStopped)
		assert.ErrorIs(t, tab.Resume("a"), cron.ErrTableStopped)
		assert.ErrorIs(t, tab.RunNow("a"), cron.ErrTableStopped)
	})
}

// RunNow runs a task at once, with Reason Manual, under its overlap
// policy.
func TestTableRunNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		var rec recorder
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 1500*time.Millisecond)}, cron.WithLocation(time.UTC),
			cron.WithJobOptions(schedule.WithObserver(rec.observe)))
		ctx := context.Background()
		t0 := time.Now().UTC()
		skip, allow := task("skip", "h", "@yearly"), task("allow", "h", "@yearly")
		allow.Overlap = "allow"
		_, err := tab.Apply(ctx, []cron.Task{skip, allow})
		require.NoError(t, err)

		require.NoError(t, tab.RunNow("skip"))
		require.NoError(t, tab.RunNow("allow"))
		synctest.Wait()
		require.Len(t, l.of("skip"), 1)
		assert.Equal(t, schedule.Manual, l.of("skip")[0].reason)
		assert.Equal(t, t0, l.of("skip")[0].start.UTC(), "at once")
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, tab.RunNow("skip"), "Skipped: a run is in flight")
		require.NoError(t, tab.RunNow("allow"))
		synctest.Wait()
		assert.Len(t, l.of("skip"), 1)
		assert.Len(t, rec.of("skip", schedule.Skipped), 1)
		assert.Len(t, l.of("allow"), 2)
		running := map[string]int{}
		for _, s := range tab.Tasks() {
			running[s.Task.Name] = s.Running
		}
		assert.Equal(t, map[string]int{"skip": 1, "allow": 2}, running)

		require.NoError(t, tab.Pause("skip"))
		assert.ErrorIs(t, tab.RunNow("skip"), cron.ErrTaskPaused)
		assert.ErrorIs(t, tab.RunNow("nobody"), cron.ErrUnknownTask)
		time.Sleep(2 * time.Second)
		assert.Len(t, rec.of("skip", schedule.Succeeded), 1)
		assert.Len(t, rec.of("allow", schedule.Succeeded), 2)
		require.NoError(t, tab.Stop(ctx))
	})
}

// Tasks lists every task, sorted by name, with its definition in force,
// defaults spelled out, its next run, its latest record and its runs in
// flight.
func TestTableTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 1500*time.Millisecond)}, cron.WithLocation(time.UTC))
		ctx := context.Background()
		t0 := time.Now().UTC()
		assert.Empty(t, tab.Tasks())
		c := task("c", "h", "*/10 * * * * *")
		b := task("b", "h", "0 0 * * * *")
		b.Permanent, b.Start, b.End = false, t0.Add(time.Hour).In(time.FixedZone("X", 3600)), t0.Add(48*time.Hour)
		b.Overlap, b.Misfire, b.Timeout = "replace", "run-all", cron.Duration(time.Minute)
		b.Retry = cron.Retry{Attempts: 3, Backoff: cron.Duration(time.Second)}
		a := task("a", "h", "@hourly")
		a.Created = t0.Add(-time.Minute)
		_, err := tab.Apply(ctx, []cron.Task{c, b, a})
		require.NoError(t, err)
		time.Sleep(11 * time.Second) // c's run of 10s is in flight

		ts := tab.Tasks()
		require.Len(t, ts, 3)
		assert.Equal(t, []string{"a", "b", "c"}, []string{ts[0].Task.Name, ts[1].Task.Name, ts[2].Task.Name})

		wantA := a
		wantA.Overlap, wantA.Misfire = "skip", "run-once"
		assert.Equal(t, wantA, ts[0].Task)
		assert.Equal(t, t0.Add(time.Hour), ts[0].Next)
		// Created a minute before its slot of 00:00, a owed that slot when
		// it was loaded, at 00:00: it ran it, on time.
		assert.Equal(t, schedule.Record{Job: "a", Due: t0, Reason: schedule.Scheduled, Status: schedule.Succeeded},
			schedule.Record{Job: ts[0].Last.Job, Due: ts[0].Last.Due.UTC(), Reason: ts[0].Last.Reason, Status: ts[0].Last.Status})

		wantB := b
		wantB.Start = b.Start.UTC()
		wantB.Created = t0
		assert.Equal(t, cron.TaskState{Task: wantB, Next: t0.Add(time.Hour)}, ts[1])

		assert.Equal(t, t0.Add(20*time.Second), ts[2].Next)
		assert.Equal(t, 1, ts[2].Running)
		assert.Equal(t, "c", ts[2].Last.Job)
		assert.Equal(t, t0.Add(10*time.Second), ts[2].Last.Due)
		assert.Equal(t, schedule.Running, ts[2].Last.Status)
		time.Sleep(time.Second)
		ts = tab.Tasks()
		assert.Zero(t, ts[2].Running)
		assert.Equal(t, schedule.Succeeded, ts[2].Last.Status)

		// Re-applying what Tasks reports changes nothing.
		var defs []cron.Task
		for _, s := range ts {
			defs = append(defs, s.Task)
		}
		ch, err := tab.Apply(ctx, defs)
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{}, ch)
		require.NoError(t, tab.Stop(ctx))
	})
}

// A lastStore counts the reads of last records, and fails them on demand.
type lastStore struct {
	*schedule.MemoryStore
	mu          sync.Mutex
	last, bulks int
	fail        bool
}

func (s *lastStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	s.mu.Lock()
	s.last++
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return schedule.Record{}, errors.New("store down")
	}
	return s.MemoryStore.Last(ctx, job)
}

// A bulkStore reads the last records of many jobs in one call.
type bulkStore struct{ *lastStore }

func (s bulkStore) LastOf(ctx context.Context, jobs []string) (map[string]schedule.Record, error) {
	s.mu.Lock()
	s.bulks++
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return nil, errors.New("store down")
	}
	m := map[string]schedule.Record{}
	for _, j := range jobs {
		if r, err := s.MemoryStore.Last(ctx, j); err == nil {
			m[j] = r
		}
	}
	return m, nil
}

// Tasks reads the last records in one call from a LastReader, one by one
// from another Store; TasksContext reports the Store's error, with every
// task listed.
func TestTableTasksReadsTheStore(t *testing.T) {
	for _, bulk := range []bool{false, true} {
		t.Run(fmt.Sprint("bulk=", bulk), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ls := &lastStore{MemoryStore: schedule.NewMemoryStore(10)}
				var store schedule.Store = ls
				if bulk {
					store = bulkStore{ls}
				}
				var l ledger
				tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC), cron.WithStore(store))
				ctx := context.Background()
				var defs []cron.Task
				for i := range 10 {
					defs = append(defs, task(fmt.Sprint("t", i), "h", "* * * * * *"))
				}
				_, err := tab.Apply(ctx, defs)
				require.NoError(t, err)
				time.Sleep(1500 * time.Millisecond)
				ls.mu.Lock()
				ls.last, ls.bulks = 0, 0
				ls.mu.Unlock()
				ts, err := tab.TasksContext(ctx)
				require.NoError(t, err)
				require.Len(t, ts, 10)
				for _, s := range ts {
					assert.Equal(t, schedule.Succeeded, s.Last.Status, s.Task.Name)
				}
				ls.mu.Lock()
				if bulk {
					assert.Equal(t, [2]int{0, 1}, [2]int{ls.last, ls.bulks})
				} else {
					assert.Equal(t, [2]int{10, 0}, [2]int{ls.last, ls.bulks})
				}
				ls.fail = true
				ls.mu.Unlock()
				ts, err = tab.TasksContext(ctx)
				assert.ErrorContains(t, err, "store down")
				require.Len(t, ts, 10)
				assert.Zero(t, ts[0].Last)
				assert.Len(t, tab.Tasks(), 10)
				ls.mu.Lock()
				ls.fail = false
				ls.mu.Unlock()
				require.NoError(t, tab.Stop(ctx))
			})
		})
	}
}

// An Apply of many tasks on a Store that is down, and reads one last
// record at a time, reads once: the jobs' reads of their last records
// stop at the first that fails, rather than wait for each to fail.
func TestTableApplyOnADownStoreReadsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := &lastStore{MemoryStore: schedule.NewMemoryStore(10), fail: true}
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC), cron.WithStore(ls))
		ctx := context.Background()
		var defs []cron.Task
		for i := range 100 {
			defs = append(defs, task(fmt.Sprint("t", i), "h", "@hourly"))
		}
		_, err := tab.Apply(ctx, defs)
		require.NoError(t, err)
		ls.mu.Lock()
		n := ls.last
		ls.fail = false
		ls.mu.Unlock()
		require.NoError(t, tab.Stop(ctx))
		assert.Equal(t, 1, n, "failing Last calls made by one Apply of 100 tasks")
	})
}

// Names lists the tasks a Table runs, sorted, as Applies add and remove
// them; a task whose job an Apply replaces keeps its place. TasksOf
// reports the tasks of the names it is given that the Table runs, in
// their order, and reads their last records in one call of a LastReader.
func TestTableNamesAndTasksOf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls := &lastStore{MemoryStore: schedule.NewMemoryStore(10)}
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC), cron.WithStore(bulkStore{ls}))
		ctx := context.Background()
		assert.Empty(t, tab.Names())
		defs := []cron.Task{task("c", "h", "* * * * * *"), task("a", "h", "* * * * * *"), task("b", "h", "@hourly")}
		_, err := tab.Apply(ctx, defs)
		require.NoError(t, err)
		names := tab.Names()
		assert.Equal(t, []string{"a", "b", "c"}, names)
		names[0] = "z" // the caller's copy
		assert.Equal(t, []string{"a", "b", "c"}, tab.Names())

		time.Sleep(1500 * time.Millisecond)
		ls.mu.Lock()
		ls.last, ls.bulks = 0, 0
		ls.mu.Unlock()
		ts, err := tab.TasksOf(ctx, "c", "nope", "a")
		require.NoError(t, err)
		require.Len(t, ts, 2)
		assert.Equal(t, []string{"c", "a"}, []string{ts[0].Task.Name, ts[1].Task.Name})
		assert.Equal(t, schedule.Succeeded, ts[0].Last.Status)
		assert.Equal(t, time.Now().UTC().Truncate(time.Second).Add(time.Second), ts[0].Next)
		ls.mu.Lock()
		assert.Equal(t, [2]int{0, 1}, [2]int{ls.last, ls.bulks}, "reads of one record, of many")
		ls.mu.Unlock()
		ts, err = tab.TasksOf(ctx)
		require.NoError(t, err)
		assert.Empty(t, ts)

		d := defs[2]
		d.Overlap = "allow" // a new job for b
		_, err = tab.Apply(ctx, []cron.Task{defs[0], d})
		require.NoError(t, err)
		assert.Equal(t, []string{"b", "c"}, tab.Names(), "a removed")
		_, err = tab.Apply(ctx, []cron.Task{defs[0], d, task("aa", "h", "@daily")})
		require.NoError(t, err)
		assert.Equal(t, []string{"aa", "b", "c"}, tab.Names(), "aa added")
		ts, err = tab.TasksOf(ctx, "a", "b")
		require.NoError(t, err)
		require.Len(t, ts, 1)
		assert.Equal(t, "allow", ts[0].Task.Overlap)
		require.NoError(t, tab.Stop(ctx))
		assert.Equal(t, []string{"aa", "b", "c"}, tab.Names(), "the tasks as they were")
	})
}

// Names, called while Applies alternate between two sets of tasks, the
// second the first and more, returns one of the sets whole during an
// Apply, and after it the set that Apply made: after an Apply that added
// tasks as after one that removed them, the sorted names are never those
// of a set the Table no longer runs.
func TestTableNamesUnderConcurrentApply(t *testing.T) {
	var l ledger
	tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC))
	ctx := context.Background()
	sets := [2][]cron.Task{}
	want := [2][]string{}
	for i := range 200 {
		name := fmt.Sprintf("t%03d", i)
		if i%3 != 0 {
			sets[0] = append(sets[0], task(name, "h", "@yearly"))
			want[0] = append(want[0], name)
		}
		sets[1] = append(sets[1], task(name, "h", "@yearly"))
		want[1] = append(want[1], name)
	}
	_, err := tab.Apply(ctx, sets[1])
	require.NoError(t, err)
	var during, after int // the calls of Names that returned a wrong set
	for round := range 200 {
		k := round % 2
		done := make(chan error)
		go func() {
			_, err := tab.Apply(ctx, sets[k])
			done <- err
		}()
	calls:
		for {
			select {
			case err := <-done:
				require.NoError(t, err)
				break calls
			default:
				if got := tab.Names(); !slices.Equal(got, want[0]) && !slices.Equal(got, want[1]) {
					during++
				}
			}
		}
		if !slices.Equal(tab.Names(), want[k]) {
			after++
		}
	}
	assert.Zero(t, during, "Names during an Apply that were neither set")
	assert.Zero(t, after, "Names after an Apply that were not its set")
	require.NoError(t, tab.Stop(ctx))
}

// A task that comes or goes while Names sorts the names it read is not
// missed by the next call: the sorted names are kept only if no name came
// or went meanwhile.
func TestTableNamesChangedWhileSorted(t *testing.T) {
	var l ledger
	tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC))
	ctx := context.Background()
	a, b := task("a", "h", "@yearly"), task("b", "h", "@yearly")
	_, err := tab.Apply(ctx, []cron.Task{a})
	require.NoError(t, err)
	cron.SetSortHook(func() {
		cron.SetSortHook(nil)
		_, err := tab.Apply(ctx, []cron.Task{a, b})
		require.NoError(t, err)
	})
	defer cron.SetSortHook(nil)
	assert.Equal(t, []string{"a"}, tab.Names(), "read before b came")
	assert.Equal(t, []string{"a", "b"}, tab.Names())
	require.NoError(t, tab.Stop(ctx))
}

// Goroutines apply random sets (or write them to the Source the Table
// follows), pause, resume and run tasks now, and list them, while the
// tasks run, and Stop comes in the middle: nothing fails but as
// documented, the inventory is always sorted and whole, and no task
// overlaps itself. Without Stop, once the calls end, each task is paused
// exactly when Tasks says so: its job follows the latest of the
// concurrent Pauses, Resumes and Applies; and, with a Source, when its
// definition there says so.
func TestTableControlsUnderConcurrency(t *testing.T) {
	for _, c := range []struct{ stop, source bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		stop := c.stop
		t.Run(fmt.Sprintf("stop=%v/source=%v", c.stop, c.source), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l ledger
				tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 700*time.Millisecond)}, cron.WithLocation(time.UTC))
				ctx := context.Background()
				var defs *memDefs
				if c.source {
					defs = newMemDefs(task("a", "h", "* * * * * *"))
					require.NoError(t, tab.Follow(ctx, defs.source()))
				}
				names := []string{"a", "b", "c", "d"}
				random := func(r *rand.Rand) []cron.Task {
					var defs []cron.Task
					for _, name := range names {
						if name != "a" && r.IntN(8) == 0 {
							continue // removed
						}
						d := task(name, "h", []string{"* * * * * *", "*/2 * * * * *"}[r.IntN(2)])
						d.Misfire = []string{"run-once", "skip"}[r.IntN(2)] // a new job, at times
						d.Paused = r.IntN(3) == 0
						defs = append(defs, d)
					}
					return defs
				}
				ok := func(err error) bool {
					return err == nil || errors.Is(err, cron.ErrUnknownTask) || errors.Is(err, cron.ErrTaskPaused) ||
						errors.Is(err, cron.ErrTableStopped)
				}
				var wg sync.WaitGroup
				for g := range 4 {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(uint64(g), 22))
						for range 80 {
							name := names[r.IntN(len(names))]
							var err error
							switch r.IntN(5) {
							case 0:
								if defs != nil {
									defs.set(random(r))
								} else {
									_, err = tab.Apply(ctx, random(r))
								}
							case 1:
								err = tab.Pause(name)
							case 2:
								err = tab.Resume(name)
							case 3:
								err = tab.RunNow(name)
							case 4:
								ts := tab.Tasks()
								assert.True(t, slices.IsSortedFunc(ts, func(a, b cron.TaskState) int { return strings.Compare(a.Task.Name, b.Task.Name) }))
								for _, s := range ts {
									assert.Equal(t, "h", s.Task.Handler)
									assert.Contains(t, names, s.Task.Name)
								}
							}
							assert.True(t, ok(err), "%v", err)
							time.Sleep(time.Duration(r.IntN(400)) * time.Millisecond)
						}
					})
				}
				if stop {
					time.Sleep(10 * time.Second)
					require.NoError(t, tab.Stop(ctx))
				}
				wg.Wait()
				assert.Zero(t, l.overlaps)
				if stop {
					return
				}
				time.Sleep(3 * time.Second) // the jobs replaced have stopped, the new ones started
				ts := tab.Tasks()
				require.NotEmpty(t, ts)
				before := map[string]int{}
				for _, s := range ts {
					before[s.Task.Name] = len(l.of(s.Task.Name))
					assert.Equal(t, s.Task.Paused, s.Next.IsZero(), "%s: paused %v, next %v", s.Task.Name, s.Task.Paused, s.Next)
					if defs != nil {
						defs.mu.Lock()
						assert.Equal(t, defs.tasks[s.Task.Name].Paused, s.Task.Paused, "%s: paused as the Source says", s.Task.Name)
						defs.mu.Unlock()
					}
				}
				time.Sleep(5 * time.Second)
				for _, s := range ts {
					ran := len(l.of(s.Task.Name)) - before[s.Task.Name]
					assert.Equal(t, s.Task.Paused, ran == 0, "%s: paused %v, ran %d times", s.Task.Name, s.Task.Paused, ran)
				}
				require.NoError(t, tab.Stop(ctx))
			})
		})
	}
}

// A Resume that comes while Pause is about to pause the job (its look at
// the task done, the job not paused yet) wins: the job is resumed after.
func TestTableResumeDuringPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 0)}, cron.WithLocation(time.UTC))
		ctx := context.Background()
		_, err := tab.Apply(ctx, []cron.Task{task("a", "h", "* * * * * *")})
		require.NoError(t, err)
		var once sync.Once
		cron.SetHoldHook(func(where, name string) {
			if where == "pause" {
				once.Do(func() { assert.NoError(t, tab.Resume(name)) })
			}
		})
		defer cron.SetHoldHook(nil)
		require.NoError(t, tab.Pause("a"))
		assert.False(t, definition(t, tab, "a").Paused, "Resume came last")
		next, _ := tab.Next("a")
		assert.NotZero(t, next, "the job is paused though the task is not")
		time.Sleep(3500 * time.Millisecond)
		assert.Len(t, l.of("a"), 3)
		require.NoError(t, tab.Stop(ctx))
	})
}

// A Resume whose task is removed before it resumes the job leaves the job
// paused, drained: a removed task runs nothing more.
func TestTableResumeOfARemovedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 2500*time.Millisecond)}, cron.WithLocation(time.UTC))
		ctx := context.Background()
		d := task("a", "h", "* * * * * *")
		d.Overlap = "allow"
		_, err := tab.Apply(ctx, []cron.Task{d})
		require.NoError(t, err)
		time.Sleep(1500 * time.Millisecond) // the run of 1s is in flight: the drain waits for it
		require.NoError(t, tab.Pause("a"))
		var once sync.Once
		cron.SetHoldHook(func(where, name string) {
			if where == "start" {
				once.Do(func() {
					_, err := tab.Apply(ctx, nil)
					assert.NoError(t, err)
				})
			}
		})
		defer cron.SetHoldHook(nil)
		require.NoError(t, tab.Resume("a"))
		removed := time.Now()
		time.Sleep(5 * time.Second)
		for _, r := range l.of("a") {
			assert.True(t, r.start.Before(removed), "a run of the removed task started at %v", r.start)
		}
		require.NoError(t, tab.Stop(ctx))
	})
}

package schedule_test

import (
	"context"
	"math"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// Jobs made with equal options share one config; jobs made with other
// options, or with a func among them, hold their own.
func TestJobsOfEqualOptionsShareTheirConfig(t *testing.T) {
	store := schedule.NewMemoryStore(10)
	opts := func(node string) []schedule.Option {
		return []schedule.Option{schedule.WithStore(store), schedule.WithNode(node), schedule.WithGrace(2 * time.Second)}
	}
	f := func(context.Context, schedule.Run) error { return nil }
	a := schedule.NewJob("a", schedule.Every(time.Hour), f, opts("n")...)
	b := schedule.NewJob("b", schedule.Every(time.Minute), f, opts("n")...)
	c := schedule.NewJob("c", schedule.Every(time.Hour), f, opts("m")...)
	d := schedule.NewJob("d", schedule.Every(time.Hour), f, append(opts("n"), schedule.WithObserver(func(schedule.Record) {}))...)
	e := schedule.NewJob("e", schedule.Every(time.Hour), f, append(opts("n"), schedule.WithObserver(func(schedule.Record) {}))...)
	assert.True(t, schedule.SameConfig(a, b), "equal options")
	assert.False(t, schedule.SameConfig(a, c), "another node")
	assert.False(t, schedule.SameConfig(a, d), "an Observer")
	assert.False(t, schedule.SameConfig(d, e), "funcs do not compare")
	runtime.KeepAlive([]*schedule.Job{a, b, c, d, e})
}

// A Store that does not compare (its value holds a slice) makes a Job of
// its own config, which runs as any other.
func TestConfigOfAStoreThatDoesNotCompare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := sliceStore{MemoryStore: schedule.NewMemoryStore(10), tags: []string{"x"}}
		ran := make(chan schedule.Run, 2)
		f := func(_ context.Context, r schedule.Run) error { ran <- r; return nil }
		var a, b *schedule.Job
		require.NotPanics(t, func() {
			a = schedule.NewJob("a", schedule.Every(time.Hour), f, schedule.WithStore(store))
			b = schedule.NewJob("b", schedule.Every(time.Hour), f, schedule.WithStore(store))
		})
		assert.False(t, schedule.SameConfig(a, b))
		require.NoError(t, a.Start(context.Background()))
		require.NoError(t, b.Start(context.Background()))
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Len(t, ran, 2)
		require.NoError(t, a.Stop(context.Background()))
		require.NoError(t, b.Stop(context.Background()))
		recs, err := store.History(context.Background(), "a", 10)
		require.NoError(t, err)
		assert.Len(t, recs, 1)
	})
}

type sliceStore struct {
	*schedule.MemoryStore
	tags []string
}

// A Store that is a value, not a pointer, is not shared, nor kept in the
// table of configs: one that holds a NaN would never be found there.
func TestConfigOfAStoreThatIsAValue(t *testing.T) {
	f := func(context.Context, schedule.Run) error { return nil }
	store := nanStore{MemoryStore: schedule.NewMemoryStore(10), weight: math.NaN()}
	before := schedule.Configs()
	jobs := make([]*schedule.Job, 100)
	for i := range jobs {
		jobs[i] = schedule.NewJob("j", schedule.Every(time.Hour), f, schedule.WithStore(store))
	}
	assert.Equal(t, before, schedule.Configs())
	assert.False(t, schedule.SameConfig(jobs[0], jobs[1]))
	runtime.KeepAlive(jobs)
}

type nanStore struct {
	*schedule.MemoryStore
	weight float64
}

// A job that its own Trace points back to (a hook that calls it) is
// collected once dropped: the table of configs holds nothing of a config
// strongly.
func TestSharedConfigKeepsNoJobAlive(t *testing.T) {
	const n = 50
	var freed atomic.Int32
	func() {
		for range n {
			var j *schedule.Job
			tr := &schedule.Trace{NotRun: func(schedule.Record) { _ = j.Name() }}
			j = schedule.NewJob("cycle", schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil },
				schedule.WithTrace(tr), schedule.WithNode("cycle"))
			runtime.AddCleanup(j, func(*atomic.Int32) { freed.Add(1) }, &freed)
		}
	}()
	for i := 0; i < 1000 && freed.Load() < n; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	assert.Equal(t, int32(n), freed.Load(), "jobs collected")
}

// A config that no Job holds any more is forgotten: a program that makes
// jobs of ever new options does not keep them all.
func TestSharedConfigForgotten(t *testing.T) {
	f := func(context.Context, schedule.Run) error { return nil }
	before := schedule.Configs()
	jobs := make([]*schedule.Job, 100)
	for i := range jobs {
		jobs[i] = schedule.NewJob("j", schedule.Every(time.Hour), f, schedule.WithNode("forgotten-"+strconv.Itoa(i)))
	}
	require.Equal(t, before+100, schedule.Configs())
	runtime.KeepAlive(jobs)
	jobs = nil
	for i := 0; i < 1000 && schedule.Configs() > before; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	assert.LessOrEqual(t, schedule.Configs(), before)
}

// Jobs made with equal options cost no config each: the live heap a job
// costs stays under what a config of its own would add.
func TestJobsOfEqualOptionsCostNoConfigEach(t *testing.T) {
	const n = 20000
	store := schedule.NewMemoryStore(10)
	f := func(context.Context, schedule.Run) error { return nil }
	names := make([]string, n)
	for i := range names {
		names[i] = "job" + strconv.Itoa(i)
	}
	var before, after runtime.MemStats
	runtime.GC() // twice: what the cleanups of earlier tests free goes at the second
	runtime.GC()
	runtime.ReadMemStats(&before)
	jobs := make([]*schedule.Job, n)
	for i := range jobs {
		jobs[i] = schedule.NewJob(names[i], schedule.Every(time.Hour), f, schedule.WithStore(store), schedule.WithNode("n"))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perJob := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("%.0f bytes a job", perJob)
	assert.Less(t, perJob, 200.0, "a Job's own bytes, and the slice of them, not a config each")
	runtime.KeepAlive(jobs)
}

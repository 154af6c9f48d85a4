package schedule_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// A hundred jobs due at once on a RunLimit of 5 run 5 at a time, in the
// order their slots were handed out, each once; the others wait holding
// no goroutine.
func TestRunLimitBoundsTheRunsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := schedule.NewRunLimit(5)
		var mu sync.Mutex
		flying, most, ran := 0, 0, 0
		f := func(ctx context.Context, r schedule.Run) error {
			mu.Lock()
			flying++
			most = max(most, flying)
			ran++
			mu.Unlock()
			time.Sleep(time.Second)
			mu.Lock()
			flying--
			mu.Unlock()
			return nil
		}
		// The goroutines of the process, the other tests' included: a
		// goroutine for each run waiting would be 95 more.
		before := runtime.NumGoroutine()
		var jobs []*schedule.Job
		for i := range 100 {
			j := schedule.NewJob(fmt.Sprint("j", i), schedule.Every(time.Hour), f, schedule.WithRunLimit(lim))
			start(t, j)
			jobs = append(jobs, j)
		}
		time.Sleep(time.Hour + time.Second/2)
		synctest.Wait()
		assert.Equal(t, 5, lim.Running())
		assert.Equal(t, 95, lim.Waiting())
		goroutines := runtime.NumGoroutine() - before
		assert.Less(t, goroutines, 50, "the runs waiting hold no goroutine")
		time.Sleep(30 * time.Second)
		for _, j := range jobs {
			stop(t, j)
		}
		assert.Equal(t, 5, most)
		assert.Equal(t, 100, ran)
		assert.Zero(t, lim.Running())
		assert.Zero(t, lim.Waiting())
	})
}

// A started job's state stays in the allocator's 224-byte class: a million
// started jobs pay for every byte of it, waiting or not.
func TestActiveSize(t *testing.T) {
	assert.LessOrEqual(t, int(schedule.ActiveSize), 224)
}

// Once a herd of 2,500 jobs has run through a RunLimit of 1, the limit
// points to none of their runs, and no job keeps the state of its wait:
// a million jobs that all waited at 09:00 cost no more afterwards than
// before.
func TestRunLimitKeepsNothingOfAHerd(t *testing.T) {
	lim := schedule.NewRunLimit(1)
	var ran atomic.Int64
	release := make(chan struct{})
	f := func(ctx context.Context, r schedule.Run) error {
		<-release // the others queue behind the first
		ran.Add(1)
		return nil
	}
	jobs := make([]*schedule.Job, 2500)
	never := schedule.Once(time.Now().Add(24 * time.Hour))
	for i := range jobs {
		jobs[i] = schedule.NewJob(fmt.Sprint("j", i), never, f, schedule.WithRunLimit(lim))
	}
	require.NoError(t, schedule.StartAll(context.Background(), jobs...))
	// A herd, however long the machine takes to start it: a slot due
	// before a job had started would be none of its.
	for _, j := range jobs {
		j.RunNow()
	}
	assert.Eventually(t, func() bool { return lim.Waiting() == len(jobs)-1 }, time.Minute, time.Millisecond)
	close(release)
	assert.Eventually(t, func() bool { return lim.Running() == 0 }, time.Minute, time.Millisecond)
	assert.Equal(t, int64(len(jobs)), ran.Load())
	assert.Zero(t, lim.Kept(), "runs the limit's queue still points to")
	rare, waits := 0, 0
	for _, j := range jobs {
		if j.Rare() {
			rare++
		}
		if j.Waits() {
			waits++
		}
	}
	assert.Zero(t, rare, "jobs that keep the part of their state few jobs need")
	assert.Zero(t, waits, "jobs that keep the list of their waits")
	for _, j := range jobs {
		stop(t, j)
	}
}

// A job stopped while its run waits for its turn stops at once: the run
// is Skipped and never starts, and the limit goes on with the others. To
// the overlap policy, a run that waits is in flight: the job's next slot
// is Skipped under OverlapSkip.
func TestRunLimitStopAWaitingJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := schedule.NewRunLimit(1)
		var busy, waiter journal
		b := schedule.NewJob("busy", schedule.Every(time.Hour), busy.work(90*time.Minute), schedule.WithRunLimit(lim))
		w := schedule.NewJob("waiter", schedule.At(at(time.Hour+time.Minute), at(2*time.Hour+time.Minute)), waiter.work(time.Second),
			schedule.WithRunLimit(lim), schedule.WithObserver(waiter.observe))
		start(t, b)
		start(t, w)
		time.Sleep(2*time.Hour + 2*time.Minute) // the waiter's slots of 1h1m and 2h1m, behind busy's run of 1h
		synctest.Wait()
		assert.Equal(t, 1, lim.Waiting())
		begin := time.Now()
		stop(t, w)
		assert.Zero(t, time.Since(begin), "Stop waited for the limit")
		assert.Zero(t, lim.Waiting())
		assert.Equal(t, []string{"2h1m0s Skipped Scheduled", "1h1m0s Skipped Scheduled"}, waiter.summary())
		assert.Empty(t, waiter.starts())
		stop(t, b)
	})
}

// A Func that calls runtime.Goexit gives its place in the limit up: the
// runs waiting behind it still run.
func TestRunLimitGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := schedule.NewRunLimit(1)
		var l journal
		quit := schedule.NewJob("quit", schedule.Every(time.Hour), func(context.Context, schedule.Run) error {
			runtime.Goexit()
			return nil
		}, schedule.WithRunLimit(lim))
		other := schedule.NewJob("other", schedule.Every(time.Hour), l.work(time.Second), schedule.WithRunLimit(lim))
		start(t, quit)
		start(t, other)
		time.Sleep(time.Hour + time.Minute)
		require.Len(t, l.starts(), 1)
		assert.Zero(t, lim.Running())
		stop(t, quit)
		stop(t, other)
	})
}

// Jobs made with a Preset alone share its settings, and behave as jobs
// given its options one by one.
func TestPreset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := schedule.NewRunLimit(1)
		var l journal
		p := schedule.Preset(schedule.WithRunLimit(lim), schedule.WithObserver(l.observe), schedule.WithOverlap(schedule.OverlapSkip))
		a := schedule.NewJob("a", schedule.Every(time.Hour), l.work(90*time.Minute), p)
		b := schedule.NewJob("b", schedule.Once(at(time.Hour+time.Minute)), l.work(time.Second), p, schedule.WithNode("b"))
		start(t, a)
		start(t, b)
		time.Sleep(time.Hour + time.Minute + time.Second)
		synctest.Wait()
		assert.Equal(t, 1, lim.Running(), "a's run holds the limit both share")
		assert.Equal(t, 1, lim.Waiting())
		stop(t, a)
		stop(t, b)
		assert.Len(t, l.recs(), 2, "a's run, canceled; b's, skipped")
	})
}

package schedule_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// Jobs on one Scheduler, on the real clock, whose every control is called
// from several goroutines at once for a while (Pause, Resume, SetSchedule,
// RunNow, Next) while their 1 to 3 ms slots fall due, and which are then
// stopped while those calls go on: under every overlap policy but
// OverlapAllow no two runs of a job overlap; no run starts before its
// Due; no slot runs twice; every run reaches the Observer once, after it
// ended; Stop returns nil in time, once no run is in flight, and after it
// nothing runs or is reported, Next is zero, and no goroutine is left
// (goleak, in TestMain).
func TestControlStress(t *testing.T) {
	scheds := map[string]func(t *testing.T) circulation.Scheduler{
		"runtime": func(*testing.T) circulation.Scheduler { return nil },
		"wheel": func(t *testing.T) circulation.Scheduler {
			w := wheel.New(wheel.WithTick(time.Millisecond))
			t.Cleanup(func() { w.Stop() })
			return w
		},
	}
	for name, mk := range scheds {
		for _, o := range []schedule.Overlap{schedule.OverlapSkip, schedule.OverlapBufferOne, schedule.OverlapReplace, schedule.OverlapBufferAll} {
			t.Run(fmt.Sprintf("%s/%v", name, o), func(t *testing.T) {
				t.Parallel()
				controlStress(t, mk(t), o)
			})
		}
	}
}

func controlStress(t *testing.T, sched circulation.Scheduler, o schedule.Overlap) {
	const jobs = 3
	type key struct {
		job string
		due time.Time
	}
	var mu sync.Mutex
	ran := map[key]int{}
	reported := map[key]int{}
	var early, overlaps, unended int
	var late []string // records reported after every Stop returned
	var stopped atomic.Bool
	var afterStop atomic.Int32
	all := make([]*schedule.Job, jobs)
	inFlight := make([]atomic.Int32, jobs)
	var records atomic.Int32
	for i := range all {
		name := fmt.Sprint("j", i)
		inFlight := &inFlight[i]
		running := map[time.Time]bool{}
		all[i] = schedule.NewJob(name, schedule.Every(time.Millisecond), func(ctx context.Context, r schedule.Run) error {
			if stopped.Load() {
				afterStop.Add(1)
			}
			if inFlight.Add(1) > 1 {
				mu.Lock()
				overlaps++
				mu.Unlock()
			}
			mu.Lock()
			if time.Now().Before(r.Due) {
				early++
			}
			ran[key{name, r.Due}]++
			running[r.Due] = true
			mu.Unlock()
			select {
			case <-time.After(time.Duration(rand.IntN(2000)) * time.Microsecond):
			case <-ctx.Done():
			}
			mu.Lock()
			delete(running, r.Due)
			mu.Unlock()
			inFlight.Add(-1)
			return nil
		}, schedule.WithOverlap(o), schedule.WithScheduler(sched), schedule.WithObserver(func(r schedule.Record) {
			records.Add(1)
			mu.Lock()
			defer mu.Unlock()
			if stopped.Load() {
				late = append(late, fmt.Sprintf("%s %v %v %v attempt %d: %s", r.Job, r.Due.Format("15:04:05.000000"), r.Status, r.Reason, r.Attempt, r.Err))
			}
			reported[key{name, r.Due}]++
			if r.Status != schedule.Skipped && r.Status != schedule.Missed && running[r.Due] {
				unended++ // reported before its Func returned
			}
		}))
		require.NoError(t, all[i].Start(context.Background()))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var callers sync.WaitGroup
	for g := range 4 {
		callers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for ctx.Err() == nil || !stopped.Load() {
				j := all[rng.IntN(jobs)]
				switch rng.IntN(6) {
				case 0:
					j.Pause()
				case 1:
					j.Resume()
				case 2:
					j.SetSchedule(schedule.Every(time.Duration(1+rng.IntN(3)) * time.Millisecond))
				case 3:
					j.RunNow()
				case 4:
					_ = j.Next()
				default:
					time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
				}
			}
		})
	}
	<-ctx.Done()
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer stopCancel()
	var stops sync.WaitGroup
	for i, j := range all {
		stops.Go(func() {
			assert.NoError(t, j.Stop(stopCtx))
			assert.Zero(t, inFlight[i].Load(), "runs in flight when Stop returned")
		})
	}
	stops.Wait()
	stopped.Store(true)
	n := records.Load()
	time.Sleep(10 * time.Millisecond) // the callers go on calling the stopped jobs
	for _, j := range all {
		assert.True(t, j.Next().IsZero())
	}
	callers.Wait()
	time.Sleep(10 * time.Millisecond)
	assert.Equal(t, n, records.Load(), "records after Stop returned")
	mu.Lock()
	assert.Empty(t, late, "records after Stop returned")
	mu.Unlock()

	mu.Lock()
	defer mu.Unlock()
	assert.Zero(t, overlaps, "overlapping runs")
	assert.Zero(t, early, "runs before their Due")
	assert.Zero(t, unended, "records before the run ended")
	assert.Zero(t, afterStop.Load(), "runs after Stop returned")
	twice := 0
	for k, n := range ran {
		if n > 1 {
			twice++
		}
		if reported[k] != 1 {
			t.Errorf("%s %v ran and was reported %d times", k.job, k.due, reported[k])
		}
	}
	assert.Zero(t, twice, "slots run twice")
	assert.NotEmpty(t, ran)
	t.Logf("%d runs", len(ran))
}

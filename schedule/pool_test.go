package schedule_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// A herd of quick runs in memory shares a few goroutines; a run that
// blocks holds up nothing but its own: the others start at their time.
// How many goroutines the runs share depends on how the runtime schedules
// the pool's (on a loaded machine each may start one before any is free
// again): the herd is run up to five times, for one in which they shared.
func TestPoolBlockedRunHoldsUpNothing(t *testing.T) {
	for range 5 {
		if n := poolHerd(t); n < 501 || t.Failed() {
			return
		}
	}
	t.Error("every herd of 501 runs ran on 501 goroutines")
}

// poolHerd runs a herd of 500 quick runs and one that blocks, checks that
// each started at its time, and returns the number of goroutines that ran
// them.
func poolHerd(t *testing.T) (shared int) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		starts := map[string]time.Duration{}
		goroutines := map[string]bool{} // that ran a Func, by the first line of their stack ("goroutine 42 [running]:")
		f := func(ctx context.Context, r schedule.Run) error {
			buf := make([]byte, 64)
			buf = buf[:runtime.Stack(buf, false)]
			mu.Lock()
			starts[r.Job] = time.Since(t0)
			goroutines[strings.SplitN(string(buf), " [", 2)[0]] = true
			mu.Unlock()
			if r.Job == "blocker" {
				<-ctx.Done() // until Stop
			}
			return nil
		}
		var s countingScheduler // a pointer: its jobs share one watch, and one pool
		jobs := []*schedule.Job{schedule.NewJob("blocker", schedule.Every(time.Hour), f, schedule.WithScheduler(&s))}
		for i := range 500 {
			jobs = append(jobs, schedule.NewJob(fmt.Sprint("quick", i), schedule.Every(time.Hour), f, schedule.WithScheduler(&s)))
		}
		for _, j := range jobs {
			start(t, j)
		}
		time.Sleep(time.Hour + time.Second)
		synctest.Wait()
		mu.Lock()
		assert.Len(t, starts, 501, "every run started, the blocker's too")
		for job, at := range starts {
			assert.Equal(t, time.Hour, at, job)
		}
		shared = len(goroutines)
		mu.Unlock()
		for _, j := range jobs {
			stop(t, j)
		}
	})
	return shared
}

// A Func that calls runtime.Goexit leaves the pool a goroutine short of
// nothing: the runs behind it start.
func TestPoolGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran atomic.Int64
		var jobs []*schedule.Job
		var s countingScheduler
		for i := range 100 {
			jobs = append(jobs, schedule.NewJob(fmt.Sprint("j", i), schedule.Every(time.Hour),
				func(context.Context, schedule.Run) error {
					ran.Add(1)
					if i%10 == 0 {
						runtime.Goexit()
					}
					return nil
				}, schedule.WithScheduler(&s)))
		}
		for _, j := range jobs {
			start(t, j)
		}
		time.Sleep(time.Hour + time.Second)
		synctest.Wait()
		assert.EqualValues(t, 100, ran.Load())
		for _, j := range jobs {
			stop(t, j)
		}
	})
}

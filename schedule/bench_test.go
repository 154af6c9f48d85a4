package schedule_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// BenchmarkIdleJobs holds b.N started jobs on one wheel.Wheel, each Every
// a period between 1 and 60 minutes, none due during the benchmark, and
// reports the live heap per job after GC, names included (B/job). The
// baseline, impl=trigger, is a bare Trigger armed on the same wheel for
// the same delay: what any job built on a Trigger costs at least.
//
//	go test -run '^$' -bench IdleJobs -benchtime 1000000x ./schedule
func BenchmarkIdleJobs(b *testing.B) {
	for _, impl := range []string{"job", "trigger"} {
		b.Run("impl="+impl, func(b *testing.B) {
			w := wheel.New()
			defer w.Stop()
			f := func(context.Context, schedule.Run) error { return nil }
			tf := func(context.Context) (time.Duration, bool) { return 0, false }
			jobs := make([]*schedule.Job, b.N)
			triggers := make([]*circulation.Trigger, b.N)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for i := range b.N {
				period := time.Duration(1+rand.IntN(60)) * time.Minute
				if impl == "trigger" {
					triggers[i] = circulation.Bind(w, tf)
					triggers[i].FireAfter(time.Until(schedule.Every(period).Next(time.Now())))
					continue
				}
				jobs[i] = schedule.NewJob("job"+strconv.Itoa(i), schedule.Every(period), f, schedule.WithScheduler(w))
				if err := jobs[i].Start(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "B/job")
			for i := range b.N {
				if impl == "trigger" {
					_ = triggers[i].Stop(context.Background())
				} else {
					_ = jobs[i].Stop(context.Background())
				}
			}
		})
	}
}

// BenchmarkRunCycle measures one run from start to end, on the default
// scheduler: impl=job is RunNow on a started job whose Func signals the
// loop (its claim and finish in the job's MemoryStore, the run on a
// goroutine of its own, the Record); impl=trigger is Fire on a bare
// Trigger whose Func signals the loop, the baseline.
//
//	go test -run '^$' -bench RunCycle -count 10 ./schedule
func BenchmarkRunCycle(b *testing.B) {
	for _, impl := range []string{"job", "trigger"} {
		b.Run("impl="+impl, func(b *testing.B) {
			ran := make(chan struct{})
			var fire, stop func()
			switch impl {
			case "job":
				// OverlapBufferOne: a RunNow made while the previous run
				// finishes its record follows it, rather than being skipped.
				j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error {
					ran <- struct{}{}
					return nil
				}, schedule.WithOverlap(schedule.OverlapBufferOne))
				if err := j.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				fire, stop = j.RunNow, func() { _ = j.Stop(context.Background()) }
			case "trigger":
				t := circulation.Bind(nil, func(context.Context) (time.Duration, bool) {
					ran <- struct{}{}
					return 0, false
				})
				fire, stop = t.Fire, func() { _ = t.Stop(context.Background()) }
			}
			b.ReportAllocs()
			for b.Loop() {
				fire()
				<-ran
			}
			b.StopTimer()
			stop()
		})
	}
}

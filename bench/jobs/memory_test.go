package jobs

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/robfig/cron/v3"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// BenchmarkIdleJobs holds b.N started jobs, each every 1 to 60 minutes,
// none due while it runs, and reports the live heap per job after GC
// (B/job), the jobs' names included:
//
//   - impl=schedule: schedule.Job on one wheel.Wheel;
//   - impl=robfig: one robfig/cron v3 Cron, cron.Every(period);
//   - impl=gocron: one gocron v2 Scheduler, DurationJob(period).
//
// Run it with as many jobs as wanted: -benchtime 1000000x.
func BenchmarkIdleJobs(b *testing.B) {
	for _, impl := range []string{"schedule", "robfig", "gocron"} {
		b.Run("impl="+impl, func(b *testing.B) {
			f := func() {}
			periods := make([]time.Duration, b.N)
			for i := range periods {
				periods[i] = time.Duration(1+rand.IntN(60)) * time.Minute
			}
			var stop func()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			switch impl {
			case "schedule":
				w := wheel.New()
				jobs := make([]*schedule.Job, b.N)
				jf := func(context.Context, schedule.Run) error { f(); return nil } // one Func for all, as f is for the others
				for i := range jobs {
					jobs[i] = schedule.NewJob("job"+strconv.Itoa(i), schedule.Every(periods[i]), jf, schedule.WithScheduler(w))
					if err := jobs[i].Start(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				stop = func() {
					for _, j := range jobs {
						_ = j.Stop(context.Background())
					}
					w.Stop()
				}
			case "robfig":
				c := cron.New()
				for i := range b.N {
					c.Schedule(cron.Every(periods[i]), cron.FuncJob(f))
				}
				c.Start()
				stop = func() { <-c.Stop().Done() }
			case "gocron":
				s, err := gocron.NewScheduler()
				if err != nil {
					b.Fatal(err)
				}
				for i := range b.N {
					if _, err := s.NewJob(gocron.DurationJob(periods[i]), gocron.NewTask(f), gocron.WithName("job"+strconv.Itoa(i))); err != nil {
						b.Fatal(err)
					}
				}
				s.Start()
				stop = func() { _ = s.Shutdown() }
			}
			b.StopTimer()
			time.Sleep(100 * time.Millisecond) // let the schedulers arm their jobs
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "B/job")
			stop()
		})
	}
}

//go:build unix

package schedule_test

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// BenchmarkIdleCPU starts b.N idle jobs on one wheel.Wheel, each Every 1
// to 60 minutes, then reports the process's CPU time per second while none
// of them is due: their slots all fall on whole minutes, so it measures
// from the end of the runs due at the next whole minute, for the duration
// in SCHEDULE_IDLE_CPU but no later than 58s past that minute. It also reports the CPU time
// per job per minute, and the runs made in the window (none). It is
// skipped unless SCHEDULE_IDLE_CPU is set:
//
//	SCHEDULE_IDLE_CPU=56s go test -run '^$' -bench IdleCPU -benchtime 1000000x -timeout 30m ./schedule
func BenchmarkIdleCPU(b *testing.B) {
	window, err := time.ParseDuration(os.Getenv("SCHEDULE_IDLE_CPU"))
	if err != nil || window <= 0 {
		b.Skip("SCHEDULE_IDLE_CPU is not a duration")
	}
	window = min(window, 56*time.Second)
	w := wheel.New()
	defer w.Stop()
	var runs atomic.Int64
	f := func(context.Context, schedule.Run) error { runs.Add(1); return nil }
	jobs := make([]*schedule.Job, b.N)
	for i := range jobs {
		period := time.Duration(1+rand.IntN(60)) * time.Minute
		jobs[i] = schedule.NewJob("job"+strconv.Itoa(i), schedule.Every(period), f, schedule.WithScheduler(w))
		if err := jobs[i].Start(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	if b.N == 1 { // the framework's first probe: measure only the jobs asked for
		_ = jobs[0].Stop(context.Background())
		return
	}
	runtime.GC()
	// Past the next whole minute, once the runs due then are over.
	minute := time.Now().Truncate(time.Minute).Add(time.Minute)
	time.Sleep(time.Until(minute))
	for ran := int64(-1); ran != runs.Load(); {
		ran = runs.Load()
		time.Sleep(time.Second)
	}
	window = min(window, time.Until(minute.Add(58*time.Second)))
	if window < 10*time.Second {
		b.Fatalf("the runs due at %v took until %v", minute, time.Now())
	}
	before, ran := cpu(), runs.Load()
	time.Sleep(window)
	used := cpu() - before
	b.ReportMetric(float64(used)/float64(window), "cpu-s/s")
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N)/window.Minutes(), "cpu-ns/job/min")
	b.ReportMetric(float64(runs.Load()-ran), "runs")
	for _, j := range jobs {
		_ = j.Stop(context.Background())
	}
}

// cpu returns the CPU time the process has used, user and system.
func cpu() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

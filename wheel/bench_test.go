package wheel_test

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/wheel"
)

// The benchmarks run each workload over the runtime's timers (the
// baseline) and over a Wheel, so one run gives the ratio:
//
//	go test -run '^$' -bench . -benchtime 200000x -count 6 ./wheel/ | benchstat -col /sched -
//
// bench/cmd/compare measures the same workloads against other wheels, in
// separate processes, with CPU and memory.

// pending is the number of timers each workload keeps pending.
const pending = 1 << 20

var schedulers = []struct {
	name string
	new  func() (circulation.Scheduler, func())
}{
	{"sched=runtime", func() (circulation.Scheduler, func()) { return circulation.RuntimeScheduler{}, func() {} }},
	{"sched=wheel", func() (circulation.Scheduler, func()) {
		w := wheel.New()
		return w, func() { w.Stop() }
	}},
}

// delays returns n delays drawn uniformly from [1 s, 60 s).
func delays(n int) []time.Duration {
	rng := rand.New(rand.NewPCG(1, 2))
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = time.Second + time.Duration(rng.Int64N(int64(59*time.Second)))
	}
	return ds
}

func nop() {}

// BenchmarkAfterFunc arms timers with delays in [1 s, 60 s) while 1M are
// pending.
func BenchmarkAfterFunc(b *testing.B) {
	for _, s := range schedulers {
		b.Run(s.name, func(b *testing.B) {
			sched, stop := s.new()
			defer stop()
			ds := delays(pending + b.N)
			timers := make([]circulation.Timer, 0, pending+b.N)
			for _, d := range ds[:pending] {
				timers = append(timers, sched.AfterFunc(d, nop))
			}
			b.ReportAllocs()
			runtime.GC()
			b.ResetTimer()
			for i := range b.N {
				timers = append(timers, sched.AfterFunc(ds[pending+i], nop))
			}
			b.StopTimer()
			for _, t := range timers {
				t.Stop()
			}
		})
	}
}

// BenchmarkStop stops timers, in the order they were armed, while 1M are
// pending.
func BenchmarkStop(b *testing.B) {
	for _, s := range schedulers {
		b.Run(s.name, func(b *testing.B) {
			sched, stop := s.new()
			defer stop()
			ds := delays(pending + b.N)
			timers := make([]circulation.Timer, 0, pending+b.N)
			for _, d := range ds {
				timers = append(timers, sched.AfterFunc(d, nop))
			}
			b.ReportAllocs()
			runtime.GC()
			b.ResetTimer()
			for _, t := range timers[:b.N] {
				t.Stop()
			}
			b.StopTimer()
			for _, t := range timers[b.N:] {
				t.Stop()
			}
		})
	}
}

// BenchmarkSteady is a server's timeouts: each op stops the oldest of
// 100k pending timers and arms a new one, delays in [1 s, 60 s).
func BenchmarkSteady(b *testing.B) {
	for _, s := range schedulers {
		b.Run(s.name, func(b *testing.B) {
			sched, stop := s.new()
			defer stop()
			b.ReportAllocs()
			steady(b, sched, 100_000)
		})
	}
}

// BenchmarkSteadyParallel is BenchmarkSteady from GOMAXPROCS goroutines,
// each with its own ring.
func BenchmarkSteadyParallel(b *testing.B) {
	for _, s := range schedulers {
		b.Run(s.name, func(b *testing.B) {
			sched, stop := s.new()
			defer stop()
			b.ReportAllocs()
			var seed atomic.Uint64
			n := 100_000 / runtime.GOMAXPROCS(0)
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(seed.Add(1), 3))
				ring := make([]circulation.Timer, n)
				for i := range ring {
					ring[i] = sched.AfterFunc(time.Second+time.Duration(rng.Int64N(int64(59*time.Second))), nop)
				}
				i := 0
				for pb.Next() {
					ring[i].Stop()
					ring[i] = sched.AfterFunc(time.Second+time.Duration(rng.Int64N(int64(59*time.Second))), nop)
					if i++; i == n {
						i = 0
					}
				}
				for _, t := range ring {
					t.Stop()
				}
			})
		})
	}
}

func steady(b *testing.B, sched circulation.Scheduler, n int) {
	rng := rand.New(rand.NewPCG(4, 5))
	ring := make([]circulation.Timer, n)
	for i := range ring {
		ring[i] = sched.AfterFunc(time.Second+time.Duration(rng.Int64N(int64(59*time.Second))), nop)
	}
	runtime.GC()
	b.ResetTimer()
	i := 0
	for range b.N {
		ring[i].Stop()
		ring[i] = sched.AfterFunc(time.Second+time.Duration(rng.Int64N(int64(59*time.Second))), nop)
		if i++; i == n {
			i = 0
		}
	}
	b.StopTimer()
	for _, t := range ring {
		t.Stop()
	}
}

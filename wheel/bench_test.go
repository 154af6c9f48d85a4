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

// armAll arms a timer for each delay, with a callback that does nothing,
// and returns them in a slice with room for extra more.
func armAll(sched circulation.Scheduler, ds []time.Duration, extra int) []circulation.Timer {
	timers := make([]circulation.Timer, 0, len(ds)+extra)
	for _, d := range ds {
		timers = append(timers, sched.AfterFunc(d, nop))
	}
	return timers
}

func stopAll(timers []circulation.Timer) {
	for _, t := range timers {
		t.Stop()
	}
}

// BenchmarkAfterFunc arms timers with delays in [1 s, 60 s) while 1M are
// pending.
func BenchmarkAfterFunc(b *testing.B) {
	for _, s := range schedulers {
		b.Run(s.name, func(b *testing.B) {
			sched, stop := s.new()
			defer stop()
			ds := delays(pending + b.N)
			timers := armAll(sched, ds[:pending], b.N)
			b.ReportAllocs()
			runtime.GC()
			b.ResetTimer()
			for _, d := range ds[pending:] {
				timers = append(timers, sched.AfterFunc(d, nop))
			}
			b.StopTimer()
			stopAll(timers)
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
			timers := armAll(sched, delays(pending+b.N), 0)
			b.ReportAllocs()
			runtime.GC()
			b.ResetTimer()
			stopAll(timers[:b.N])
			b.StopTimer()
			stopAll(timers[b.N:])
		})
	}
}

// A ring is one goroutine's share of a server's timeouts: n pending timers,
// of which each step stops the oldest and arms a new one.
type ring struct {
	sched  circulation.Scheduler
	rng    *rand.Rand
	timers []circulation.Timer
	i      int
}

func newRing(sched circulation.Scheduler, n int, seed uint64) *ring {
	r := &ring{sched: sched, rng: rand.New(rand.NewPCG(seed, 3)), timers: make([]circulation.Timer, n)}
	for i := range r.timers {
		r.timers[i] = sched.AfterFunc(r.delay(), nop)
	}
	return r
}

func (r *ring) delay() time.Duration {
	return time.Second + time.Duration(r.rng.Int64N(int64(59*time.Second)))
}

func (r *ring) step() {
	r.timers[r.i].Stop()
	r.timers[r.i] = r.sched.AfterFunc(r.delay(), nop)
	if r.i++; r.i == len(r.timers) {
		r.i = 0
	}
}

// BenchmarkSteady is a server's timeouts: each op stops the oldest of
// 100k pending timers and arms a new one, delays in [1 s, 60 s).
func BenchmarkSteady(b *testing.B) {
	for _, s := range schedulers {
		b.Run(s.name, func(b *testing.B) {
			sched, stop := s.new()
			defer stop()
			r := newRing(sched, 100_000, 4)
			b.ReportAllocs()
			runtime.GC()
			b.ResetTimer()
			for range b.N {
				r.step()
			}
			b.StopTimer()
			stopAll(r.timers)
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
				r := newRing(sched, n, seed.Add(1))
				for pb.Next() {
					r.step()
				}
				stopAll(r.timers)
			})
		})
	}
}

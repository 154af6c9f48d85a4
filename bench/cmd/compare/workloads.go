package main

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/circulation-go/circulation"
)

// A result is what one child process measured: named figures.
type result map[string]float64

// A workload measures one implementation in a fresh process.
type workload struct {
	name string
	run  func(s func() scheduler, c config) result
}

// config sizes the workloads: full or smoke.
type config struct {
	N      int           // timers pending in schedule/cancel/heap and due in burst
	Ring   int           // timers pending in the steady workloads, over all goroutines
	Steady time.Duration // how long each steady workload runs
	Late   int           // timers in the lateness workload
	Idle   time.Duration // how long the idle workload sleeps
	Hold   time.Duration // how long the hold workload holds its timers
	Tick   time.Duration // the wheels' resolution
}

var workloads = []workload{
	{"schedule", scheduleCancel},
	{"steady1", func(s func() scheduler, c config) result { return steady(s, c, 1) }},
	{"steady2", func(s func() scheduler, c config) result { return steady(s, c, 2) }},
	{"burst", burst},
	{"lateness", lateness},
	{"idle", idle},
	{"hold", hold},
}

func nop() {}

// uniform returns n delays drawn uniformly from [lo, hi).
func uniform(rng *rand.Rand, n int, lo, hi time.Duration) []time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
	return ds
}

func heapBytes() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// scheduleCancel arms N timers with delays in [1 s, 60 s) and then stops
// them all, in the order they were armed: ns per AfterFunc, heap bytes per
// pending timer, ns per Stop.
func scheduleCancel(newS func() scheduler, c config) result {
	ds := uniform(rand.New(rand.NewPCG(1, 1)), c.N, time.Second, 60*time.Second)
	timers := make([]circulation.Timer, c.N)
	s := newS()
	defer s.Close()
	h0 := heapBytes()
	cpu0, start := cpuTime(), time.Now()
	for i, d := range ds {
		timers[i] = s.AfterFunc(d, nop)
	}
	schedule, scheduleCPU := time.Since(start), cpuTime()-cpu0
	h1 := heapBytes()
	runtime.KeepAlive(ds) // or its free would count against the timers
	cpu0, start = cpuTime(), time.Now()
	for _, t := range timers {
		t.Stop()
	}
	cancel, cancelCPU := time.Since(start), cpuTime()-cpu0
	n := float64(c.N)
	return result{
		"schedule_ns":     float64(schedule) / n,
		"schedule_cpu_ns": float64(scheduleCPU) / n,
		"heap_bytes":      float64(h1-h0) / n,
		"cancel_ns":       float64(cancel) / n,
		"cancel_cpu_ns":   float64(cancelCPU) / n,
	}
}

// steady is a server's timeouts: each of g goroutines keeps a ring of
// Ring/g pending timers and, as fast as it can, stops its oldest and arms
// a new one with a delay in [1 s, 60 s). One op is one Stop plus one
// AfterFunc.
func steady(newS func() scheduler, c config, g int) result {
	s := newS()
	defer s.Close()
	var ops atomic.Int64
	var ready, done sync.WaitGroup
	startC := make(chan struct{})
	stop := atomic.Bool{}
	for k := range g {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			rng := rand.New(rand.NewPCG(uint64(k), 2))
			ds := uniform(rng, 1<<16, time.Second, 60*time.Second)
			ring := make([]circulation.Timer, c.Ring/g)
			for i := range ring {
				ring[i] = s.AfterFunc(ds[i%len(ds)], nop)
			}
			ready.Done()
			<-startC
			n, i := 0, 0
			for ; !stop.Load(); n++ {
				for range 64 {
					ring[i].Stop()
					ring[i] = s.AfterFunc(ds[n&(len(ds)-1)], nop)
					if i++; i == len(ring) {
						i = 0
					}
				}
			}
			ops.Add(int64(n) * 64)
			for _, t := range ring {
				t.Stop()
			}
		}()
	}
	ready.Wait()
	runtime.GC()
	cpu0, start := cpuTime(), time.Now()
	close(startC)
	time.Sleep(c.Steady)
	stop.Store(true)
	done.Wait()
	cpu, wall := cpuTime()-cpu0, time.Since(start)
	return result{
		"ops_per_s":     float64(ops.Load()) / wall.Seconds(),
		"ops_per_cpu_s": float64(ops.Load()) / cpu.Seconds(),
	}
}

// burst arms N timers due within 1 s (delays in [0, 1 s)) and waits until
// all have fired: CPU seconds used by the process from before the first
// AfterFunc to the last callback, and the process's peak RSS.
func burst(newS func() scheduler, c config) result {
	ds := uniform(rand.New(rand.NewPCG(3, 3)), c.N, 0, time.Second)
	s := newS()
	defer s.Close()
	var left atomic.Int64
	left.Store(int64(c.N))
	all := make(chan struct{})
	f := func() {
		if left.Add(-1) == 0 {
			close(all)
		}
	}
	cpu0 := cpuTime()
	for _, d := range ds {
		s.AfterFunc(d, f)
	}
	<-all
	cpu := cpuTime() - cpu0
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return result{
		"cpu_s":  cpu.Seconds(),
		"rss_mb": float64(ru.Maxrss) / 1024,
	}
}

// lateness arms Late timers with delays in [1 ms, 200 ms), a few at a
// time, and records how late each callback ran after its deadline (armed
// time plus delay, on the monotonic clock): p50, p99, max and the share
// that ran early.
func lateness(newS func() scheduler, c config) result {
	rng := rand.New(rand.NewPCG(4, 4))
	s := newS()
	defer s.Close()
	late := make([]time.Duration, c.Late)
	var wg sync.WaitGroup
	wg.Add(c.Late)
	for i := range late {
		d := time.Millisecond + time.Duration(rng.Int64N(int64(199*time.Millisecond)))
		armed := time.Now()
		s.AfterFunc(d, func() {
			late[i] = time.Since(armed) - d
			wg.Done()
		})
		if i%100 == 99 {
			time.Sleep(time.Millisecond) // spread the arming over time and tick phases
		}
	}
	wg.Wait()
	slices.Sort(late)
	early := 0
	for _, l := range late {
		if l < 0 {
			early++
		}
	}
	q := func(p float64) float64 { return late[int(p*float64(len(late)-1))].Seconds() * 1e3 }
	return result{
		"p50_ms":   q(0.50),
		"p99_ms":   q(0.99),
		"max_ms":   late[len(late)-1].Seconds() * 1e3,
		"early_pc": 100 * float64(early) / float64(len(late)),
	}
}

// idle holds one timer an hour away and measures the CPU the process uses
// while it sleeps: microseconds of CPU per second of wall time.
func idle(newS func() scheduler, c config) result {
	s := newS()
	defer s.Close()
	t := s.AfterFunc(time.Hour, nop)
	defer t.Stop()
	time.Sleep(100 * time.Millisecond) // let start-up settle
	runtime.GC()
	cpu0, start := cpuTime(), time.Now()
	time.Sleep(c.Idle)
	cpu, wall := cpuTime()-cpu0, time.Since(start)
	return result{"cpu_us_per_s": float64(cpu.Microseconds()) / wall.Seconds()}
}

// cpuTime returns the user plus system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hold keeps N timers with delays in [1 min, 2 min) pending, none due
// during the measurement, and measures the CPU the process uses to hold
// them: milliseconds of CPU per second of wall time. It shows what a
// wheel's bookkeeping costs: rounds visit every timer once per revolution,
// levels move each timer at most once per level.
func hold(newS func() scheduler, c config) result {
	ds := uniform(rand.New(rand.NewPCG(5, 5)), c.N, time.Minute, 2*time.Minute)
	s := newS()
	defer s.Close()
	timers := make([]circulation.Timer, c.N)
	for i, d := range ds {
		timers[i] = s.AfterFunc(d, nop)
	}
	runtime.GC()
	cpu0, start := cpuTime(), time.Now()
	time.Sleep(c.Hold)
	cpu, wall := cpuTime()-cpu0, time.Since(start)
	for _, t := range timers {
		t.Stop()
	}
	return result{"cpu_ms_per_s": float64(cpu.Microseconds()) / 1e3 / wall.Seconds()}
}

package circulation_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/circulation-go/circulation"
)

// The benchmarks compare three ways to fire a task, side by side in one run
// (compare them with benchstat -col /impl):
//
//   - impl=trigger: a circulation.Trigger on the default scheduler;
//   - impl=mutex: the hand-rolled pattern the Trigger replaces, one mutex
//     around cancel-and-reschedule and one around the task (mutexTrigger);
//   - impl=bare: time.AfterFunc followed by Stop, the floor for any design
//     that hands its work to the runtime's timers. It guarantees nothing;
//   - impl=observed: the Trigger with an observer that does nothing, the
//     cost of WithObserver itself.

// mutexTrigger is the two-mutex pattern: cancel the pending timer and
// schedule a new one under futureMu; run the task under taskMu so that runs
// never overlap; the task reschedules itself under futureMu.
type mutexTrigger struct {
	futureMu sync.Mutex
	timer    *time.Timer
	stopped  bool
	taskMu   sync.Mutex
	f        func() (time.Duration, bool)
	run      func()
	wg       sync.WaitGroup // callbacks scheduled and not yet returned or stopped
}

func newMutexTrigger(f func() (time.Duration, bool)) *mutexTrigger {
	m := &mutexTrigger{f: f}
	m.run = m.runTask
	return m
}

func (m *mutexTrigger) FireAfter(d time.Duration) {
	m.futureMu.Lock()
	defer m.futureMu.Unlock()
	m.scheduleLocked(d)
}

func (m *mutexTrigger) scheduleLocked(d time.Duration) {
	if m.timer != nil && m.timer.Stop() {
		m.wg.Done()
	}
	m.wg.Add(1)
	m.timer = time.AfterFunc(d, m.run)
}

func (m *mutexTrigger) runTask() {
	defer m.wg.Done()
	m.taskMu.Lock()
	defer m.taskMu.Unlock()
	next, ok := m.f()
	if ok {
		m.futureMu.Lock()
		if !m.stopped {
			m.scheduleLocked(next)
		}
		m.futureMu.Unlock()
	}
}

func (m *mutexTrigger) stop() {
	m.futureMu.Lock()
	m.stopped = true
	if m.timer != nil && m.timer.Stop() {
		m.wg.Done()
	}
	m.futureMu.Unlock()
	m.wg.Wait()
}

// firer is what a benchmark fires.
type firer struct {
	fireAfter func(time.Duration)
	stop      func()
}

// impls returns the three implementations around a task that returns
// (0, false). block, if not nil, is received from at the start of every run.
func impls(block <-chan struct{}) []struct {
	name string
	new  func() firer
} {
	task := func() {
		if block != nil {
			<-block
		}
	}
	return []struct {
		name string
		new  func() firer
	}{
		{"trigger", func() firer {
			tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) { task(); return 0, false })
			return firer{tr.FireAfter, func() { _ = tr.Stop(context.Background()) }}
		}},
		{"observed", func() firer {
			tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) { task(); return 0, false },
				circulation.WithObserver(func(circulation.TriggerEvent) {}))
			return firer{tr.FireAfter, func() { _ = tr.Stop(context.Background()) }}
		}},
		{"mutex", func() firer {
			m := newMutexTrigger(func() (time.Duration, bool) { task(); return 0, false })
			return firer{m.FireAfter, m.stop}
		}},
		{"bare", func() firer {
			var wg sync.WaitGroup
			f := func() { task(); wg.Done() }
			return firer{func(d time.Duration) {
				wg.Add(1)
				if time.AfterFunc(d, f).Stop() {
					wg.Done()
				}
			}, wg.Wait}
		}},
	}
}

// BenchmarkFire fires a Trigger from one goroutine as fast as it can. A Fire
// made while an earlier one has not started its run yet coalesces into it, so
// most of these calls arm no timer; BenchmarkFireAndRun measures the full
// cycle instead.
func BenchmarkFire(b *testing.B) {
	for _, impl := range impls(nil) {
		b.Run("impl="+impl.name, func(b *testing.B) {
			f := impl.new()
			b.ReportAllocs()
			for b.Loop() {
				f.fireAfter(0)
			}
			b.StopTimer()
			f.stop()
		})
	}
}

// BenchmarkFireAndRun fires an idle Trigger and waits for the run it causes,
// so that every Fire arms a timer and every timer starts a run: the full
// cycle, with nothing to coalesce.
func BenchmarkFireAndRun(b *testing.B) {
	for _, impl := range []string{"trigger", "observed", "mutex", "bare"} {
		b.Run("impl="+impl, func(b *testing.B) {
			ran := make(chan struct{})
			task := func() (time.Duration, bool) { ran <- struct{}{}; return 0, false }
			var fire func()
			var stop func()
			switch impl {
			case "trigger":
				tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) { return task() })
				fire, stop = tr.Fire, func() { _ = tr.Stop(context.Background()) }
			case "observed":
				tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) { return task() },
					circulation.WithObserver(func(circulation.TriggerEvent) {}))
				fire, stop = tr.Fire, func() { _ = tr.Stop(context.Background()) }
			case "mutex":
				m := newMutexTrigger(task)
				fire, stop = func() { m.FireAfter(0) }, m.stop
			case "bare":
				f := func() { task() }
				fire, stop = func() { time.AfterFunc(0, f) }, func() {}
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

// BenchmarkFireAfterSuperseded arms a timer an hour away again and again:
// each call supersedes the previous one. heap-B/op is the live heap left
// after GC, per call: superseded timers must not accumulate.
func BenchmarkFireAfterSuperseded(b *testing.B) {
	for _, impl := range impls(nil) {
		b.Run("impl="+impl.name, func(b *testing.B) {
			f := impl.new()
			before := liveHeap()
			b.ReportAllocs()
			for b.Loop() {
				f.fireAfter(time.Hour)
			}
			b.StopTimer()
			b.ReportMetric(float64(liveHeap()-before)/float64(b.N), "heap-B/op")
			f.stop()
		})
	}
}

// BenchmarkFireWhileRunning fires while the task is running: the fires
// coalesce into one more run after it.
func BenchmarkFireWhileRunning(b *testing.B) {
	for _, impl := range impls(nil) {
		if impl.name == "bare" {
			continue // nothing to coalesce into
		}
		b.Run("impl="+impl.name, func(b *testing.B) {
			block := make(chan struct{})
			f := impls(block)[implIndex(impl.name)].new()
			f.fireAfter(0)
			block <- struct{}{} // the first run is now in flight and blocked
			b.ReportAllocs()
			for b.Loop() {
				f.fireAfter(0)
			}
			b.StopTimer()
			close(block)
			f.stop()
		})
	}
}

// BenchmarkFireParallel fires one Trigger with a trivial task from
// GOMAXPROCS goroutines at once.
func BenchmarkFireParallel(b *testing.B) {
	for _, impl := range impls(nil) {
		b.Run("impl="+impl.name, func(b *testing.B) {
			f := impl.new()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					f.fireAfter(0)
				}
			})
			b.StopTimer()
			f.stop()
		})
	}
}

func implIndex(name string) int {
	for i, impl := range impls(nil) {
		if impl.name == name {
			return i
		}
	}
	panic("no impl " + name)
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// BenchmarkFireAfterParallel arms a timer an hour away on one Trigger from
// GOMAXPROCS goroutines at once: every call supersedes another's and stops
// its timer.
func BenchmarkFireAfterParallel(b *testing.B) {
	for _, impl := range impls(nil) {
		b.Run("impl="+impl.name, func(b *testing.B) {
			f := impl.new()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					f.fireAfter(time.Hour)
				}
			})
			b.StopTimer()
			f.stop()
		})
	}
}

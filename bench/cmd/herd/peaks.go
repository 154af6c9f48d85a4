package main

import (
	"runtime/metrics"
	"sync"
	"time"
)

// peaks samples the process's goroutines, its stack memory (in use or
// not, threads' included) and the heap's objects (live, and dead not yet
// swept) every 50 ms, from watchPeaks until stop, and keeps the largest of
// each: most of what the peak RSS is made of.
type peaks struct {
	done chan struct{}
	wg   sync.WaitGroup

	goroutines uint64 // written by the sampler, read after wg.Wait
	stacks     uint64
	heap       uint64
}

func watchPeaks() *peaks {
	p := &peaks{done: make(chan struct{})}
	samples := []metrics.Sample{
		{Name: "/sched/goroutines:goroutines"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	p.wg.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(samples)
			p.goroutines = max(p.goroutines, samples[0].Value.Uint64())
			p.stacks = max(p.stacks, samples[1].Value.Uint64())
			p.heap = max(p.heap, samples[2].Value.Uint64())
			select {
			case <-p.done:
				return
			case <-t.C:
			}
		}
	})
	return p
}

// stop ends the sampling and returns the peaks: goroutines, and bytes of
// stack memory and of the heap's objects.
func (p *peaks) stop() (goroutines int, stacks, heap int64) {
	close(p.done)
	p.wg.Wait()
	return int(p.goroutines), int64(p.stacks), int64(p.heap)
}

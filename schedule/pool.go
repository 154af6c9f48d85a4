package schedule

import "sync"

// A pool starts the runners of the jobs of one watch that have no
// RunLimit, on goroutines it reuses, the way a wheel.Wheel starts its
// callbacks: a runner to start waits in a FIFO queue; a pool goroutine
// takes one, runs it, and comes back for more, and exits when it finds the
// queue empty. While the queue is not empty, at least one pool goroutine is
// free, taking from it rather than running a runner: one that takes a
// runner while others wait and no other is free starts a new goroutine
// before it runs its own. So a run that blocks holds up nothing but its own
// goroutine, as if it had one of its own, while quick runs share a few: a
// herd of a hundred thousand jobs due at once starts its runs without
// making, and holding at once, a hundred thousand goroutines.
//
// A pool belongs to a watch, and so to one Scheduler, and, in a
// testing/synctest bubble, to one bubble: its goroutines never run the
// jobs of another.
type pool struct {
	mu    sync.Mutex
	queue []work // queue[head:] wait to start
	head  int
	free  int // goroutines taking from the queue: at least one while it is not empty
}

// A work is a runner to start: its job, and the runs it starts with.
type work struct {
	j     *Job
	first pending
	batch []pending
}

// start queues the runner w, and starts a goroutine for it if none is
// free.
func (p *pool) start(w work) {
	p.mu.Lock()
	p.queue = append(p.queue, w)
	spawn := p.free == 0
	if spawn {
		p.free++
	}
	p.mu.Unlock()
	if spawn {
		go p.run()
	}
}

// run is a pool goroutine. It is counted in free when it starts. A runner
// whose Func calls runtime.Goexit ends it: it leaves its place to another.
func (p *pool) run() {
	normal := false
	defer func() {
		if normal {
			return
		}
		p.mu.Lock()
		spawn := p.head < len(p.queue) && p.free == 0
		if spawn {
			p.free++
		}
		p.mu.Unlock()
		if spawn {
			go p.run()
		}
	}()
	p.mu.Lock()
	for p.head < len(p.queue) {
		w := p.queue[p.head]
		p.queue[p.head] = work{}
		p.head++
		p.free--
		spawn := p.head < len(p.queue) && p.free == 0
		if spawn {
			p.free++ // the new goroutine, counted before anyone can look
		}
		if p.head == len(p.queue) {
			p.queue, p.head = p.queue[:0], 0
			if cap(p.queue) > 4096 {
				p.queue = nil // let a herd's queue go
			}
		}
		p.mu.Unlock()
		if spawn {
			go p.run()
		}
		w.j.runner(w.first, w.batch)
		p.mu.Lock()
		p.free++
	}
	p.free--
	p.mu.Unlock()
	normal = true
}

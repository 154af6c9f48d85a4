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
	mu   sync.Mutex
	head *chunk // the oldest chunk of the queue; nil when it is empty
	tail *chunk
	free int // goroutines taking from the queue: at least one while it is not empty
}

// A chunk holds part of a pool's queue: a herd's hundred thousand runners
// wait in chunks, never copied as a slice that grows would be.
type chunk struct {
	works      [chunkLen]work
	next       *chunk
	head, tail int // works[head:tail] wait
}

const chunkLen = 128

// A work is a runner to start: its job, and the runs it starts with.
type work struct {
	j *Job
	// p is, if its Due is set, the run to start before batch; once the
	// runner has taken a run, the run it is on. The runner's frame holds
	// none, so that a run seldom grows its goroutine's stack before the
	// Func does.
	p     pending
	batch []pending
	taken bool // p is the run the runner is on
}

// start queues the runner w, and starts a goroutine for it if none is
// free.
func (p *pool) start(w work) {
	p.mu.Lock()
	if p.tail == nil || p.tail.tail == chunkLen {
		c := new(chunk)
		if p.tail == nil {
			p.head = c
		} else {
			p.tail.next = c
		}
		p.tail = c
	}
	p.tail.works[p.tail.tail] = w
	p.tail.tail++
	spawn := p.free == 0
	if spawn {
		p.free++
	}
	p.mu.Unlock()
	if spawn {
		go p.run()
	}
}

// takeLocked takes the oldest work of the queue, and reports whether there
// was one. The caller holds p.mu.
func (p *pool) takeLocked(w *work) bool {
	c := p.head
	if c == nil || c.head == c.tail {
		return false
	}
	*w = c.works[c.head]
	c.works[c.head] = work{}
	c.head++
	if c.head == c.tail {
		if c.next == nil && c.tail < chunkLen {
			c.head, c.tail = 0, 0 // the only chunk: keep it
		} else {
			p.head = c.next
			if p.head == nil {
				p.tail = nil
			}
		}
	}
	return true
}

// waitingLocked reports whether runners wait. The caller holds p.mu.
func (p *pool) waitingLocked() bool {
	return p.head != nil && p.head.head < p.head.tail
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
		spawn := p.waitingLocked() && p.free == 0
		if spawn {
			p.free++
		}
		p.mu.Unlock()
		if spawn {
			go p.run()
		}
	}()
	var w work
	p.mu.Lock()
	for p.takeLocked(&w) {
		p.free--
		spawn := p.waitingLocked() && p.free == 0
		if spawn {
			p.free++ // the new goroutine, counted before anyone can look
		}
		p.mu.Unlock()
		if spawn {
			go p.run()
		}
		w.j.runner(&w)
		w = work{}
		p.mu.Lock()
		p.free++
	}
	p.free--
	p.mu.Unlock()
	normal = true
}

package wheel

import "sync"

// runners start a Wheel's due callbacks, each on a goroutine that nothing
// else waits for, using far fewer goroutines than one per callback.
//
// Due callbacks go into a FIFO queue. A runner is a goroutine that takes
// one callback from the queue, runs it, and comes back for more; it exits
// as soon as it finds the queue empty, so no runner ever parks or lingers.
// The invariant is: while the queue is not empty, at least one runner is
// free, that is taking from the queue rather than running a callback. A
// runner that takes a callback while others wait and no other runner is
// free starts a new runner before it runs its callback. So a callback
// that blocks holds up nothing but its own runner, exactly as if it had a
// goroutine of its own, while quick callbacks share a few runners.
//
// Measured with 1M timers due within 1 s (bench/cmd/compare, burst), this
// costs half the CPU and half the peak RSS of a goroutine per callback.
type runners struct {
	mu        sync.Mutex
	queue     []func() // queue[head:] are waiting to start
	head      int
	free      int        // runners taking from the queue: at least one while it is not empty
	waiters   int        // goroutines in drain
	submitted uint64     // callbacks submitted so far, for tests
	spawned   int        // runners started so far, for tests
	drained   *sync.Cond // signalled when the queue becomes empty while waiters > 0
}

// keepQueue is the largest queue capacity kept once the queue empties.
const keepQueue = 4096

func newRunners() *runners {
	r := &runners{}
	r.drained = sync.NewCond(&r.mu)
	return r
}

// submit queues fs to start, in order. It does not keep fs.
func (r *runners) submit(fs []func()) {
	if len(fs) == 0 {
		return
	}
	r.mu.Lock()
	r.queue = append(r.queue, fs...)
	r.submitted += uint64(len(fs))
	spawn := r.free == 0
	if spawn {
		r.free++
		r.spawned++
	}
	r.mu.Unlock()
	if spawn {
		go r.run()
	}
}

// run is a runner. It is counted in free when it starts.
func (r *runners) run() {
	r.mu.Lock()
	for r.head < len(r.queue) {
		f := r.queue[r.head]
		r.queue[r.head] = nil
		r.head++
		r.free--
		spawn := r.head < len(r.queue) && r.free == 0
		if spawn {
			r.free++ // the new runner, counted before anyone can look
			r.spawned++
		}
		if r.head == len(r.queue) {
			r.queue, r.head = r.queue[:0], 0
			if cap(r.queue) > keepQueue {
				r.queue = nil // let a burst's queue go
			}
			if r.waiters > 0 {
				r.drained.Broadcast()
			}
		}
		r.mu.Unlock()
		if spawn {
			go r.run()
		}
		f()
		r.mu.Lock()
		r.free++
	}
	r.free--
	r.mu.Unlock()
}

// drain waits until every callback submitted so far has started.
func (r *runners) drain() {
	r.mu.Lock()
	r.waiters++
	for r.head < len(r.queue) {
		r.drained.Wait()
	}
	r.waiters--
	r.mu.Unlock()
}

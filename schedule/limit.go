package schedule

import (
	"sync"
	"time"
)

// A RunLimit bounds the runs in flight of the jobs that share it. A run
// counts from the moment its slot is handed to a runner until its outcome
// is recorded: its claim, its Func and its finish. The runs over the limit
// wait their turn, in the order their slots fell due, holding no
// goroutine; to the overlap policy they are in flight. A run taken over
// from another node (Recovered) never waits, since its lease is running,
// and may take the runs in flight past the limit for a while.
//
// A hundred thousand jobs due at the same instant on one database then
// make as many claims in flight as the limit allows, not a hundred
// thousand goroutines, each holding its stack and a connection's worth of
// waiting. By default a job shares the RunLimit of its Store, if the Store
// has one (a RunLimit method, as sqlstore.Store has), and has none
// otherwise.
//
// A RunLimit is safe for concurrent use. Its zero value is not usable:
// make one with NewRunLimit.
type RunLimit struct {
	max int

	mu      sync.Mutex
	running int        // runs in flight
	queue   []*waiting // runs waiting, oldest first; queue[:head] are gone
	head    int
	waits   int         // runs waiting, not dropped
	held    holds       // runs handed to their owners (Sharer), soonest hand-off first
	timer   *time.Timer // fires at the earliest hand-off time
	handing bool        // a handOff is under way
	rehand  bool        // and the timer fired meanwhile: it looks again
}

// A waiting run is a runner a RunLimit has not started yet: the batch of
// runs it is to run for its job.
type waiting struct {
	work
	state uint8 // waitQueued, waitStarted or waitDropped; guarded by RunLimit.mu

	// A hold is not a runner: it holds runs of its job (batch) handed
	// to their owner until at, then until last while the owner is
	// live, and until far while the owner claims the slots held with it
	// (holdLocked, again).
	hold     bool
	asked    bool // its store answered the latest Claimed
	claimed  bool // and said its slots were claimed
	progress bool // and that its owner claimed others held with it
	unbegun  bool // and that herdHolds of its owner's, none of them found claimed before, were not
	begun    bool // a look found others held with it claimed: the owner began
	at       time.Time
	last     time.Time
	far      time.Time
	due      time.Time // of its first slot
}

const (
	waitQueued uint8 = iota
	waitStarted
	waitDropped
)

// NewRunLimit returns a RunLimit of n runs in flight. It panics if n < 1.
func NewRunLimit(n int) *RunLimit {
	if n < 1 {
		panic("schedule: NewRunLimit with n < 1")
	}
	return &RunLimit{max: n}
}

// Running returns how many runs are in flight.
func (l *RunLimit) Running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running
}

// Waiting returns how many runs wait for their turn.
func (l *RunLimit) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waits
}

// A limited Store bounds the runs in flight of the jobs on it: they share
// its RunLimit unless WithRunLimit says otherwise.
type limited interface {
	RunLimit() *RunLimit
}

// enter starts a runner of j for first and batch if the limit allows, or else queues
// it and returns its place, for j to drop should it stop first. now says
// the run may not wait: it starts at once, past the limit if need be. The
// caller holds j.mu.
func (l *RunLimit) enter(j *Job, first pending, batch []pending, now bool) *waiting {
	l.mu.Lock()
	if l.running < l.max || now {
		l.running++
		l.mu.Unlock()
		go l.serve(work{j: j, p: first, batch: batch})
		return nil
	}
	w := &waiting{work: work{j: j, p: first, batch: batch}}
	l.queue = append(l.queue, w)
	l.waits++
	l.mu.Unlock()
	return w
}

// serve runs the runner of w, then those waiting, one after another, on
// one goroutine, until none waits. A Func that calls runtime.Goexit ends
// the goroutine: another takes its place.
func (l *RunLimit) serve(w work) {
	normal := false
	defer func() {
		if !normal {
			if w := l.next(); w != nil {
				go l.serve(w.work)
			}
		}
	}()
	for {
		w.j.runner(&w)
		next := l.next()
		if next == nil {
			normal = true
			return
		}
		w = next.work
	}
}

// next takes the oldest run waiting, which its caller is to start; with
// none, it gives the caller's place in the limit up and returns nil.
func (l *RunLimit) next() *waiting {
	l.mu.Lock()
	var w *waiting
	for l.head < len(l.queue) {
		c := l.queue[l.head]
		l.queue[l.head] = nil
		l.head++
		if c.state == waitQueued {
			c.state = waitStarted
			l.waits--
			w = c
			break
		}
	}
	if l.head == len(l.queue) {
		l.queue, l.head = l.queue[:0], 0
		if cap(l.queue) > 1024 {
			l.queue = nil // a herd's queue is not kept for the next
		}
	} else if l.head > 1024 && l.head > len(l.queue)/2 {
		n := copy(l.queue, l.queue[l.head:])
		clear(l.queue[n:]) // the runs moved, and those taken: the array holds none of them twice
		l.queue, l.head = l.queue[:n], 0
	}
	if w == nil {
		l.running--
	}
	l.mu.Unlock()
	if w != nil {
		w.j.started(w)
	}
	return w
}

// drop takes w, a runner waiting or a hold, out of the queue or the
// holds, and reports false if it has started, or its hold ended.
func (l *RunLimit) drop(w *waiting) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.state != waitQueued {
		return false
	}
	w.state = waitDropped
	if !w.hold {
		l.waits--
	}
	return true
}

package wheel

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/circulation-go/circulation"
)

// A Wheel is a hashed hierarchical timing wheel: a circulation.Scheduler
// that keeps millions of pending timers cheaply. See the package
// documentation for the design and its costs.
//
// A Wheel must be created with New; the zero value is not usable. Its
// methods and the Timers it returns are safe for concurrent use. A Wheel
// owns one goroutine from New until Stop: call Stop when done with it. A
// Wheel created inside a testing/synctest bubble keeps its goroutine and
// timers in the bubble and runs on the bubble's fake clock.
type Wheel struct {
	start   time.Time     // tick 0; ticks are counted on its monotonic clock
	tick    time.Duration // as set by WithTick
	perTick divisor       // divides by tick
	inline  bool          // as set by WithInlineCallbacks
	shards  []*shard
	homes   homes // each goroutine's shard, by its stack's address (see home.go)

	// wakeAt is the time the wheel's goroutine sleeps until, or never
	// while it is scanning the shards or has nothing to wait for. The
	// goroutine sets it to never before a scan and lowers it to what it
	// found after; AfterFunc lowers it when it brings a shard's next event
	// forward, and kicks the goroutine if it did. Only ever lowered with
	// CompareAndSwap, except by the goroutine's reset, so an earlier event
	// published during a scan is never lost.
	wakeAt atomic.Uint64
	kick   chan struct{} // capacity 1: a pending wake-up for the goroutine
	scans  atomic.Uint64 // how many times the goroutine has scanned the shards, for tests

	run    *runners      // start due callbacks, unless inline
	closed atomic.Bool   // set by Stop before anything else: AfterFunc panics
	quit   chan struct{} // closed by Stop: the goroutine exits
	exited chan struct{} // closed by the goroutine as it exits
	done   chan struct{} // closed by the first Stop as it returns

	// mu orders Stop against the goroutine's inline callbacks.
	mu        sync.Mutex
	stopped   bool // written by Stop
	inCall    bool // written by the goroutine: it is running an inline callback
	abandoned int  // written by the goroutine as it exits: held timers it marked dropped
}

var _ circulation.Scheduler = (*Wheel)(nil)

// New returns a running Wheel, configured by opts. It panics, naming the
// option, if an option's value is invalid. The Wheel's goroutine starts
// now and runs until Stop; it sleeps whenever no timer is due.
func New(opts ...Option) *Wheel {
	o := defaultOptions()
	for _, opt := range opts {
		opt.apply(&o)
	}
	o.validate()
	w := &Wheel{
		start:   time.Now(),
		tick:    o.tick,
		perTick: newDivisor(uint64(o.tick)),
		inline:  o.inline,
		shards:  make([]*shard, o.shards),
		kick:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		exited:  make(chan struct{}),
		done:    make(chan struct{}),
		run:     newRunners(),
	}
	for i := range w.shards {
		w.shards[i] = newShard(o.slotBits(), uint64(o.tick))
		w.shards[i].inline = o.inline
	}
	w.homes.init(len(w.shards))
	w.wakeAt.Store(never)
	go w.loop()
	return w
}

// AfterFunc arranges for f to be called once, after at least d has elapsed
// since the call, and returns a Timer whose Stop cancels the call. f is
// never called early, and late only by the time the wheel's goroutine
// takes to wake (as a runtime timer would) or, for a timer whose deadline
// falls in a tick that starts the span of a slot above level 0, by up to
// one tick. f runs on a runner goroutine that nothing else waits for:
// quick callbacks share runners, and a callback that blocks holds up only
// its own (see Runners in the package documentation). A d of zero or less,
// or a deadline in a tick the wheel's goroutine has already handled,
// starts f at once, on a goroutine of its own.
//
// With WithInlineCallbacks, f runs on the wheel's goroutine instead, and a
// d of zero or less waits for the next tick.
//
// AfterFunc takes O(1) time. A call it does not start at once takes a
// 32-byte timer from its shard: one whose earlier call is over, or else a
// new one, which the shard allocates four at a time (128 bytes). The
// Timer of a call that takes a timer is its own: its Stop never affects
// a later call that the same timer serves. A Timer kept after its call
// is over keeps its timer and the timer's three siblings in memory.
// AfterFunc panics if f is nil or the Wheel was stopped.
func (w *Wheel) AfterFunc(d time.Duration, f func()) circulation.Timer {
	if f == nil {
		panic("wheel: AfterFunc with nil func")
	}
	if w.closed.Load() {
		panic("wheel: AfterFunc on stopped Wheel")
	}
	if d <= 0 && !w.inline {
		go f()
		return fired
	}
	// The monotonic clock is read here, not cached: a cached reading
	// would make timers early. A wait for the lock after it only makes
	// the timer later.
	end := w.now() + uint64(max(d, 0)) // < 2^64: each term < 2^63
	sh := w.lockHome()
	if sh.stopped {
		sh.mu.Unlock()
		panic("wheel: AfterFunc on stopped Wheel")
	}
	at, off := w.deadline(end, sh.unit)
	if at <= sh.cur {
		// Due in a tick the wheel's goroutine has already handled (its
		// clock reading came after ours): start f now, or, inline, in
		// the next tick. No timer is taken for a call started here.
		if !w.inline {
			sh.mu.Unlock()
			go f()
			return fired
		}
		at, off = sh.cur+1, 0
	}
	t := sh.take()
	t.f, t.at, t.off = f, at, t.off|off
	e, sooner := sh.add(t)
	h := t.timerOf()
	sh.mu.Unlock()
	if sooner {
		w.wake(e)
	}
	return h
}

// deadline returns the first tick that starts at or after end, and how
// many units of unit nanoseconds before that tick end is (rounded down, so
// that the deadline this gives back is never early).
func (w *Wheel) deadline(end, unit uint64) (at uint64, off uint32) {
	at, r := w.perTick.div(end)
	if r != 0 {
		at++
		if gap := uint64(w.tick) - r; unit == 1 {
			off = uint32(gap) // < 2^offBits: see offUnit
		} else {
			off = uint32(gap / unit)
		}
	}
	return at, off
}

// A divisor divides by a fixed d with a multiplication instead of a
// division instruction, which costs as much as the rest of AfterFunc.
type divisor struct {
	d, inv uint64 // inv = floor((2^64-1)/d)
}

func newDivisor(d uint64) divisor { return divisor{d, math.MaxUint64 / d} }

// div returns n/d and n%d. The estimate n*inv/2^64 is at most 2 below n/d,
// since inv is less than 2^64/d by at most 1 + 1/d and n < 2^64.
func (v divisor) div(n uint64) (q, r uint64) {
	q, _ = bits.Mul64(n, v.inv)
	r = n - q*v.d
	for r >= v.d {
		q++
		r -= v.d
	}
	return q, r
}

// now returns the time since the wheel started, in nanoseconds.
func (w *Wheel) now() uint64 {
	return uint64(time.Since(w.start))
}

// wake makes sure the goroutine wakes by time e: it lowers wakeAt to e and,
// if it did, kicks the goroutine out of its sleep.
func (w *Wheel) wake(e uint64) {
	if w.lower(e) {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// lower lowers wakeAt to e if e is sooner and reports whether it did.
func (w *Wheel) lower(e uint64) bool {
	for {
		cur := w.wakeAt.Load()
		if e >= cur {
			return false
		}
		if w.wakeAt.CompareAndSwap(cur, e) {
			return true
		}
	}
}

// Len returns the number of timers pending now: armed, and neither fired,
// stopped nor dropped. It takes each shard's lock in turn, so under
// concurrent use the count is a sum of snapshots.
func (w *Wheel) Len() int {
	n := 0
	for _, sh := range w.shards {
		sh.mu.Lock()
		n += sh.count
		sh.mu.Unlock()
	}
	return n
}

// Stop stops the wheel and returns the number of pending timers it
// dropped. When Stop returns, every callback that fell due before it has
// been handed to a goroutine, none will start afterwards, the wheel's
// goroutine has done its last work, and AfterFunc panics. Stop does not
// wait for callbacks that have started to complete. Later calls, and calls
// concurrent with the first, drop nothing and return 0 once the first call
// has returned, so that what it guarantees holds when any call returns.
//
// With WithInlineCallbacks, callbacks that were due but had not started
// when Stop ended the goroutine are dropped, as pending timers are: their
// Timers' Stop reports true once, and Stop counts them. Stop called while
// the wheel's goroutine runs an inline callback (for example from inside
// it) returns without waiting: the goroutine exits as soon as that
// callback returns, starting no other, and the callbacks it drops then
// are not in Stop's count (their Timers' Stop still reports true once).
func (w *Wheel) Stop() (dropped int) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		<-w.done
		return 0
	}
	defer close(w.done)
	w.stopped = true
	w.closed.Store(true)
	busy := w.inCall
	w.mu.Unlock()
	close(w.quit)
	if !busy {
		<-w.exited
		w.run.drain()
		dropped = w.abandoned // written before exited was closed
	}
	for _, sh := range w.shards {
		sh.mu.Lock()
		sh.stopped = true
		dropped += sh.drop()
		sh.mu.Unlock()
	}
	return dropped
}

// loop is the wheel's goroutine: it advances every shard that has an
// event due to the current time, starts the callbacks that fell due, and
// sleeps until the next shard event.
func (w *Wheel) loop() {
	defer close(w.exited)
	sleep := time.NewTimer(time.Duration(math.MaxInt64))
	defer sleep.Stop()
	var due []func()
	var held []*timer // inline only: due's timers, in the same order
	for {
		// Publish "scanning" before looking at any shard: an AfterFunc
		// that brings an event forward after we have looked at its shard
		// then lowers wakeAt below never, and the min below keeps it.
		w.wakeAt.Store(never)
		w.scans.Add(1)
		now := w.now()
		next := uint64(never)
		for _, sh := range w.shards {
			// A shard whose next event is later needs no lock. Its cur
			// stays behind, so a timer placed meanwhile may sit a level
			// higher than it would and move down once more. An
			// AfterFunc that lowers next after this load lowers wakeAt
			// too.
			e := sh.next.Load()
			if e <= now {
				sh.mu.Lock()
				due = sh.advance(now, due)
				e = sh.next.Load()
				if w.inline {
					held = append(held, sh.held...)
					clear(sh.held)
					sh.held = sh.held[:0]
				}
				sh.mu.Unlock()
			}
			next = min(next, e)
		}
		w.lower(next)
		if testHookDispatch != nil && len(due) > 0 {
			testHookDispatch()
		}
		if !w.dispatch(due, held) {
			return
		}
		clear(due)
		due = due[:0]
		clear(held)
		held = held[:0]

		at := w.wakeAt.Load()
		if at == never {
			select {
			case <-w.kick:
			case <-w.quit:
				return
			}
			continue
		}
		d := w.until(at)
		if d <= 0 {
			continue
		}
		sleep.Reset(d)
		select {
		case <-sleep.C:
		case <-w.kick:
			sleep.Stop()
		case <-w.quit:
			return
		}
	}
}

// testHookDispatch, if set, runs on the wheel's goroutine after it has
// collected due callbacks and before it dispatches them.
var testHookDispatch func()

// until returns how long from now time at is.
func (w *Wheel) until(at uint64) time.Duration {
	if at > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(at) - time.Since(w.start)
}

// dispatch starts the callbacks in due and reports whether the goroutine
// should go on. The runners start them, unless the wheel is inline: then
// they run here, each unless its timer (held[i] for due[i]) was stopped
// since it fired, and Stop may end the goroutine between two callbacks.
// The goroutine then marks the timers of the callbacks it did not start
// as dropped, and counts them in abandoned.
func (w *Wheel) dispatch(due []func(), held []*timer) bool {
	if !w.inline {
		w.run.submit(due)
		return true
	}
	for i, f := range due {
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			w.abandon(held[i:])
			return false
		}
		if !held[i].start() { // (w.mu, then a shard's lock: nothing nests them the other way)
			w.mu.Unlock()
			continue
		}
		w.inCall = true
		w.mu.Unlock()
		f()
		w.mu.Lock()
		w.inCall = false
		stopped := w.stopped
		w.mu.Unlock()
		if stopped {
			w.abandon(held[i+1:])
			return false
		}
	}
	return true
}

// abandon marks the held timers whose callbacks will not start, since
// Stop ended the goroutine, as dropped, so that a Timer.Stop on each
// reports true once, and adds their number to abandoned.
func (w *Wheel) abandon(ts []*timer) {
	n := 0
	for _, t := range ts {
		sh := t.sh
		sh.mu.Lock()
		if t.at == held {
			t.at = dropped
			n++
		}
		sh.mu.Unlock()
	}
	w.mu.Lock()
	w.abandoned += n
	w.mu.Unlock()
}

package wheel

import (
	"unsafe"

	"github.com/circulation-go/circulation"
)

// A timer is the record of one pending call of a Wheel, and, once that
// call is over, of a later one (see handle). It is 32 bytes, allocated
// timerBatch at a time (see batch). While the call is pending the wheel
// refers to it from one slot; Stop lets go of the callback and of the
// slot's entry at once, and the shard keeps the timer for a later call or
// leaves it to the garbage collector with the rest of its batch.
//
// sh never changes. f, at, off and pos are guarded by sh.mu; at and off are
// written before the timer is placed.
type timer struct {
	f   func()                                 // the callback while the call is pending; nil once it has fired or was stopped or dropped
	sh  *shard                                 // the shard that holds it; nil only in fired, the Timer of a call AfterFunc started at once
	_   [16 - 2*unsafe.Sizeof(uintptr(0))]byte // with 4-byte pointers, makes a timer 32 bytes too (see handle)
	at  uint64                                 // while pending, its deadline rounded up to a tick, counted in ticks from the Wheel's start; then dropped, claimed, held or started
	pos uint32                                 // its position in its slot (see slot)
	off uint32                                 // the low offBits bits: its exact deadline is at ticks less that many units (see shard.exact); the rest: its generation
}

// timerSize is the size of a timer on every platform. handle depends on
// it: a build where a timer has another size fails here.
const timerSize = 32

var (
	_ [timerSize - unsafe.Sizeof(timer{})]byte
	_ [unsafe.Sizeof(timer{}) - timerSize]byte
)

// The bits of timer.off above offBits are the timer's generation: how
// many calls had it before the current one, from 0 to lastGen. There are
// timerSize generations, one for each byte of the timer (see handle).
const (
	offBits = 27
	offMask = 1<<offBits - 1
	lastGen = 1<<(32-offBits) - 1
)

// gen returns t's generation.
func (t *timer) gen() uint32 { return t.off >> offBits }

// A handle is the circulation.Timer of the call of generation g of a
// timer, for g < lastGen: the address of the timer's byte g. (The last
// call of a timer gets the timer itself as its Timer.) So every call has
// a Timer of its own, though a timer serves up to timerSize calls in
// turn: a caller may keep a Timer and call its Stop long after the call
// is over, when the timer serves another call, and that Stop must report
// false and leave the other call alone. It does: it finds that the
// timer's generation is no longer its own.
//
// The timer is found by rounding the address down to a multiple of
// timerSize: a batch of timers is one object of a power-of-two size,
// which the Go allocator places at a multiple of its size. The timers of
// a batch that is not so placed (no Go release does that) start at
// lastGen: each serves one call, whose Timer is the timer itself.
//
// doc.go has what reusing timers gained.
type handle byte

// Stop prevents the call's callback from running; see timer.stop.
func (h *handle) Stop() bool {
	t := (*timer)(unsafe.Pointer(uintptr(unsafe.Pointer(h)) &^ (timerSize - 1)))
	return t.stop(uint32(uintptr(unsafe.Pointer(h)) & (timerSize - 1)))
}

// Stop prevents the callback of t's last call from running; see stop.
func (t *timer) Stop() bool {
	return t.stop(lastGen)
}

// timerOf returns the Timer of t's current call.
func (t *timer) timerOf() circulation.Timer {
	g := t.gen()
	if g == lastGen {
		return t
	}
	return (*handle)(unsafe.Add(unsafe.Pointer(t), g))
}

// stop stops the call of generation gen of t: it prevents the call's
// callback from running and reports whether it did so; false if the call
// is over (its callback has been started, or handed to the runners, which
// start it, or the call was stopped before), whether or not t serves a
// later call by now. On a wheel with inline callbacks, a due callback
// that the wheel's goroutine has not started yet is still prevented. A
// call that Wheel.Stop dropped (pending, or due and not started on an
// inline wheel) counts as stopped by the first Stop after the drop, which
// reports true: its callback will never run, and an owner that accounts
// for its timers by Stop's result (as a Trigger does) must learn so. Stop
// does not wait for the callback to complete. It takes O(1) time, holding
// the lock of one shard, and the wheel lets go of the callback and of the
// slot's entry at once. It is safe for concurrent use.
func (t *timer) stop(gen uint32) bool {
	sh := t.sh
	if sh == nil {
		return false
	}
	sh.mu.Lock()
	if t.gen() != gen {
		// The call is over, and t serves a later one.
		sh.mu.Unlock()
		return false
	}
	if t.f == nil {
		ok := t.at == dropped || t.at == held
		if ok {
			t.at = claimed
		}
		sh.mu.Unlock()
		return ok
	}
	sh.remove(t)
	sh.recycle(t)
	sh.mu.Unlock()
	return true
}

// Values of at once a timer is not pending (f is nil): dropped by
// Wheel.Stop, or abandoned by an inline wheel's goroutine that Wheel.Stop
// ended, and not yet stopped; claimed by a Stop that stopped it (pending,
// dropped or held); held: fired on an inline
// wheel, its callback not started yet (Stop still prevents it); started:
// its callback has been started, or handed to the runners, which start it.
const (
	dropped = iota
	claimed
	held
	started
)

// start marks the held timer t as started and reports whether it was
// still held, that is whether no Stop prevented its callback.
func (t *timer) start() bool {
	sh := t.sh
	sh.mu.Lock()
	ok := t.at == held
	if ok {
		t.at = started
	}
	sh.mu.Unlock()
	return ok
}

// take returns a timer for a new call: the timer whose call ended last,
// with its generation advanced, which is likely still in the cache, or
// else a new one.
func (sh *shard) take() *timer {
	if n := len(sh.free); n > 0 {
		t := sh.free[n-1]
		sh.free[n-1] = nil
		sh.free = sh.free[:n-1]
		t.off = (t.gen() + 1) << offBits
		return t
	}
	return sh.batch.next(sh)
}

// recycle keeps t, whose call is over and which the shard no longer
// refers to, for a later call, unless t has served its last generation or
// the shard keeps keepTimers already. (An inline wheel does not recycle
// the timers it fires: its goroutine refers to them until their callbacks
// start.)
func (sh *shard) recycle(t *timer) {
	if t.gen() != lastGen && len(sh.free) < keepTimers {
		sh.free = append(sh.free, t)
	}
}

// keepTimers is the largest number of timers a shard keeps for reuse, so
// that a program that stops a million timers at once gets their memory
// back.
const keepTimers = 256

// A batch hands out new timers that were allocated together. One
// allocation of timerBatch timers costs about what one of a single timer
// does. A batch belongs to a shard and is guarded by its lock.
type batch struct {
	timers *[timerBatch]timer // the timers from used on are not handed out yet
	used   int
}

// timerBatch is how many timers are allocated at once: a power of two, so
// that a batch, and each of its timers, is aligned as handle needs. A
// reference to one timer keeps all of them in memory, so it is small: a
// program that keeps one stale Timer of every batch, and none of the
// others, holds 128 bytes per Timer instead of 32.
const timerBatch = 4

// next returns a new timer of shard sh: its sh and generation are set,
// and nothing else.
func (b *batch) next(sh *shard) *timer {
	if b.timers == nil || b.used == timerBatch {
		b.timers, b.used = new([timerBatch]timer), 0
		gen := uint32(0)
		if uintptr(unsafe.Pointer(b.timers))%timerSize != 0 {
			// Not aligned as handle needs: one call per timer.
			gen = lastGen
		}
		for i := range b.timers {
			b.timers[i].sh = sh
			b.timers[i].off = gen << offBits
		}
	}
	t := &b.timers[b.used]
	b.used++
	return t
}

// fired is the Timer AfterFunc returns for a callback it started at once.
var fired = &timer{}

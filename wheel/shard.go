package wheel

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
)

// never is the tick of an event that does not exist.
const never = math.MaxUint64

// A shard is one independently locked hierarchical wheel. A Wheel spreads
// its timers over several shards so that goroutines on different
// processors do not contend for one lock.
//
// Time is counted in ticks since the Wheel started. A timer due at tick at
// is kept at the level of the highest base-2^bits digit in which at differs
// from cur, in the slot named by that digit of at. So a level-k timer
// agrees with cur on every digit above k and is ahead of it in digit k:
// it cannot be due before cur reaches the start of its slot's span, the
// tick whose digit k is the slot and whose lower digits are zero. At that
// tick the slot is emptied and its timers move down to lower levels (or
// fire, if due then): each timer moves at most once per level.
//
// All fields are guarded by mu, except that next and count, written under
// mu, are also read without it: next by the wheel's goroutine, to skip a
// shard with nothing due without taking its lock, and count by Len.
type shard struct {
	mu      sync.Mutex
	cur     uint64        // every timer due at or before cur has fired; only advance moves it
	next    atomic.Uint64 // a lower bound on the tick of the shard's next event (fire or move), or never
	levels  []*level      // levels[k] spans slots<<(k*bits) ticks; nil until a timer needs it
	bits    uint          // log2 of the number of slots per level
	mask    uint64        // slots - 1
	levelAt [65]uint8     // levelAt[n] is the level of a timer whose deadline's highest bit that differs from cur is bit n-1
	stopped bool          // set by Wheel.Stop: the shard accepts no timer
	count   atomic.Int64

	_ [64]byte // keep neighbouring shards' locks on different cache lines
}

// A level is one ring of slots of a shard.
type level struct {
	slots    []slot   // slots[s] holds the level's timers whose digit is s
	occupied []uint64 // bit s is set if and only if slots[s] is not empty
}

func newShard(slotBits uint) *shard {
	sh := &shard{
		levels: make([]*level, (64+slotBits-1)/slotBits),
		bits:   slotBits,
		mask:   1<<slotBits - 1,
	}
	sh.next.Store(never)
	for n := 1; n <= 64; n++ {
		sh.levelAt[n] = uint8(uint(n-1) / slotBits)
	}
	return sh
}

// levelOf returns the level a timer due at at sits on while the shard is at
// cur. It requires at > cur.
func (sh *shard) levelOf(at uint64) uint {
	return uint(sh.levelAt[bits.Len64(at^sh.cur)])
}

// add makes t pending and returns the tick of its first event, and whether
// that is sooner than next was (next is lowered then: the caller must wake
// the wheel's goroutine by then). If t is due at or before cur, the tick
// the wheel's goroutine has already handled (its clock reading came after
// the caller's), add does nothing and reports due if the caller starts
// such a timer itself (startDue); otherwise t is moved to the next tick.
func (sh *shard) add(t *timer, startDue bool) (event uint64, sooner, due bool) {
	if t.at <= sh.cur {
		if startDue {
			return 0, false, true
		}
		t.at = sh.cur + 1
	}
	event = sh.place(t)
	sh.count.Add(1)
	if event < sh.next.Load() {
		sh.next.Store(event)
		return event, true, false
	}
	return event, false, false
}

// place puts t, due at t.at > sh.cur, on its level and returns the tick at
// which the shard must next look at it: t.at itself on level 0, else the
// start of its slot's span.
func (sh *shard) place(t *timer) (event uint64) {
	k := sh.levelOf(t.at)
	shift := k * sh.bits
	s := t.at >> shift & sh.mask
	lv := sh.levels[k]
	if lv == nil {
		lv = &level{
			slots:    make([]slot, sh.mask+1),
			occupied: make([]uint64, (sh.mask+64)/64),
		}
		sh.levels[k] = lv
	}
	lv.slots[s].push(t)
	lv.occupied[s/64] |= 1 << (s % 64)
	return t.at >> shift << shift
}

// remove takes the pending timer t out of its slot in O(1) and drops its
// callback. It does not recompute next: a stale next only costs the
// wheel's goroutine one spurious look.
func (sh *shard) remove(t *timer) {
	k := sh.levelOf(t.at)
	s := t.at >> (k * sh.bits) & sh.mask
	lv := sh.levels[k]
	lv.slots[s].remove(t)
	if lv.slots[s].len() == 0 {
		lv.occupied[s/64] &^= 1 << (s % 64)
	}
	t.f = nil
	sh.count.Add(-1)
}

// advance moves the shard to tick now: it fires every timer due at or
// before now, appending its func to due, and recomputes next.
func (sh *shard) advance(now uint64, due []func()) []func() {
	if now <= sh.cur {
		return due
	}
	if sh.next.Load() > now {
		// next is a lower bound: nothing happens before now.
		sh.cur = now
		return due
	}
	for {
		e := sh.nextEvent()
		if e > now || e == never {
			sh.next.Store(e)
			break
		}
		sh.cur = e
		due = sh.expire(due)
	}
	sh.cur = now
	return due
}

// nextEvent returns the first tick after cur at which a slot's span starts
// on some level and the slot holds timers, or never.
func (sh *shard) nextEvent() uint64 {
	e := uint64(never)
	for k, lv := range sh.levels {
		if lv == nil {
			continue
		}
		shift := uint(k) * sh.bits
		digit := sh.cur >> shift & sh.mask
		s, ok := lv.firstAfter(digit)
		if !ok {
			continue
		}
		// Same digits as cur above k, digit s at k, zeros below.
		if t := (sh.cur>>shift&^sh.mask | s) << shift; t < e {
			e = t
		}
	}
	return e
}

// firstAfter returns the first occupied slot after slot d.
func (lv *level) firstAfter(d uint64) (uint64, bool) {
	i := d + 1
	w := i / 64
	if w >= uint64(len(lv.occupied)) {
		return 0, false
	}
	word := lv.occupied[w] &^ (1<<(i%64) - 1)
	for {
		if word != 0 {
			return w*64 + uint64(bits.TrailingZeros64(word)), true
		}
		w++
		if w == uint64(len(lv.occupied)) {
			return 0, false
		}
		word = lv.occupied[w]
	}
}

// expire handles tick cur, which nextEvent chose: from the top level down,
// every slot whose span starts at cur moves its timers down, then level 0's
// slot for cur fires.
func (sh *shard) expire(due []func()) []func() {
	for k := len(sh.levels) - 1; k >= 1; k-- {
		lv := sh.levels[k]
		shift := uint(k) * sh.bits
		if lv == nil || sh.cur&(1<<shift-1) != 0 {
			continue
		}
		s := sh.cur >> shift & sh.mask
		items := lv.take(s)
		for i, t := range items {
			items[i] = nil
			if t.at <= sh.cur {
				due = sh.fire(t, due)
				continue
			}
			// t's digit k now equals cur's, so it lands lower, never
			// back in a slot that expire still has to look at.
			sh.place(t)
		}
		lv.slots[s].give(items)
	}
	if lv := sh.levels[0]; lv != nil {
		s := sh.cur & sh.mask
		items := lv.take(s)
		for i, t := range items {
			items[i] = nil
			due = sh.fire(t, due)
		}
		lv.slots[s].give(items)
	}
	return due
}

// fire marks t as no longer pending and appends its func to due.
func (sh *shard) fire(t *timer, due []func()) []func() {
	due = append(due, t.f)
	t.f = nil
	sh.count.Add(-1)
	return due
}

// take empties slot s and returns its timers. Nothing refills the slot
// before the caller gives the slice back: expire never places a timer in
// the slot it is emptying.
func (lv *level) take(s uint64) []*timer {
	lv.occupied[s/64] &^= 1 << (s % 64)
	return lv.slots[s].take()
}

// drop removes every pending timer and returns how many there were.
func (sh *shard) drop() int {
	n := 0
	for k, lv := range sh.levels {
		if lv == nil {
			continue
		}
		for i := range lv.slots {
			for _, t := range lv.slots[i].take() {
				t.f = nil
				n++
			}
		}
		sh.levels[k] = nil
	}
	sh.count.Store(0)
	sh.next.Store(never)
	return n
}

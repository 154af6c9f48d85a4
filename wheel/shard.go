package wheel

import (
	"iter"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
)

// never is the tick or time of an event that does not exist.
const never = math.MaxUint64

// A shard is one independently locked hierarchical wheel. A Wheel spreads
// its timers over several shards so that goroutines running at once do
// not contend for one lock.
//
// Time is counted in nanoseconds since the Wheel started, and in ticks of
// its resolution. A timer's deadline rounded up to a tick is at. The timer
// is kept at the level of the highest base-2^bits digit in which at differs
// from cur, in the slot named by that digit of at. So a level-k timer
// agrees with cur on every digit above k and is ahead of it in digit k:
// it cannot be due before cur reaches the start of its slot's span, the
// tick whose digit k is the slot and whose lower digits are zero. At that
// tick the slot is emptied and its timers move down to lower levels (or
// fire, if due then): each timer moves at most once per level.
//
// Level 0 also keeps, for each slot, the earliest exact deadline in it:
// the shard's next event is that deadline for the first slot, not the
// tick that ends it, so a timer fires as soon as its exact deadline has
// passed and the wheel's goroutine has woken, as a runtime timer would,
// rather than at the next tick.
//
// All fields are guarded by mu, except that next, written under mu, is also
// read without it by the wheel's goroutine, to skip a shard with nothing
// due without taking its lock.
type shard struct {
	mu      sync.Mutex
	cur     uint64        // a tick: every timer whose tick (at) is cur or earlier has fired; only advance moves it
	next    atomic.Uint64 // a lower bound on the time of the shard's next event (fire or move), or never
	levels  []*level      // levels[k] spans slots<<(k*bits) ticks; nil until a timer needs it
	bits    uint          // log2 of the number of slots per level
	mask    uint64        // slots - 1
	levelAt [65]uint8     // levelAt[n] is the level of a timer whose deadline's highest bit that differs from cur is bit n-1
	tick    uint64        // nanoseconds per tick
	unit    uint64        // nanoseconds per unit of timer.off
	stopped bool          // set by Wheel.Stop: the shard accepts no timer
	inline  bool          // the Wheel runs callbacks inline: fire also appends the timer to held
	held    []*timer      // inline only: the timers advance fired, in the order of their funcs, until the goroutine takes them
	count   int           // pending timers
	spares  spares        // pages for the slots
	batch   batch         // new timers for AfterFunc
	free    []*timer      // timers to reuse (see handle)

	_ [64]byte // keep neighbouring shards' locks on different cache lines
}

// A level is one ring of slots of a shard.
type level struct {
	slots    []slot   // slots[s] holds the level's timers whose digit is s
	occupied []uint64 // bit s is set if and only if slots[s] is not empty
	earliest []uint64 // level 0 only: a lower bound on the exact deadlines in slots[s], never if it is empty
}

func newShard(slotBits uint, tick uint64) *shard {
	sh := &shard{
		levels: make([]*level, (64+slotBits-1)/slotBits),
		bits:   slotBits,
		mask:   1<<slotBits - 1,
		tick:   tick,
		unit:   offUnit(tick),
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

// offUnit returns the unit of timer.off for a tick: 1 ns, unless the tick
// is longer than 2^offBits ns (134 ms); then the smallest unit in which
// the offsets within a tick fit offBits bits (8 ns for a 1 s tick).
func offUnit(tick uint64) uint64 {
	return max(1, (tick+offMask)>>offBits)
}

// exact returns the deadline of t, which is on level 0, in nanoseconds.
func (sh *shard) exact(t *timer) uint64 {
	return t.at*sh.tick - uint64(t.off&offMask)*sh.unit
}

// time returns when tick starts, in nanoseconds, or never if that is past
// the range of uint64.
func (sh *shard) time(tick uint64) uint64 {
	hi, lo := bits.Mul64(tick, sh.tick)
	if hi != 0 {
		return never
	}
	return lo
}

// add makes t, due at tick t.at > sh.cur, pending and returns the time of
// its first event, and whether that is sooner than next was (next is
// lowered then: the caller must wake the wheel's goroutine by then).
func (sh *shard) add(t *timer) (event uint64, sooner bool) {
	event = sh.place(t)
	sh.count++
	if event < sh.next.Load() {
		sh.next.Store(event)
		return event, true
	}
	return event, false
}

// place puts t, due at tick t.at > sh.cur, on its level and returns the
// time at which the shard must next look at it: its exact deadline on
// level 0, else the start of its slot's span.
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
		if k == 0 {
			lv.earliest = make([]uint64, sh.mask+1)
			for i := range lv.earliest {
				lv.earliest[i] = never
			}
		}
		sh.levels[k] = lv
	}
	lv.slots[s].push(t, &sh.spares)
	lv.occupied[s/64] |= 1 << (s % 64)
	if k == 0 {
		x := sh.exact(t)
		lv.earliest[s] = min(lv.earliest[s], x)
		return x
	}
	return sh.time(t.at >> shift << shift)
}

// remove takes the pending timer t out of its slot in O(1), drops its
// callback and marks it claimed. It does not recompute next: a stale next
// only costs the wheel's goroutine one spurious look.
func (sh *shard) remove(t *timer) {
	k := sh.levelOf(t.at)
	s := t.at >> (k * sh.bits) & sh.mask
	lv := sh.levels[k]
	lv.slots[s].remove(t, &sh.spares)
	if lv.slots[s].len() == 0 {
		lv.occupied[s/64] &^= 1 << (s % 64)
		if k == 0 {
			lv.earliest[s] = never
		}
	}
	t.f, t.at = nil, claimed // its tick could read as held
	sh.count--
}

// advance moves the shard to time now (in nanoseconds): it fires every
// timer whose tick has started by now, and then every timer of the next
// level-0 slot whose exact deadline has passed, appending their funcs to
// due, and recomputes next.
func (sh *shard) advance(now uint64, due []func()) []func() {
	tick := now / sh.tick
	if sh.next.Load() > now {
		// next is a lower bound: nothing happens before now, and the
		// tick of every slot's span start or timer is after it.
		sh.cur = max(sh.cur, tick)
		return due
	}
	for {
		e, _ := sh.nextEvent()
		if e > tick || e == never {
			break
		}
		sh.cur = e
		due = sh.expire(due)
	}
	sh.cur = max(sh.cur, tick)
	due = sh.early(now, due)
	_, at := sh.nextEvent()
	sh.next.Store(at)
	return due
}

// early fires the timers of the first level-0 slot, whose tick has not
// started, that are due by now. No later slot has one.
func (sh *shard) early(now uint64, due []func()) []func() {
	lv := sh.levels[0]
	if lv == nil {
		return due
	}
	s, ok := lv.firstAfter(sh.cur & sh.mask)
	if !ok || lv.earliest[s] > now {
		return due
	}
	// Keep the timers not yet due in their order, moved down over those
	// that fire. The goroutine does this every time it wakes, over the
	// whole slot: it must stay a plain loop that writes only what moves.
	sl := &lv.slots[s]
	earliest := uint64(never)
	w := sl.lo // the position of the next timer kept
	for p := sl.lo; p != sl.hi; p++ {
		e := sl.entry(p)
		t := *e
		if x := sh.exact(t); x > now {
			if w != p {
				*e = nil
				*sl.entry(w), t.pos = t, w
			}
			w++
			earliest = min(earliest, x)
			continue
		}
		*e = nil
		due = sh.fire(t, due)
	}
	sl.truncate(w, &sh.spares)
	lv.earliest[s] = earliest
	if sl.len() == 0 {
		lv.occupied[s/64] &^= 1 << (s % 64)
	}
	return due
}

// nextEvent returns the shard's next event: the first tick after cur at
// which a slot's span starts on some level and the slot holds timers, or
// never; and the time at which the shard must look at it, which is
// earlier if the event is a level-0 slot whose earliest exact deadline is
// before its tick.
func (sh *shard) nextEvent() (tick, at uint64) {
	tick, at = never, never
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
		e := (sh.cur>>shift&^sh.mask | s) << shift
		tick = min(tick, e)
		if k == 0 {
			at = min(at, lv.earliest[s])
		} else {
			at = min(at, sh.time(e))
		}
	}
	return tick, at
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
		for t := range lv.take(s, &sh.spares) {
			if t.at <= sh.cur {
				due = sh.fire(t, due)
				continue
			}
			// t's digit k now equals cur's, so it lands lower, never
			// back in a slot that expire still has to look at.
			sh.place(t)
		}
	}
	if lv := sh.levels[0]; lv != nil {
		s := sh.cur & sh.mask
		lv.earliest[s] = never
		for t := range lv.take(s, &sh.spares) {
			due = sh.fire(t, due)
		}
	}
	return due
}

// fire marks t as no longer pending and appends its func to due. On an
// inline wheel, t is held until its callback starts (see held); otherwise
// it has started.
func (sh *shard) fire(t *timer, due []func()) []func() {
	due = append(due, t.f)
	t.f, t.at = nil, started
	if sh.inline {
		t.at = held
		sh.held = append(sh.held, t)
	} else {
		sh.recycle(t)
	}
	sh.count--
	return due
}

// take empties slot s and yields its timers (see slot.take).
func (lv *level) take(s uint64, sp *spares) iter.Seq[*timer] {
	lv.occupied[s/64] &^= 1 << (s % 64)
	return lv.slots[s].take(sp)
}

// drop removes every pending timer and returns how many there were.
func (sh *shard) drop() int {
	n := 0
	for k, lv := range sh.levels {
		if lv == nil {
			continue
		}
		for i := range lv.slots {
			for t := range lv.slots[i].take(&sh.spares) {
				t.f, t.at = nil, dropped
				n++
			}
		}
		sh.levels[k] = nil
	}
	sh.spares = spares{}
	sh.batch = batch{}
	sh.free = nil
	sh.count = 0
	sh.next.Store(never)
	return n
}

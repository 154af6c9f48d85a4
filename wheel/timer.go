package wheel

// A timer is one pending call of a Wheel: the circulation.Timer that
// AfterFunc returns. It is 32 bytes, allocated timerBatch at a time (see
// batch); the wheel refers to it from one slot, so Stop frees everything at
// once except the timer itself, which the caller's own reference keeps
// (with the other timers of its batch), as does its shard's batch until
// the shard has handed out the batch's other timers.
//
// sh never changes. f, at, off and pos are guarded by sh.mu; at and off are
// written before the timer is placed.
type timer struct {
	f   func() // the callback while the timer is pending; nil once it has fired or was stopped or dropped
	sh  *shard // the shard that holds it; nil only in fired, the Timer of a call AfterFunc started at once
	at  uint64 // while pending, its deadline rounded up to a tick, counted in ticks from the Wheel's start; then dropped, claimed, held or started
	pos uint32 // its position in its slot (see slot)
	off uint32 // its exact deadline is at ticks less off units (see shard.exact)
}

// A batch hands out timers that were allocated together, each once: a
// timer is never reused, since its owner may call Stop on it at any time
// after it fired. One allocation of timerBatch timers costs about what one
// of a single timer does. A batch belongs to a shard and is guarded by its
// lock.
type batch struct {
	timers *[timerBatch]timer // the timers from used on are not handed out yet
	used   int
}

// timerBatch is how many timers are allocated at once. A reference to one
// keeps all of them in memory, so it is small: a program that keeps one
// stale Timer of every batch, and none of the others, holds 128 bytes per
// Timer instead of 32.
const timerBatch = 4

// next returns a new timer of shard sh: its sh is set, and nothing else.
func (b *batch) next(sh *shard) *timer {
	if b.timers == nil || b.used == timerBatch {
		b.timers, b.used = new([timerBatch]timer), 0
		for i := range b.timers {
			b.timers[i].sh = sh
		}
	}
	t := &b.timers[b.used]
	b.used++
	return t
}

// fired is the Timer AfterFunc returns for a callback it started at once.
var fired = &timer{}

// Stop prevents the timer's callback from running. It reports whether the
// call stopped the timer: false if the callback has already been started
// (or handed to the runners, which start it) or the timer was already
// stopped. On a wheel with inline callbacks, a due callback that the
// wheel's goroutine has not started yet is still prevented. A timer that
// Wheel.Stop dropped (pending, or due and not started on an inline wheel)
// counts as stopped by the first Stop after the drop, which reports true:
// its callback will never run, and an owner that accounts for its timers
// by Stop's result (as a Trigger does) must learn so. Stop does not wait for
// the callback to complete. It takes O(1) time, holding the lock of one
// shard, and the wheel lets go of the callback and of the slot's entry for
// the timer at once (the timer itself stays in memory while the shard
// hands out the rest of its batch: see batch). It is safe for concurrent
// use.
func (t *timer) Stop() bool {
	sh := t.sh
	if sh == nil {
		return false
	}
	sh.mu.Lock()
	if t.f == nil {
		ok := t.at == dropped || t.at == held
		if ok {
			t.at = claimed
		}
		sh.mu.Unlock()
		return ok
	}
	sh.remove(t)
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

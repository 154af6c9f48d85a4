// Package wheel is a hashed hierarchical timing wheel: a
// circulation.Scheduler that keeps millions of pending timers in a third
// of the memory time.AfterFunc needs, arms and stops them at about 0.4 of
// its cost, and never fires one early.
//
//	w := wheel.New() // 1 ms slots, 512 per level
//	defer w.Stop()
//	t := w.AfterFunc(30*time.Second, onTimeout)
//	t.Stop()                        // O(1); true if it stopped the call
//	tr := circulation.Bind(w, task) // a Trigger on the wheel
//
// Guarantees, each with a test: a callback never runs before its deadline
// (now + d, read at the AfterFunc call); it runs once the wheel's goroutine
// wakes after the deadline, at most about one tick late; any delay works,
// up to the 292 years of a time.Duration; a callback that blocks never
// delays another; a wheel with nothing due sleeps; Timer.Stop is O(1) and
// the wheel lets go of the callback at once; everything is safe for
// concurrent use; after Wheel.Stop no callback starts and the wheel's
// goroutine is gone. The figures below are medians from bench/cmd/compare
// (fresh process per figure, 1M timers, 2 cores shared with other work).
//
// Levels, not rounds. A timer due at tick T sits on the level of the
// highest base-512 digit in which T differs from the current tick, in the
// slot that digit names; when the current tick reaches the start of a
// slot's span, the slot's timers move down. A timer moves at most once per
// level (with 1 ms ticks: once for delays up to 4.4 minutes, twice up to
// 37 hours) and is not touched otherwise. Rounds, as in Netty, Dubbo and
// go-zero, visit every timer of a slot on every revolution: holding 1M
// timers due in one to two minutes costs a rounds wheel 318 ms of CPU per
// second (go-zero 362 ms); this wheel, 0.8 ms (time.AfterFunc, 1.1 ms).
//
// Exact deadlines. A timer keeps its deadline to the nanosecond, as an
// offset within its tick (with a tick over 134 ms, to within tick/2^27:
// the offset shares 32 bits with the generation of reused timers). Each
// level-0 slot records its earliest deadline and the wheel's goroutine
// sleeps until the first slot's, rather than until the tick ends.
// Rounding up to the tick made lateness p50/p99 1.09/2.02 ms
// (time.AfterFunc in the same runs: 0.53/2.04); exact, it is
// 0.52/1.10 ms (time.AfterFunc: 0.51/1.31), and on a busier machine
// 0.55/3.67 (0.52/2.98): two wake-ups, the wheel's and a runner's, where
// the runtime has one. Only a timer whose tick starts a span above level 0
// (one tick in 512) waits for its slot to move down, up to a tick.
//
// Sleeping. The goroutine sleeps until the earliest event of any shard, a
// deadline or a slot moving down; AfterFunc kicks it only when it brings
// that event forward. With one timer an hour away the process uses 64 µs
// of CPU per second (time.AfterFunc 41); go-zero, which ticks every
// millisecond, 19 ms.
//
// Runners, not a goroutine per callback. Due callbacks go to a queue
// served by runner goroutines that never park; a runner that takes a
// callback while others wait and no runner is free starts another first,
// so a blocked callback holds up only its own runner while quick ones
// share a few. With 1M timers due within 1 s, CPU s / peak RSS MB:
// time.AfterFunc 2.96 / 668, a goroutine per callback 1.63 / 137, a fixed
// pool of 8 1.08 / 91 (and one slow callback stalls it), runners 0.84 /
// 71, inline on the wheel's goroutine 0.82 / 68.
//
// 32-byte timers, reused; slots as paged deques. A timer holds the
// callback, shard, tick, position and deadline offset: 32 bytes. Timers
// are allocated four at a time per shard: one allocation of four costs
// about what one of one did, and with 100k pending, stopping the oldest
// and arming a new one went from 2.09 to 2.42 times time.AfterFunc's rate
// (by CPU time, 2.51 to 2.91). Batches of 8 or 16 measured the same as
// 4. A timer whose call is over, stopped or fired, then serves a later
// call of its shard, up to 32 calls in all. A caller may Stop a stale
// Timer, so each call's Timer is the address of a different byte of the
// timer, and the timer records which call it serves: a stale Timer stops
// nothing. Reuse made the same steady load 1.31 times as fast by the wall
// clock and 1.42 by CPU time (medians of 15 paired runs): the garbage
// collector, which had run over ten times a second to mark every live
// timer, next to never runs (GODEBUG=gctrace=1 counted 20 collections in
// a run before, 3 after). A kept Timer keeps its batch, 128 bytes. A slot
// is a deque of timer pointers with virtual positions, so stopping
// the oldest timer, the usual timeout, touches no other timer (49 CPU ns
// per Stop, against 83 when the slot's last timer filled the hole). Its
// pointers are kept in pages, fixed arrays of 32, that come from and go
// back to a shard's spares, at most 512 pages (128 KiB) per shard: a slot
// grows without copying, and gives a page back as soon as its oldest
// timers are gone. As one slice grown
// by append (a quarter at a time once large, so each pointer was copied
// about four times while a slot filled), arming 1M timers cost 0.59 of
// time.AfterFunc's time, 0.59 of its CPU; paged, 0.48 and 0.42. A slot
// also keeps its first and last pages at hand, in its own 64-byte cache
// line, so that arming a timer and stopping the oldest do not read the
// slot's list of pages, which with a hundred slots in use missed the
// cache as often as the entry did: arming 1M timers then cost 0.37 of
// time.AfterFunc's time instead of 0.46, stopping them 0.38 instead of
// 0.40. 40 bytes per pending timer against 130 for time.AfterFunc.
//
// Shards. Timers are spread over 4 shards per processor (at most 64), each
// with its own lock, and the wheel's goroutine skips shards with nothing
// due without locking them. AfterFunc uses the calling goroutine's home
// shard, found from its stack's address; a goroutine that finds its home
// locked by another moves to the next shard, so goroutines that run at
// once end up apart (home.go). With two goroutines, each stopping its
// oldest timer and arming a new one, this does 8.25M operations per
// second against 6.48M with a sync.Pool of per-processor hints (std:
// 2.90M): the pool cost 14 ns a call, and a goroutine moved to another
// processor armed its new timers in a new shard and stopped its old ones
// in the shard the other goroutine had taken over. A random shard per
// call halves the throughput of two goroutines, which then share every
// shard's cache lines; without the move on contention, one run in twenty
// put both goroutines on one shard, at 3.7M.
//
// Defaults. A 1 ms tick matches the runtime's own sleep granularity on
// Linux; 512 slots per level keep a level's bitmap at 8 words and timeouts
// of minutes on one move. 64 or 4096 slots measured the same within noise.
package wheel

// Package wheel is a hashed hierarchical timing wheel: a
// circulation.Scheduler that keeps millions of pending timers at a third
// of the memory of time.AfterFunc, arms and stops them in O(1) at less
// than half its cost, and never fires one early.
//
//	w := wheel.New() // 1 ms slots, 512 per level
//	defer w.Stop()
//	t := w.AfterFunc(30*time.Second, onTimeout)
//	t.Stop()                              // O(1); true if it stopped it
//	tr := circulation.Bind(w, task)       // a Trigger on the wheel
//
// Guarantees: a callback never runs before its deadline (now + d, read at
// the AfterFunc call); it runs as soon as the wheel's goroutine wakes after
// the deadline, at most about one tick late; any delay works, up to the
// 292 years of a time.Duration; a callback that blocks never delays
// another; a wheel with nothing due soon sleeps; Stop frees a timer at
// once; everything is safe for concurrent use; after Wheel.Stop nothing of
// the wheel runs. Each has a test; the figures below come from
// bench/cmd/compare (medians of 5 fresh processes on a 2-core machine
// shared with other work, 1M timers), which prints the full table.
//
// Levels, not rounds. A timer due at tick T sits on the level of the
// highest base-512 digit in which T differs from the current tick, in the
// slot named by that digit; when the current tick reaches the start of a
// slot's span, its timers move down a level. A timer moves at most once
// per level (with 1 ms ticks: once for delays up to 4.4 minutes, twice up
// to 37 hours), and the wheel never touches it otherwise. Netty's rounds
// instead visit every timer in a slot on every revolution: holding 1M
// timers due in 1 to 2 minutes costs a rounds wheel 318 ms of CPU per
// second (go-zero's: 354 ms); this wheel, nothing.
//
// Exact deadlines. A timer keeps its deadline to the nanosecond (as an
// offset within its tick, in the 32-byte timer). Each level-0 slot records
// its earliest deadline, and the wheel's goroutine sleeps until the first
// slot's earliest deadline rather than until its tick ends. Rounding to
// the tick instead made lateness p50/p99 1.05/2.02 ms against the
// runtime's 0.53/2.04; exact, it is 0.53/1.26 ms. Only a timer whose tick
// starts a span above level 0 waits for its slot to move down, up to a
// tick.
//
// Sleeping. The goroutine sleeps until the earliest event of any shard
// (a deadline or a slot moving down); AfterFunc wakes it only when it
// brings that event forward. Idle with one timer an hour away the process
// uses 29 µs of CPU per second, as with time.AfterFunc (26); go-zero,
// which ticks every millisecond, uses 15.7 ms.
//
// Runners, not a goroutine per callback. Due callbacks go to a queue
// served by runner goroutines that never park; a runner that takes a
// callback while others wait and no runner is free starts another first.
// A blocked callback so holds up only its own runner, while quick ones
// share a few. With 1M timers due within 1 s (CPU s / peak RSS MB):
// time.AfterFunc 3.0 / 850, a goroutine per callback 1.70 / 129, a fixed
// pool of 8 0.79 / 85 (but one slow callback stalls it), runners 0.88 /
// 73, inline 0.55 / 73.
//
// 32-byte timers, slots as deques. The Timer AfterFunc returns is the
// timer itself: callback, shard, tick, position and deadline offset, 32
// bytes, the only allocation. A slot is a slice of timer pointers used as
// a deque whose positions are virtual, so stopping the oldest timer (the
// usual timeout) touches no other, and moving timers never rewrites their
// positions: 42 bytes per pending timer against 131 for time.AfterFunc,
// and a Stop in 52 ns against 147.
//
// Shards. Timers are spread over 4 shards per processor, each with its
// own lock; AfterFunc uses the shard tied to its processor (a sync.Pool of
// hints), and the goroutine skips shards with nothing due without locking
// them.
package wheel

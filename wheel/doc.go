// Package wheel is a hashed hierarchical timing wheel: a
// circulation.Scheduler for millions of pending timers, in less memory and
// at less cost per timer than time.AfterFunc, that never fires one early.
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
// concurrent use; after Wheel.Stop no callback starts, AfterFunc panics,
// and the wheel's goroutine is gone. Stop the Triggers bound to a wheel
// before the wheel.
//
// Options: WithTick (the slot width), WithSlots (slots per level),
// WithShards (locks to spread timers over) and WithInlineCallbacks (run
// callbacks on the wheel's goroutine).
//
// Design, in short: timers sit on the level of the highest base-512 digit
// in which their tick differs from the current one and move down at most
// once per level; deadlines are kept to the nanosecond within a tick; due
// callbacks go to runner goroutines; 32-byte timers are reused and kept in
// paged slots; shards are chosen per goroutine. DESIGN.md beside this file
// has the measurements behind each choice.
package wheel

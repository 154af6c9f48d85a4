// Package circulation runs a task again and again, on a timer and on demand,
// never twice at once.
//
// A Trigger binds a task to a Scheduler. The task runs one iteration and
// says when it wants to run next:
//
//	reload := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
//		cfg.Store(load(ctx))
//		return 30 * time.Second, true // again in 30s
//	})
//	reload.Fire()                            // run now
//	onUpdateMessage(func() { reload.Fire() }) // and whenever told to
//	defer reload.Stop(context.Background())
//
// Three guarantees hold whatever the callers and the Scheduler do:
//
//  1. The task never runs concurrently with itself.
//  2. The latest call wins. Every Fire, FireAfter and Suspend supersedes all
//     earlier ones: FireAfter(5*time.Minute) then FireAfter(time.Minute) runs
//     once, at one minute; Fire then Suspend runs nothing, unless the run
//     had already begun.
//  3. No fire is lost. A fire during a run lets the run complete, then causes
//     exactly one more run, at the later of the run's end and the fire's due
//     time; any number of fires during one run coalesce into that one.
//
// The task's own answer is a fire like any other: (d, true) runs it again
// after d, (_, false) lets it rest until the next Fire, and an answer from a
// run that a call superseded while it ran is ignored. Suspend cancels the
// running iteration's context and does not wait; Stop suspends and waits
// until nothing of the Trigger's runs or is pending.
//
// Supervise builds a backoff loop on a Trigger: each attempt of a
// func(ctx) error gets a timeout, failures stretch the delay up to a
// ceiling, a success resets it, and an attempt that overstays its timeout
// is abandoned but never joined by a second one.
//
// WithObserver reports each run's start (with its due time, so lateness is
// visible) and end (duration, answer, panic), each fire that joined a run,
// and each arming superseded before it ran; Stats, Running and Next read a
// Trigger's counters and its next due time without a lock. A Supervisor
// reports each attempt's outcome with WithNotify.
//
// Fire, FireAfter, FireWithin and Suspend take no lock: the whole state of a
// Trigger is one uint32 (a reservation bit, a running bit, two bits that say
// whether the run in flight was superseded or cancelled, a closed bit, a bit
// that marks FireWithin's arming, and a 26-bit version) changed by
// compare-and-swap; see state.go. A superseded timer is stopped at once, so a
// Trigger fired a million times holds one timer, not a million.
//
// Time is the Scheduler's: RuntimeScheduler (the default) uses
// time.AfterFunc, so a Trigger works inside a testing/synctest bubble with the
// bubble's fake clock; package wheel is a timing wheel for millions of
// timers; tests may pass a Scheduler of their own. The examples directory
// of the repository holds runnable programs: go run ./examples/configreload.
package circulation

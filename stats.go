package circulation

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Stats is a snapshot of a Supervisor's counters, consistent across fields.
//
// Every attempt ends in exactly one of Successes, Errors, Panics, Timeouts
// and Canceled: Attempts is their sum, plus one while an attempt runs that
// has not timed out.
type Stats struct {
	Attempts  uint64 // attempts started
	Successes uint64 // attempts that returned nil within their Timeout
	Errors    uint64 // attempts that returned an error within their Timeout (permanent ones too), except those Canceled
	Panics    uint64 // attempts that panicked or called runtime.Goexit within their Timeout, except those Canceled
	Timeouts  uint64 // attempts abandoned at their Timeout
	Canceled  uint64 // attempts that returned an error, panicked or called runtime.Goexit after Suspend or Stop cancelled their context: not failures
	Skipped   uint64 // due attempts that did not start because an abandoned one was still running
	Late      uint64 // abandoned attempts that have since returned (or panicked): their results are ignored

	ConsecutiveFailures uint64        // timeouts, skips, errors and panics since the last success (Canceled and Late attempts change nothing)
	Delay               time.Duration // the delay drawn last (or RetryAfter's); a Fire, FireAfter or Suspend may have overridden it; 0 after a permanent error, which schedules nothing
	Running             bool          // an attempt is running, in time or abandoned
}

// Stats returns a snapshot of the Supervisor's counters. It takes no lock:
// it never waits for an attempt, and an attempt never waits for it. It may
// be called from anywhere, the task and the random source included: no
// code but the Supervisor's own bookkeeping runs while the counters are
// being written, and a write takes a few instructions.
func (s *Supervisor) Stats() Stats {
	c := &s.stats
	for {
		if seq := c.seq.Load(); seq&1 == 0 {
			st := Stats{
				Attempts:            c.attempts.Load(),
				Successes:           c.successes.Load(),
				Errors:              c.errors.Load(),
				Panics:              c.panics.Load(),
				Timeouts:            c.timeouts.Load(),
				Canceled:            c.canceled.Load(),
				Skipped:             c.skipped.Load(),
				Late:                c.late.Load(),
				ConsecutiveFailures: c.consecutive.Load(),
				Delay:               time.Duration(c.delay.Load()),
				Running:             c.running.Load(),
			}
			if c.seq.Load() == seq {
				return st
			}
		}
		runtime.Gosched() // a write is in progress: it holds mu for a few instructions
	}
}

// counters hold a Supervisor's statistics as a sequence lock: they are
// written only with Supervisor.mu held, between write and done, and read by
// Stats without any lock, which retries until it has read them all between
// two writes. Nothing between write and done calls out of the Supervisor:
// not the task, not the random source, not a Trigger or a Scheduler.
type counters struct {
	seq atomic.Uint64 // odd while a write is in progress

	attempts    atomic.Uint64
	successes   atomic.Uint64
	errors      atomic.Uint64
	panics      atomic.Uint64
	timeouts    atomic.Uint64
	canceled    atomic.Uint64
	skipped     atomic.Uint64
	late        atomic.Uint64
	consecutive atomic.Uint64
	delay       atomic.Int64
	running     atomic.Bool
}

func (c *counters) write() *counters { c.seq.Add(1); return c }
func (c *counters) done()            { c.seq.Add(1) }

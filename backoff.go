package circulation

import (
	"fmt"
	"time"
)

// Backoff is the policy of a Supervisor: how long each attempt may run and
// how long to wait after it. It is plain data, safe to copy, compare and
// share; Supervise validates it and keeps its own copy. The zero value is
// not a valid policy: Base and Max must be set.
//
// The delay rule keeps one interval, without jitter, which starts at Base:
//
//   - an attempt that returns nil within its Timeout brings the interval
//     back to Base;
//   - an attempt that times out, a due run that finds an abandoned attempt
//     still running (a skip) and, unless KeepDelayOnError is set, an attempt
//     that returns an error or panics, are failures: each grows the interval
//     to interval × Multiplier, at most Max, except that with Retry set the
//     first failure in a row (the first since the last success, or since
//     the Supervisor was created) sets it to Retry;
//   - the delay actually waited is the interval with jitter applied last,
//     then capped: Max is a hard ceiling, jitter included. An error made
//     with RetryAfter replaces that delay with its own (see RetryAfter).
//
// With Base 1s, Max 10s, Multiplier 2 and no jitter, consecutive failures
// wait 2s, 4s, 8s, 10s, 10s, ..., and the next success waits 1s. With
// Base 30s, Retry 1s and Max 5m, a healthy task runs every 30s, and
// consecutive failures wait 1s, 2s, 4s, ..., 4m16s, 5m, 5m, ...
type Backoff struct {
	// Base is the interval after a success, and where growth starts.
	// It must be positive.
	Base time.Duration

	// Max is the longest delay, jitter included. It must be at least Base;
	// Max equal to Base gives a fixed period.
	Max time.Duration

	// Multiplier is the growth of the interval per failure. Zero means 2,
	// the doubling of Eureka's TimedSupervisorTask; otherwise it must be at
	// least 1.
	Multiplier float64

	// Jitter is the fraction by which JitterProportional moves each delay
	// up or down: the delay is uniform in [d×(1−Jitter), d×(1+Jitter)] for
	// an interval d, then capped at Max. It must be in [0, 1]; zero means
	// no jitter. It must be zero with JitterFull.
	Jitter float64

	// JitterMode chooses how delays are randomised. The zero value is
	// JitterProportional.
	JitterMode JitterMode

	// Timeout bounds each attempt. An attempt still running after Timeout
	// is abandoned: its context is cancelled with context.DeadlineExceeded
	// and the delay rule counts a failure, but no other attempt starts
	// until it returns. The Supervisor's Scheduler times it; the context's
	// Deadline reports the attempt's start plus Timeout by the runtime's
	// clock. Zero means no timeout. It must not be negative.
	Timeout time.Duration

	// Retry is the interval after the first failure in a row, whether a
	// success came before it or none did yet; later failures in a row
	// multiply it by Multiplier, up to Max. It may be shorter than Base: a
	// task polled every 30s while healthy can retry 1s after a failure.
	// Zero means the first failure grows the interval from Base like any
	// other. It must not be negative, nor more than Max.
	Retry time.Duration

	// KeepDelayOnError makes an error or a panic leave the interval as it
	// is, neither growing it nor bringing it back to Base, as Eureka's
	// TimedSupervisorTask does with exceptions: only timeouts and skips
	// grow it (or set it to Retry). An error still counts as a failure in
	// a row: a timeout right after it is not the first. By default an
	// error grows the interval like a timeout.
	KeepDelayOnError bool
}

// JitterMode selects how a Backoff randomises its delays. Every mode draws
// one uniform random number r in [0, 1) per delay; for an interval d:
type JitterMode uint8

const (
	// JitterProportional waits d × (1 + Jitter × (2r − 1)): the interval,
	// moved up or down by at most the fraction Jitter, as gRPC's connection
	// backoff does. With Jitter zero every delay is exactly the interval.
	JitterProportional JitterMode = iota

	// JitterFull waits r × d: anywhere between zero and the interval, the
	// "full jitter" of AWS's "Exponential Backoff And Jitter". It spreads
	// retries the most, but it applies to every delay, including the one
	// after a success: the mean period of a healthy task is d/2.
	JitterFull
)

// Validate reports whether b is a valid policy: nil, or an error naming
// the first invalid field and its value, with the very message Supervise
// panics with. Use it on a Backoff read from a configuration file.
func (b Backoff) Validate() error {
	switch {
	case b.Base <= 0:
		return fmt.Errorf("circulation: Backoff.Base must be positive, got %v", b.Base)
	case b.Max < b.Base:
		return fmt.Errorf("circulation: Backoff.Max (%v) is less than Base (%v)", b.Max, b.Base)
	case b.Multiplier != 0 && !(b.Multiplier >= 1): // also rejects NaN
		return fmt.Errorf("circulation: Backoff.Multiplier must be at least 1, or 0 for 2; got %v", b.Multiplier)
	case !(b.Jitter >= 0 && b.Jitter <= 1): // also rejects NaN
		return fmt.Errorf("circulation: Backoff.Jitter must be in [0, 1], got %v", b.Jitter)
	case b.JitterMode > JitterFull:
		return fmt.Errorf("circulation: unknown Backoff.JitterMode %d", b.JitterMode)
	case b.JitterMode == JitterFull && b.Jitter != 0:
		return fmt.Errorf("circulation: Backoff.Jitter (%v) must be zero with JitterFull", b.Jitter)
	case b.Timeout < 0:
		return fmt.Errorf("circulation: Backoff.Timeout must not be negative, got %v", b.Timeout)
	case b.Retry < 0:
		return fmt.Errorf("circulation: Backoff.Retry must not be negative, got %v", b.Retry)
	case b.Retry > b.Max:
		return fmt.Errorf("circulation: Backoff.Retry (%v) is more than Max (%v)", b.Retry, b.Max)
	}
	return nil
}

// validated returns b with its defaults filled in (Multiplier 0 becomes 2),
// or panics with Validate's message.
func (b Backoff) validated() Backoff {
	if err := b.Validate(); err != nil {
		panic(err.Error())
	}
	if b.Multiplier == 0 {
		b.Multiplier = 2
	}
	return b
}

// The functions below are the whole delay rule. They are pure, and assume
// a validated Backoff.

// An outcome is what the delay rule knows of an attempt.
type outcome uint8

const (
	succeeded outcome = iota // returned nil within its Timeout
	failed                   // timed out, or was skipped: an abandoned attempt was still running
	errored                  // returned an error or panicked within its Timeout
)

// next returns the interval that follows interval d after an outcome;
// first reports whether a failure is the first in a row.
func (b *Backoff) next(d time.Duration, o outcome, first bool) time.Duration {
	switch {
	case o == succeeded:
		return b.Base
	case o == errored && b.KeepDelayOnError:
		return d
	case first && b.Retry > 0:
		return b.Retry
	}
	return b.grow(d)
}

// hint returns the delay an error made with RetryAfter asks for: d, at
// least zero and at most Max, without jitter.
func (b *Backoff) hint(d time.Duration) time.Duration {
	return min(max(d, 0), b.Max)
}

// grow returns the interval that follows interval d after a failure:
// d × Multiplier, at most Max. The product is taken in floating point and
// compared with Max before it is converted back, so it cannot overflow.
// With Multiplier above 1, growth always makes progress: where the product
// truncates back to d (d of a few nanoseconds) or below it (d beyond 2^53
// nanoseconds, where float64 rounds), the interval grows by 1ns. Multiplier
// 1 keeps d exactly.
func (b *Backoff) grow(d time.Duration) time.Duration {
	if b.Multiplier == 1 {
		return d
	}
	f := float64(d) * b.Multiplier
	if f >= float64(b.Max) {
		return b.Max
	}
	if g := time.Duration(f); g > d {
		return g
	}
	if d < b.Max {
		return d + 1
	}
	return b.Max
}

// delay returns the time to wait for interval d, jittered with the uniform
// random number r in [0, 1) and capped at Max. An r outside [0, 1] (or NaN)
// from a faulty random source is clamped to it.
func (b *Backoff) delay(d time.Duration, r float64) time.Duration {
	if !(r >= 0) {
		r = 0
	} else if r > 1 {
		r = 1
	}
	f := float64(d)
	switch b.JitterMode {
	case JitterFull:
		f *= r
	default:
		f *= 1 + b.Jitter*(2*r-1)
	}
	if f >= float64(b.Max) {
		return b.Max
	}
	return time.Duration(f)
}

// random returns a random number for the next delay, from the random source
// if the policy has jitter. It runs without mu, and outside every write of
// stats, since the source may call the Supervisor.
func (s *Supervisor) random() float64 {
	if !s.jittered {
		return 0 // unused: the delay rule applies no jitter
	}
	s.randMu.Lock()
	defer s.randMu.Unlock()
	return s.rand()
}

// fail accounts for a failure: the interval follows the delay rule, and a
// new delay is drawn with the random number r. It runs with mu held, inside
// a stats write.
func (s *Supervisor) fail(o outcome, r float64) time.Duration {
	first := s.stats.consecutive.Add(1) == 1
	s.interval = s.policy.next(s.interval, o, first)
	return s.delay(r)
}

// delay returns the delay for the current interval and the random number r,
// and records it. It runs with mu held, inside a stats write.
func (s *Supervisor) delay(r float64) time.Duration {
	d := s.policy.delay(s.interval, r)
	s.stats.delay.Store(int64(d))
	return d
}

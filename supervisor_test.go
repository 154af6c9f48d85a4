package circulation_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/circulation-go/circulation"
)

// probe records the attempts of a task: when each started, relative to the
// start of the test, and how many ran at once.
type probe struct {
	t0      time.Time
	mu      sync.Mutex
	starts  []time.Duration
	running atomic.Int32
	most    atomic.Int32 // the most attempts seen running at once
}

func newProbe() *probe { return &probe{t0: time.Now()} }

// task returns a task that records each attempt, then calls f with the
// attempt's number, counting from 1.
func (p *probe) task(f func(ctx context.Context, n int) error) func(context.Context) error {
	return func(ctx context.Context) error {
		r := p.running.Add(1)
		defer p.running.Add(-1)
		for m := p.most.Load(); r > m && !p.most.CompareAndSwap(m, r); m = p.most.Load() {
		}
		p.mu.Lock()
		p.starts = append(p.starts, time.Since(p.t0))
		n := len(p.starts)
		p.mu.Unlock()
		return f(ctx, n)
	}
}

// at sleeps until d after the start of the test, then waits until every
// goroutine of the bubble is blocked: everything due at d has happened.
func (p *probe) at(d time.Duration) {
	time.Sleep(time.Until(p.t0.Add(d)))
	synctest.Wait()
}

func (p *probe) wantStarts(t *testing.T, want ...time.Duration) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if fmt.Sprint(p.starts) != fmt.Sprint(want) {
		t.Fatalf("attempts started at %v, want %v", p.starts, want)
	}
	if m := p.most.Load(); m > 1 {
		t.Fatalf("%d attempts ran at once", m)
	}
}

func wantStats(t *testing.T, p *probe, s *circulation.Supervisor, want circulation.Stats) {
	t.Helper()
	if got := s.Stats(); got != want {
		t.Fatalf("at %v:\n got Stats %+v\nwant Stats %+v", time.Since(p.t0), got, want)
	}
}

func stop(t *testing.T, s *circulation.Supervisor) {
	t.Helper()
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func constant(r float64) circulation.SuperviseOption {
	return circulation.WithRand(func() float64 { return r })
}

const sec = time.Second

var errFlaky = errors.New("flaky")

func TestSupervisorSuccessWaitsBase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			time.Sleep(sec)
			return nil
		}), circulation.Backoff{Base: 10 * sec, Max: time.Minute, Jitter: 0.2, Timeout: 5 * sec}, constant(0.75))
		s.Fire()
		// r = 0.75 with Jitter 0.2: every delay is 10s × 1.1, counted from
		// the end of the attempt, which takes 1s.
		p.at(24*sec + sec/2)
		wantStats(t, p, s, circulation.Stats{Attempts: 3, Successes: 2, Delay: 11 * sec, Running: true})
		p.at(30 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 3, Successes: 3, Delay: 11 * sec})
		p.wantStarts(t, 0, 12*sec, 24*sec)
		stop(t, s)
	})
}

func TestSupervisorFailuresGrowToMaxAndSuccessResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			if n <= 4 {
				return errFlaky
			}
			return nil
		}), circulation.Backoff{Base: sec, Max: 5 * sec, Multiplier: 2})
		s.Fire()
		p.at(15 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 4, Errors: 4, ConsecutiveFailures: 4, Delay: 5 * sec})
		p.at(16*sec + sec/2)
		wantStats(t, p, s, circulation.Stats{Attempts: 5, Successes: 1, Errors: 4, Delay: sec})
		p.at(18*sec + sec/2)
		// 1s doubles to 2s, 4s, then 8s is capped at 5s, twice; the
		// success brings it back to 1s.
		p.wantStarts(t, 0, 2*sec, 6*sec, 11*sec, 16*sec, 17*sec, 18*sec)
		stop(t, s)
	})
}

func TestSupervisorKeepDelayOnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			switch n {
			case 3:
				panic("boom")
			case 4: // times out, then returns at once
				<-ctx.Done()
				return ctx.Err()
			case 6:
				return nil
			}
			return errFlaky
		}), circulation.Backoff{Base: sec, Max: time.Minute, Timeout: sec / 2, KeepDelayOnError: true})
		s.Fire()
		p.at(7 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 5, Errors: 3, Panics: 1, Timeouts: 1, Late: 1, ConsecutiveFailures: 5, Delay: 2 * sec})
		p.at(8 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 6, Successes: 1, Errors: 3, Panics: 1, Timeouts: 1, Late: 1, Delay: sec})
		p.at(9 * sec)
		// Errors and the panic keep 1s; the timeout at 3.5s doubles it,
		// and the error at 5.5s keeps 2s.
		p.wantStarts(t, 0, sec, 2*sec, 3*sec, 5*sec+sec/2, 7*sec+sec/2, 8*sec+sec/2)
		stop(t, s)
	})
}

func TestSupervisorTimeoutAbandonsAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		var (
			deadline          time.Time
			hasDeadline       bool
			doneAt            time.Duration
			err, cause, child error
		)
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			if n > 1 {
				return nil
			}
			deadline, hasDeadline = ctx.Deadline()
			derived, cancel := context.WithCancel(ctx)
			defer cancel()
			<-ctx.Done()
			doneAt = time.Since(p.t0)
			<-derived.Done()
			err, cause, child = ctx.Err(), context.Cause(ctx), context.Cause(derived)
			return err
		}), circulation.Backoff{Base: 10 * sec, Max: time.Minute, Timeout: 3 * sec})
		s.Fire()
		p.at(3 * sec)
		// Abandoned at 3s: the interval doubles, the task returned as soon
		// as its context was cancelled, and that late completion resets
		// nothing.
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, Late: 1, ConsecutiveFailures: 1, Delay: 20 * sec})
		if !hasDeadline || !deadline.Equal(p.t0.Add(3*sec)) {
			t.Errorf("ctx.Deadline() = %v, %v; want %v", deadline, hasDeadline, p.t0.Add(3*sec))
		}
		if doneAt != 3*sec || err != context.DeadlineExceeded || cause != context.DeadlineExceeded || child != context.DeadlineExceeded {
			t.Errorf("ctx done at %v with Err %v, Cause %v, derived Cause %v; want 3s and DeadlineExceeded", doneAt, err, cause, child)
		}
		p.at(23*sec - 1)
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, Late: 1, ConsecutiveFailures: 1, Delay: 20 * sec})
		p.at(23 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 2, Successes: 1, Timeouts: 1, Late: 1, Delay: 10 * sec})
		p.wantStarts(t, 0, 23*sec)
		stop(t, s)
	})
}

// TestSupervisorContext: the context of an attempt behaves as the context
// package's own: contexts derived from it, context.AfterFunc and its stop
// function, Done asked for late, and it ends when the attempt returns.
func TestSupervisorContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		var ranAfter, ranStopped atomic.Bool
		var derived, shorter context.Context
		var endErr atomic.Value
		check := func(ok bool, what string) {
			t.Helper()
			if !ok {
				t.Errorf("%v: %s", time.Since(p.t0), what)
			}
		}
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			if n > 1 {
				go func() { <-ctx.Done(); endErr.Store(ctx.Err()) }()
				return nil
			}
			check(ctx.Value("key") == nil, "Value is not nil")
			check(ctx.Err() == nil, "Err before the timeout")
			var cancel context.CancelFunc
			derived, cancel = context.WithCancel(ctx)
			defer cancel()
			var cancelShorter context.CancelFunc
			shorter, cancelShorter = context.WithTimeout(ctx, sec)
			defer cancelShorter()
			context.AfterFunc(ctx, func() { ranAfter.Store(true) })
			stop := context.AfterFunc(ctx, func() { ranStopped.Store(true) })
			check(stop(), "stop did not stop a pending AfterFunc")
			check(!stop(), "a second stop reported true")
			<-shorter.Done()
			check(time.Since(p.t0) == sec && shorter.Err() == context.DeadlineExceeded && ctx.Err() == nil, "a shorter derived timeout")
			<-ctx.Done()
			<-derived.Done()
			check(derived.Err() == context.DeadlineExceeded, "derived context not cancelled with DeadlineExceeded")
			return ctx.Err()
		}), circulation.Backoff{Base: sec, Max: time.Minute, Timeout: 3 * sec})
		s.Fire()
		p.at(3 * sec)
		check(ranAfter.Load() && !ranStopped.Load(), "AfterFunc did not run, or ran once stopped")
		done := make(chan struct{})
		stopped := context.AfterFunc(derived, func() { close(done) })
		<-done
		check(!stopped(), "stop of an AfterFunc on a done context reported true")
		p.at(5 * sec) // attempt 2, at 3s + 2s, returns at once
		check(endErr.Load() == context.Canceled, "an attempt's context is not cancelled when it returns")
		p.wantStarts(t, 0, 5*sec)
		stop(t, s)
	})
}

// TestSupervisorNeverOverlaps is the central rule: an attempt that
// overstays its Timeout is abandoned, but no other attempt starts until it
// returns. Eureka's TimedSupervisorTask starts one anyway, and its own test
// asserts three copies running at once.
func TestSupervisorNeverOverlaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			if n == 1 {
				time.Sleep(100 * sec) // ignores its context
			}
			return nil
		}), circulation.Backoff{Base: 10 * sec, Max: time.Minute, Timeout: 5 * sec})
		s.Fire()
		p.at(5*sec - 1)
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Running: true})
		p.at(5 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, ConsecutiveFailures: 1, Delay: 20 * sec, Running: true})
		p.at(25*sec - 1)
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, ConsecutiveFailures: 1, Delay: 20 * sec, Running: true})
		p.at(25 * sec) // due: skipped, and the interval doubles
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, Skipped: 1, ConsecutiveFailures: 2, Delay: 40 * sec, Running: true})
		p.at(65 * sec) // due again: skipped, and 80s is capped at 60s
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, Skipped: 2, ConsecutiveFailures: 3, Delay: time.Minute, Running: true})
		p.at(100 * sec) // the late completion returns nil, but resets nothing
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, Skipped: 2, Late: 1, ConsecutiveFailures: 3, Delay: time.Minute})
		p.at(125*sec - 1)
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, Skipped: 2, Late: 1, ConsecutiveFailures: 3, Delay: time.Minute})
		p.at(125 * sec) // the next attempt starts when the last delay runs out
		wantStats(t, p, s, circulation.Stats{Attempts: 2, Successes: 1, Timeouts: 1, Skipped: 2, Late: 1, Delay: 10 * sec})
		p.at(135 * sec)
		p.wantStarts(t, 0, 125*sec, 135*sec)
		stop(t, s)
	})
}

// TestSupervisorFireDuringOverstay: Fire and FireAfter supersede the
// backoff schedule. No more due runs are skipped, and the attempt they ask
// for starts when the abandoned one returns, as a Trigger's would.
func TestSupervisorFireDuringOverstay(t *testing.T) {
	for _, c := range []struct {
		name string
		fire func(*circulation.Supervisor)
		next time.Duration
	}{
		{"Fire", (*circulation.Supervisor).Fire, 100 * sec},
		{"FireAfter within the overstay", func(s *circulation.Supervisor) { s.FireAfter(10 * sec) }, 100 * sec},
		{"FireAfter beyond it", func(s *circulation.Supervisor) { s.FireAfter(120 * sec) }, 150 * sec},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newProbe()
				s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
					if n == 1 {
						time.Sleep(100 * sec)
					}
					return nil
				}), circulation.Backoff{Base: 10 * sec, Max: time.Minute, Timeout: 5 * sec})
				s.Fire()
				p.at(30 * sec)
				c.fire(s)
				p.at(65 * sec) // no longer the Supervisor's due time: not skipped
				wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, Skipped: 1, ConsecutiveFailures: 2, Delay: 40 * sec, Running: true})
				p.at(c.next - 1)
				if n := s.Stats().Attempts; n != 1 {
					t.Fatalf("%d attempts before %v, want 1", n, c.next)
				}
				p.at(c.next)
				wantStats(t, p, s, circulation.Stats{Attempts: 2, Successes: 1, Timeouts: 1, Skipped: 1, Late: 1, Delay: 10 * sec})
				p.wantStarts(t, 0, c.next)
				stop(t, s)
			})
		})
	}
}

// TestSupervisorFireKeepsTimeout: a Fire while an attempt runs does not
// take its Timeout away; the attempt it asks for starts when that one ends.
func TestSupervisorFireKeepsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		var doneAt time.Duration
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			if n == 1 {
				go func() { <-ctx.Done(); doneAt = time.Since(p.t0) }()
				time.Sleep(8 * sec)
			}
			return nil
		}), circulation.Backoff{Base: 10 * sec, Max: time.Minute, Timeout: 5 * sec})
		s.Fire()
		p.at(sec)
		s.Fire()
		p.at(8*sec - 1)
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, ConsecutiveFailures: 1, Delay: 20 * sec, Running: true})
		p.at(8 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 2, Successes: 1, Timeouts: 1, Late: 1, Delay: 10 * sec})
		if doneAt != 5*sec {
			t.Errorf("first attempt's context done at %v, want 5s", doneAt)
		}
		p.wantStarts(t, 0, 8*sec)
		stop(t, s)
	})
}

func TestSupervisorPermanentErrorStops(t *testing.T) {
	errBroken := errors.New("broken config")
	for _, c := range []struct {
		name string
		err  error
	}{
		{"Permanent", circulation.Permanent(errBroken)},
		{"wrapped sentinel", fmt.Errorf("%w: %w", circulation.ErrPermanent, errBroken)},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newProbe()
				var s *circulation.Supervisor
				s = circulation.Supervise(p.task(func(ctx context.Context, n int) error {
					switch n {
					case 1:
						return errFlaky
					case 2:
						s.Fire() // dropped: the permanent error stops the Supervisor
						return c.err
					}
					return nil
				}), circulation.Backoff{Base: sec, Max: time.Minute})
				s.Fire()
				p.at(time.Hour)
				// Delay is 0: the permanent error scheduled nothing.
				wantStats(t, p, s, circulation.Stats{Attempts: 2, Errors: 2, ConsecutiveFailures: 2})
				if err := s.Err(); err != c.err || !errors.Is(err, circulation.ErrPermanent) || !errors.Is(err, errBroken) {
					t.Fatalf("Err() = %v, want %v", err, c.err)
				}
				s.Fire() // starts it again
				p.at(time.Hour)
				if err := s.Err(); err != nil {
					t.Fatalf("Err() = %v after a new attempt, want nil", err)
				}
				wantStats(t, p, s, circulation.Stats{Attempts: 3, Successes: 1, Errors: 2, Delay: sec})
				p.wantStarts(t, 0, 2*sec, time.Hour)
				stop(t, s)
			})
		})
	}
}

func TestSupervisorPanicIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			switch n {
			case 1:
				panic("boom")
			case 2:
				runtime.Goexit()
			}
			return nil
		}), circulation.Backoff{Base: sec, Max: time.Minute})
		s.Fire()
		p.at(5 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 2, Panics: 2, ConsecutiveFailures: 2, Delay: 4 * sec})
		p.at(6 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 3, Successes: 1, Panics: 2, Delay: sec})
		p.wantStarts(t, 0, 2*sec, 6*sec)
		stop(t, s)
	})
}

// TestSupervisorStopCancelsAndWaits: Stop cancels the attempt in flight,
// waits for it, and its error is not a failure. Afterwards nothing runs
// until the next Fire.
func TestSupervisorStopCancelsAndWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		var err error
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			if n == 1 {
				<-ctx.Done()
				time.Sleep(2 * sec) // cleans up
				err = ctx.Err()
				return err
			}
			return nil
		}), circulation.Backoff{Base: sec, Max: time.Minute, Timeout: time.Minute})
		s.Fire()
		p.at(sec)
		stop(t, s)
		if d := time.Since(p.t0); d != 3*sec {
			t.Fatalf("Stop returned at %v, want 3s", d)
		}
		if err != context.Canceled {
			t.Fatalf("ctx.Err() = %v, want context.Canceled", err)
		}
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Canceled: 1})
		p.at(time.Hour)
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Canceled: 1})
		s.Fire()
		p.at(time.Hour)
		wantStats(t, p, s, circulation.Stats{Attempts: 2, Successes: 1, Canceled: 1, Delay: sec})
		p.wantStarts(t, 0, time.Hour)
		stop(t, s)
	})
}

// TestSupervisorStopWaitsForAbandonedAttempt: the Supervisor does not wait
// for an abandoned attempt, but Stop does, until its context ends.
func TestSupervisorStopWaitsForAbandonedAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			time.Sleep(60 * sec)
			return nil
		}), circulation.Backoff{Base: 10 * sec, Max: time.Minute, Timeout: 5 * sec})
		s.Fire()
		p.at(10 * sec)
		ctx, cancel := context.WithTimeout(context.Background(), 20*sec)
		defer cancel()
		if err := s.Stop(ctx); err != context.DeadlineExceeded {
			t.Fatalf("Stop = %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(p.t0); d != 30*sec {
			t.Fatalf("Stop gave up at %v, want 30s", d)
		}
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, ConsecutiveFailures: 1, Delay: 20 * sec, Running: true})
		stop(t, s)
		if d := time.Since(p.t0); d != 60*sec {
			t.Fatalf("Stop returned at %v, want 60s", d)
		}
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Timeouts: 1, Late: 1, ConsecutiveFailures: 1, Delay: 20 * sec})
		p.at(time.Hour)
		p.wantStarts(t, 0)
	})
}

// TestSupervisorSuspendAfterLateCompletion: after a late completion the
// schedule's next due time is still pending; Suspend and Stop cancel it.
func TestSupervisorSuspendAfterLateCompletion(t *testing.T) {
	for _, c := range []struct {
		name string
		halt func(*testing.T, *circulation.Supervisor)
	}{
		{"Suspend", func(t *testing.T, s *circulation.Supervisor) { s.Suspend() }},
		{"Stop", stop},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newProbe()
				s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
					if n == 1 {
						time.Sleep(30 * sec) // abandoned at 5s, skipped at 25s, due again at 65s
					}
					return nil
				}), circulation.Backoff{Base: 10 * sec, Max: time.Minute, Timeout: 5 * sec})
				s.Fire()
				p.at(40 * sec)
				c.halt(t, s)
				if d := time.Since(p.t0); d != 40*sec {
					t.Fatalf("returned at %v, want 40s", d)
				}
				p.at(70 * sec)
				want := circulation.Stats{Attempts: 1, Timeouts: 1, Skipped: 1, Late: 1, ConsecutiveFailures: 2, Delay: 40 * sec}
				wantStats(t, p, s, want)
				s.Fire()
				p.at(70 * sec)
				want.Attempts, want.Successes, want.ConsecutiveFailures, want.Delay = 2, 1, 0, 10*sec
				wantStats(t, p, s, want)
				p.wantStarts(t, 0, 70*sec)
				stop(t, s)
			})
		})
	}
}

func TestSupervisorFireAfterSupersedesBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			return errFlaky
		}), circulation.Backoff{Base: sec, Max: time.Minute})
		s.FireAfter(3 * sec)
		p.at(4 * sec) // failed at 3s: due at 5s
		s.FireAfter(10 * sec)
		p.at(20 * sec) // failed at 14s: due at 18s, then 26s
		s.Suspend()
		p.at(time.Hour)
		p.wantStarts(t, 3*sec, 14*sec, 18*sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 3, Errors: 3, ConsecutiveFailures: 3, Delay: 8 * sec})
		stop(t, s)
	})
}

func TestSupervisorWithoutTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			if _, ok := ctx.Deadline(); ok {
				t.Error("ctx has a deadline without a Timeout")
			}
			if n == 1 {
				time.Sleep(time.Hour)
			}
			return nil
		}), circulation.Backoff{Base: sec, Max: time.Minute})
		s.Fire()
		p.at(time.Hour + sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 2, Successes: 2, Delay: sec})
		p.wantStarts(t, 0, time.Hour+sec)
		stop(t, s)
	})
}

func TestSupervisorJitter(t *testing.T) {
	for _, c := range []struct {
		name   string
		b      circulation.Backoff
		r      float64
		starts []time.Duration
	}{
		{"proportional", circulation.Backoff{Base: 10 * sec, Max: time.Minute, Jitter: 0.5}, 0.25, []time.Duration{0, 7500 * time.Millisecond, 15 * sec}},
		{"full", circulation.Backoff{Base: 10 * sec, Max: time.Minute, JitterMode: circulation.JitterFull}, 0.25, []time.Duration{0, 2500 * time.Millisecond, 5 * sec}},
		{"Max is a hard ceiling", circulation.Backoff{Base: 10 * sec, Max: 10 * sec, Jitter: 0.5}, 0.9, []time.Duration{0, 10 * sec, 20 * sec}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newProbe()
				s := circulation.Supervise(p.task(func(ctx context.Context, n int) error { return nil }), c.b, constant(c.r))
				s.Fire()
				p.at(c.starts[2])
				p.wantStarts(t, c.starts...)
				stop(t, s)
			})
		})
	}
}

// slow is a Scheduler that waits twice as long as it is asked to.
type slow struct{ calls atomic.Int32 }

func (s *slow) AfterFunc(d time.Duration, f func()) circulation.Timer {
	s.calls.Add(1)
	return time.AfterFunc(2*d, f)
}

// TestSupervisorWithScheduler: delays and timeouts are timed by the
// Scheduler given.
func TestSupervisorWithScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		sched := new(slow)
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			if n == 1 {
				<-ctx.Done() // at 2 × 2s
			}
			return nil
		}), circulation.Backoff{Base: sec, Max: time.Minute, Timeout: 2 * sec}, circulation.WithScheduler(sched))
		s.Fire()
		p.at(10 * sec)
		// Timed out at 4s, then 2 × 2s; then 2 × 1s.
		p.wantStarts(t, 0, 8*sec, 10*sec)
		if sched.calls.Load() == 0 {
			t.Fatal("the Scheduler was not used")
		}
		stop(t, s)
	})
}

// counting is RuntimeScheduler that counts the callbacks it runs.
type counting struct{ runs atomic.Int32 }

func (c *counting) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return time.AfterFunc(d, func() { c.runs.Add(1); f() })
}

// TestSupervisorOnTimeAttemptCostsOneCallback: an attempt that ends within
// its Timeout runs on the callback of its own timer and on no other: the
// watchdog's timer is stopped before it fires, so it costs no goroutine.
func TestSupervisorOnTimeAttemptCostsOneCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		sched := new(counting)
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			time.Sleep(sec / 2)
			return nil
		}), circulation.Backoff{Base: sec, Max: time.Minute, Timeout: sec}, circulation.WithScheduler(sched))
		s.Fire()
		p.at(14 * sec) // attempts every 1.5s from 0s to 13.5s
		if st, runs := s.Stats(), sched.runs.Load(); st.Attempts != 10 || runs != 10 {
			t.Fatalf("%d callbacks ran for %d attempts, want 10 for 10", runs, st.Attempts)
		}
		stop(t, s)
	})
}

// TestSupervisorStatsDuringAttempt: Stats never waits for an attempt, not
// even from inside it.
func TestSupervisorStatsDuringAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		var s *circulation.Supervisor
		var inside circulation.Stats
		release := make(chan struct{})
		s = circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			inside = s.Stats()
			<-release
			return nil
		}), circulation.Backoff{Base: sec, Max: time.Minute, Timeout: time.Minute})
		s.Fire()
		p.at(0)
		want := circulation.Stats{Attempts: 1, Running: true}
		if inside != want {
			t.Fatalf("Stats inside the task = %+v, want %+v", inside, want)
		}
		wantStats(t, p, s, want)
		close(release)
		stop(t, s)
	})
}

// TestSupervisorStopFromTask: Stop with the task's own context returns at
// once, since Stop cancels it.
func TestSupervisorStopFromTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		var s *circulation.Supervisor
		var err error
		s = circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			err = s.Stop(ctx)
			return nil
		}), circulation.Backoff{Base: sec, Max: time.Minute, Timeout: time.Minute})
		s.Fire()
		p.at(time.Hour)
		if err != context.Canceled {
			t.Fatalf("Stop(ctx) inside the task = %v, want context.Canceled", err)
		}
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Successes: 1, Delay: sec})
		p.wantStarts(t, 0)
		stop(t, s)
	})
}

func TestSuperviseInvalid(t *testing.T) {
	for _, c := range []struct {
		name string
		task func(context.Context) error
		b    circulation.Backoff
		want string
	}{
		{"nil task", nil, circulation.Backoff{Base: sec, Max: sec}, "circulation: nil task"},
		{"zero Backoff", func(context.Context) error { return nil }, circulation.Backoff{}, "circulation: Backoff.Base must be positive, got 0s"},
		{"Max below Base", func(context.Context) error { return nil }, circulation.Backoff{Base: sec}, "circulation: Backoff.Max (0s) is less than Base (1s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); fmt.Sprint(r) != c.want {
					t.Fatalf("panic %q, want %q", r, c.want)
				}
			}()
			circulation.Supervise(c.task, c.b)
		})
	}
}

func TestPermanent(t *testing.T) {
	if err := circulation.Permanent(nil); err != nil {
		t.Fatalf("Permanent(nil) = %v, want nil", err)
	}
	err := circulation.Permanent(errFlaky)
	if err.Error() != "flaky" || !errors.Is(err, circulation.ErrPermanent) || !errors.Is(err, errFlaky) || errors.Unwrap(err) != errFlaky {
		t.Fatalf("Permanent(errFlaky) = %q: does not match both or does not unwrap", err)
	}
	if errors.Is(errFlaky, circulation.ErrPermanent) {
		t.Fatal("a plain error matches ErrPermanent")
	}
	if !strings.HasPrefix(circulation.ErrPermanent.Error(), "circulation: ") {
		t.Fatalf("ErrPermanent = %q, want the package prefix", circulation.ErrPermanent)
	}
}

// TestSupervisorStress hammers a Supervisor whose attempts often overstay
// with concurrent Fire, FireAfter, Suspend and Stats, in real time and under
// -race: attempts never overlap, every snapshot is consistent, and Stop
// leaves nothing running.
func TestSupervisorStress(t *testing.T) {
	const us = time.Microsecond
	p := newProbe()
	var n atomic.Int64
	s := circulation.Supervise(p.task(func(ctx context.Context, _ int) error {
		k := n.Add(1)
		d := time.Duration(k%5) * 100 * us // 0 to 400µs, around the 200µs Timeout
		if k%11 == 0 {
			d = 3 * time.Millisecond // overstays past a few due times
		}
		if k%2 == 0 {
			time.Sleep(d) // ignores its context
		} else {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		switch k % 7 {
		case 0:
			return errFlaky
		case 3:
			panic("boom")
		}
		return nil
	}), circulation.Backoff{Base: 50 * us, Max: time.Millisecond, Jitter: 0.5, Timeout: 200 * us})
	s.Fire()
	deadline := time.Now().Add(300 * time.Millisecond)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; time.Now().Before(deadline); i++ {
				switch i % 40 { // mostly read Stats, and let the backoff schedule run
				case 0:
					s.Fire()
				case 1:
					s.FireAfter(time.Duration(i%300) * us)
				case 2:
					if i%200 == 2 {
						s.Suspend()
						s.Fire()
					}
				}
				st := s.Stats()
				ended := st.Successes + st.Errors + st.Panics + st.Timeouts + st.Canceled
				if st.Attempts < ended || st.Attempts > ended+1 || st.Late > st.Timeouts || (st.Attempts > ended && !st.Running) {
					t.Errorf("inconsistent Stats %+v", st)
					return
				}
				time.Sleep(20 * us)
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	st := s.Stats()
	if m := p.most.Load(); m != 1 {
		t.Fatalf("%d attempts ran at once", m)
	}
	if st.Running || st.Late != st.Timeouts || st.Attempts != st.Successes+st.Errors+st.Panics+st.Timeouts+st.Canceled {
		t.Fatalf("Stats after Stop %+v", st)
	}
	t.Logf("%+v", st)
}

// TestSupervisorStatsConsistent reads Stats in tight loops while attempts
// follow each other as fast as they can: every snapshot must be one the
// Supervisor was in, with Running true exactly while an attempt has started
// and not ended.
func TestSupervisorStatsConsistent(t *testing.T) {
	var n atomic.Int64
	s := circulation.Supervise(func(ctx context.Context) error {
		if n.Add(1)%3 == 0 {
			return errFlaky
		}
		return nil
	}, circulation.Backoff{Base: 1, Max: 1, Timeout: time.Minute})
	s.Fire()
	deadline := time.Now().Add(200 * time.Millisecond)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				st := s.Stats()
				ended := st.Successes + st.Errors
				if running := st.Attempts - ended; running > 1 || st.Running != (running == 1) {
					t.Errorf("inconsistent Stats %+v", st)
					return
				}
			}
		}()
	}
	wg.Wait()
	stop(t, s)
}

// TestSupervisorSuspendStopsNewAttempts: once Suspend has returned, no
// attempt starts until the next Fire, not even one whose round had already
// begun (a Fire made while an attempt runs starts the next one on the same
// goroutine, at once); an attempt that had started is cancelled.
func TestSupervisorSuspendStopsNewAttempts(t *testing.T) {
	var suspended, bad atomic.Bool
	s := circulation.Supervise(func(ctx context.Context) error {
		if suspended.Load() && ctx.Err() == nil {
			bad.Store(true)
		}
		for i := 0; i < 8; i++ {
			runtime.Gosched()
		}
		return nil
	}, circulation.Backoff{Base: time.Hour, Max: time.Hour, Timeout: time.Hour})
	deadline := time.Now().Add(200 * time.Millisecond)
	for i := 0; time.Now().Before(deadline) && !bad.Load(); i++ {
		s.Fire()
		for j := 0; j < i%16; j++ {
			runtime.Gosched()
		}
		s.Fire() // often while the first runs: the next round follows it at once
		for j := 0; j < i%32; j++ {
			runtime.Gosched()
		}
		s.Suspend()
		suspended.Store(true)
		for j := 0; j < 16; j++ {
			runtime.Gosched()
		}
		suspended.Store(false)
	}
	stop(t, s)
	if bad.Load() {
		t.Fatal("an attempt started after Suspend returned, with its context not cancelled")
	}
}

// stopHook is RuntimeScheduler whose Timers call hook before they stop.
type stopHook struct{ hook func() }

func (s *stopHook) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return hookedTimer{time.AfterFunc(d, f), s.hook}
}

type hookedTimer struct {
	*time.Timer
	hook func()
}

func (t hookedTimer) Stop() bool {
	t.hook()
	return t.Timer.Stop()
}

// TestSupervisorFireAfterPermanentErrorRuns: once Err reports the permanent
// error, the Supervisor has stopped, so a Fire from then on starts it again,
// even while the failed attempt is still winding down (here: while it stops
// its watchdog).
func TestSupervisorFireAfterPermanentErrorRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		var s *circulation.Supervisor
		fired := false
		sched := &stopHook{hook: func() {
			if !fired && s.Err() != nil {
				fired = true
				s.Fire()
			}
		}}
		s = circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			if n == 1 {
				return circulation.Permanent(errFlaky)
			}
			return nil
		}), circulation.Backoff{Base: time.Hour, Max: time.Hour, Timeout: sec}, circulation.WithScheduler(sched))
		s.Fire()
		p.at(time.Minute)
		if !fired {
			t.Fatal("the hook did not fire")
		}
		p.wantStarts(t, 0, 0)
		stop(t, s)
	})
}

package circulation_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/circulation-go/circulation"
)

// With Retry, the first failure in a row waits Retry, whether a success
// came before it or none did yet; later ones grow from there to Max, and a
// success waits Base.
func TestSupervisorRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			switch n {
			case 3, 8:
				return nil
			case 7: // times out: a failure like the others
				<-ctx.Done()
				return ctx.Err()
			}
			return errFlaky
		}), circulation.Backoff{Base: 30 * sec, Max: time.Minute, Retry: sec, Timeout: 10 * sec})
		s.Fire()
		p.at(2 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 2, Errors: 2, ConsecutiveFailures: 2, Delay: 2 * sec})
		p.at(4 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 3, Successes: 1, Errors: 2, Delay: 30 * sec})
		p.at(35 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 5, Successes: 1, Errors: 4, ConsecutiveFailures: 2, Delay: 2 * sec})
		p.at(70 * sec)
		// 0 fails: 1s (none came before); 1s fails: 2s; 3s succeeds: 30s;
		// 33s fails: 1s again; 34s: 2s; 36s: 4s; 40s times out at 50s:
		// 8s; 58s succeeds.
		p.wantStarts(t, 0, sec, 3*sec, 33*sec, 34*sec, 36*sec, 40*sec, 58*sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 8, Successes: 2, Errors: 5, Timeouts: 1, Late: 1, Delay: 30 * sec})
		stop(t, s)
	})
}

// An error made with RetryAfter counts as an error, and the delay after it
// is its own: exact (no jitter), negative as zero, capped at Max. The
// delay rule's interval grows as it would, and a permanent error still
// stops the Supervisor.
func TestSupervisorRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		last := circulation.Permanent(circulation.RetryAfter(sec, errFlaky))
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			switch n {
			case 1:
				return circulation.RetryAfter(10*sec, errFlaky)
			case 2:
				return errFlaky
			case 3:
				return fmt.Errorf("wrapped: %w", circulation.RetryAfter(-5*sec, errFlaky))
			case 4:
				return circulation.RetryAfter(time.Hour, errFlaky)
			}
			return last
		}), circulation.Backoff{Base: sec, Max: time.Minute, Jitter: 0.5}, constant(0.75))
		s.Fire()
		p.at(5 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Errors: 1, ConsecutiveFailures: 1, Delay: 10 * sec})
		p.at(14 * sec)
		// The second error grows the interval from 2s to 4s: with r 0.75
		// and Jitter 0.5, it waits 5s.
		wantStats(t, p, s, circulation.Stats{Attempts: 2, Errors: 2, ConsecutiveFailures: 2, Delay: 5 * sec})
		p.at(16 * sec)
		wantStats(t, p, s, circulation.Stats{Attempts: 4, Errors: 4, ConsecutiveFailures: 4, Delay: time.Minute})
		p.at(80 * sec)
		p.wantStarts(t, 0, 10*sec, 15*sec, 15*sec, 75*sec)
		if err := s.Err(); err != last {
			t.Fatalf("Err() = %v, want %v", err, last)
		}
		stop(t, s)
	})
}

func TestRetryAfterError(t *testing.T) {
	if err := circulation.RetryAfter(sec, nil); err != nil {
		t.Fatalf("RetryAfter(1s, nil) = %v, want nil", err)
	}
	err := circulation.RetryAfter(sec, errFlaky)
	if err.Error() != errFlaky.Error() || !errors.Is(err, errFlaky) || errors.Is(err, circulation.ErrPermanent) {
		t.Fatalf("RetryAfter(1s, errFlaky) = %v: want errFlaky's message, matching it and not ErrPermanent", err)
	}
}

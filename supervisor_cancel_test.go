package circulation_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/circulation-go/circulation"
)

// TestSupervisorCanceledIsNotAFailure: an attempt that Suspend cancelled is
// counted in Canceled and nowhere else, whatever it ends with: an error, a
// permanent error, a panic or runtime.Goexit. It does not grow the interval,
// does not stop the Supervisor, and a Fire made after the Suspend, while the
// cancelled attempt is still finishing, runs as soon as it returns.
func TestSupervisorCanceledIsNotAFailure(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(ctx context.Context) error
	}{
		{"error", func(ctx context.Context) error { return ctx.Err() }},
		{"permanent error", func(ctx context.Context) error { return circulation.Permanent(ctx.Err()) }},
		{"panic", func(ctx context.Context) error { panic("cancelled") }},
		{"Goexit", func(ctx context.Context) error { runtime.Goexit(); return nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newProbe()
				s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
					switch n {
					case 1:
						return errFlaky // interval 1s → 2s
					case 2:
						<-ctx.Done()
						time.Sleep(sec) // winds down
						return c.end(ctx)
					}
					return errFlaky // 2s → 4s, unless the cancelled attempt grew it
				}), circulation.Backoff{Base: sec, Max: time.Minute, Timeout: time.Minute})
				s.Fire()
				p.at(3 * sec) // attempt 2 began at 2s
				s.Suspend()
				s.Fire() // while attempt 2 winds down
				p.at(4 * sec)
				if err := s.Err(); err != nil {
					t.Fatalf("Err() = %v after a cancelled attempt, want nil", err)
				}
				wantStats(t, p, s, circulation.Stats{Attempts: 3, Errors: 2, Canceled: 1, ConsecutiveFailures: 2, Delay: 4 * sec})
				p.at(time.Minute)
				p.wantStarts(t, 0, 2*sec, 4*sec, 8*sec, 16*sec, 32*sec)
				stop(t, s)
			})
		})
	}
}

// TestSupervisorStopCancelsPermanent: an attempt that Stop cancelled and
// that returns ctx.Err() as a permanent error is not a permanent error.
func TestSupervisorStopCancelsPermanent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			<-ctx.Done()
			return circulation.Permanent(ctx.Err())
		}), circulation.Backoff{Base: sec, Max: time.Minute})
		s.Fire()
		p.at(sec)
		stop(t, s)
		if err := s.Err(); err != nil {
			t.Fatalf("Err() = %v, want nil", err)
		}
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Canceled: 1})
	})
}

// TestSupervisorSuspendAfterPermanentReturn: a Suspend that comes after the
// task returned a permanent error, before the Supervisor accounted for it,
// does not make the attempt a cancelled one: Err reports the error. But the
// Supervisor was suspended, and a Fire after the Suspend is kept.
func TestSupervisorSuspendAfterPermanentReturn(t *testing.T) {
	for _, fire := range []bool{false, true} {
		t.Run(map[bool]string{false: "Suspend", true: "Suspend then Fire"}[fire], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newProbe()
				var s *circulation.Supervisor
				errDone := circulation.Permanent(errFlaky)
				ends := 0
				circulation.SetEndHook(func() {
					if ends++; ends == 1 {
						s.Suspend()
						if fire {
							s.Fire()
						}
					}
				})
				defer circulation.SetEndHook(nil)
				s = circulation.Supervise(p.task(func(ctx context.Context, n int) error {
					if n == 1 {
						return errDone
					}
					return nil
				}), circulation.Backoff{Base: sec, Max: time.Minute, Timeout: time.Minute})
				s.Fire()
				p.at(0)
				if !fire {
					if err := s.Err(); err != errDone {
						t.Fatalf("Err() = %v, want %v", err, errDone)
					}
					wantStats(t, p, s, circulation.Stats{Attempts: 1, Errors: 1, ConsecutiveFailures: 1})
					p.at(time.Minute)
					p.wantStarts(t, 0)
					stop(t, s)
					return
				}
				// The Fire ran attempt 2 at once, which cleared Err.
				wantStats(t, p, s, circulation.Stats{Attempts: 2, Successes: 1, Errors: 1, Delay: sec})
				if err := s.Err(); err != nil {
					t.Fatalf("Err() = %v after a new attempt, want nil", err)
				}
				p.at(2 * sec)
				p.wantStarts(t, 0, 0, sec, 2*sec)
				stop(t, s)
			})
		})
	}
}

package circulation_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/circulation-go/circulation"
)

// TestSupervisorFireAsAttemptBegins: a Fire that returns before an attempt
// has begun (Stats counts no attempt yet) comes before it, even if the main
// Trigger had already started the round that runs it: that attempt is the
// one the Fire asked for, and the delay after it is the backoff's. A Fire
// that comes once the attempt has begun asks for one more, right after it
// returns, even if it returns late. Each holds whether the attempt ends in
// time or overstays its Timeout.
//
// The attempt that the Fire races with is one of the backoff schedule's,
// due at 10s. A test hook holds its round before the attempt begins.
func TestSupervisorFireAsAttemptBegins(t *testing.T) {
	for _, c := range []struct {
		name      string
		before    bool          // Fire while the round is held, before the attempt begins
		overstays bool          // the attempt runs 100s, past its 5s Timeout
		third     time.Duration // when the attempt after it starts
	}{
		// 11s + Base 10s.
		{"before, in time", true, false, 21 * sec},
		// Abandoned at 15s: due at 35s (skipped, 40s) and 75s (skipped,
		// 60s), returns at 110s, runs when the last delay is out.
		{"before, overstays", true, true, 135 * sec},
		// Right after it returns.
		{"during, in time", false, false, 11 * sec},
		{"during, overstays", false, true, 110 * sec},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				held, release := make(chan struct{}, 1), make(chan struct{})
				rounds := 0
				circulation.SetRoundHook(func() {
					if rounds++; rounds == 2 {
						held <- struct{}{}
						<-release
					}
				})
				defer circulation.SetRoundHook(nil)
				p := newProbe()
				s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
					if n == 2 {
						if c.overstays {
							time.Sleep(100 * sec)
						} else {
							time.Sleep(sec)
						}
					}
					return nil
				}), circulation.Backoff{Base: 10 * sec, Max: time.Minute, Timeout: 5 * sec})
				s.Fire()
				p.at(10 * sec)
				<-held
				if c.before {
					s.Fire()
					if n := s.Stats().Attempts; n != 1 {
						t.Fatalf("%d attempts had begun when Fire returned, want 1", n)
					}
					close(release)
				} else {
					close(release)
					synctest.Wait()
					if n := s.Stats().Attempts; n != 2 {
						t.Fatalf("%d attempts have begun, want 2", n)
					}
					s.Fire()
				}
				p.at(c.third + sec)
				p.wantStarts(t, 0, 10*sec, c.third)
				stop(t, s)
			})
		})
	}
}

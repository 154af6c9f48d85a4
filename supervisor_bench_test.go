package circulation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/circulation-go/circulation"
)

// Compare the Supervisor with the Trigger it runs on, in one run:
//
//	go test -run '^$' -bench 'TriggerIteration|SupervisorAttempt' -count 6

// BenchmarkTriggerIteration is the baseline of BenchmarkSupervisorAttempt:
// a bare Trigger on RuntimeScheduler whose Func asks to run again after 1ns,
// the Supervisor's delay there. Each iteration is one timer and one
// goroutine. (With no delay there would be no timer: a Trigger starts such
// a run's goroutine directly.)
func BenchmarkTriggerIteration(b *testing.B) {
	c := newCountdown(b.N)
	tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		return time.Nanosecond, !c.tick()
	})
	measure(b, c, tr.Fire, tr.Stop)
}

// BenchmarkSupervisorAttempt measures one attempt of a trivial task that
// succeeds at once, with a delay of 1ns: the Trigger iteration it runs on,
// plus the Supervisor's bookkeeping, plus (with a Timeout) arming and
// stopping the watchdog.
func BenchmarkSupervisorAttempt(b *testing.B) {
	for _, bc := range []struct {
		name    string
		timeout time.Duration
	}{
		{"Timeout", time.Minute},
		{"NoTimeout", 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := newCountdown(b.N)
			s := circulation.Supervise(func(ctx context.Context) error {
				if c.tick() {
					return errEnough // stops it, as the baseline stops at b.N
				}
				return nil
			}, circulation.Backoff{Base: 1, Max: 1, Timeout: bc.timeout})
			measure(b, c, s.Fire, s.Stop)
		})
	}
}

var errEnough = circulation.Permanent(errors.New("enough"))

// A countdown closes done at the n-th tick. Its ticks come from runs that
// never overlap, so it needs no lock.
type countdown struct {
	n    int
	done chan struct{}
}

func newCountdown(n int) *countdown { return &countdown{n: n, done: make(chan struct{})} }

func (c *countdown) tick() bool {
	c.n--
	if c.n == 0 {
		close(c.done)
	}
	return c.n <= 0
}

// measure times what fire starts until c is done, then stops it.
func measure(b *testing.B, c *countdown, fire func(), stop func(context.Context) error) {
	b.ReportAllocs()
	b.ResetTimer()
	fire()
	<-c.done
	b.StopTimer()
	if err := stop(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSupervisorStats reads Stats from every P while the Supervisor
// runs attempts as fast as it can.
func BenchmarkSupervisorStats(b *testing.B) {
	b.ReportAllocs()
	s := circulation.Supervise(func(ctx context.Context) error { return nil },
		circulation.Backoff{Base: time.Microsecond, Max: time.Microsecond, Timeout: time.Minute})
	s.Fire()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if st := s.Stats(); st.Attempts == 0 && st.Running {
				b.Errorf("impossible Stats %+v", st)
			}
		}
	})
	b.StopTimer()
	if err := s.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
}

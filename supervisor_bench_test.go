package circulation_test

import (
	"context"
	"testing"
	"time"

	"github.com/circulation-go/circulation"
)

// Run these with -run '^$': until the core stops recycling timers across
// synctest bubbles, a test run before them can leave a dead timer in the
// pool that a Trigger on RuntimeScheduler picks up.
//
//	go test -run '^$' -bench 'TriggerIteration|SupervisorAttempt' -count 6

// BenchmarkTriggerIteration is the baseline of BenchmarkSupervisorAttempt:
// a bare Trigger on RuntimeScheduler whose Func asks to run again at once.
// Each iteration is one timer and one goroutine.
func BenchmarkTriggerIteration(b *testing.B) {
	b.ReportAllocs()
	n := 0
	done := make(chan struct{})
	tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		if n++; n == b.N {
			close(done)
			return 0, false
		}
		return 0, true
	})
	b.ResetTimer()
	tr.Fire()
	<-done
	b.StopTimer()
	if err := tr.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSupervisorAttempt measures one attempt of a trivial task that
// succeeds at once, with a delay of 1ns: the Trigger iteration it runs on,
// plus the Supervisor's bookkeeping, plus (with a Timeout) arming and
// stopping the watchdog.
func BenchmarkSupervisorAttempt(b *testing.B) {
	for _, c := range []struct {
		name    string
		timeout time.Duration
	}{
		{"Timeout", time.Minute},
		{"NoTimeout", 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			done := make(chan struct{})
			s := circulation.Supervise(func(ctx context.Context) error {
				if n++; n == b.N {
					close(done)
				}
				return nil
			}, circulation.Backoff{Base: 1, Max: 1, Timeout: c.timeout})
			b.ResetTimer()
			s.Fire()
			<-done
			b.StopTimer()
			if err := s.Stop(context.Background()); err != nil {
				b.Fatal(err)
			}
		})
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
			if s.Stats().Attempts == 0 && s.Stats().Running {
				b.Error("impossible Stats")
			}
		}
	})
	b.StopTimer()
	if err := s.Stop(context.Background()); err != nil {
		b.Fatal(err)
	}
}

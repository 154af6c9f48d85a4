package circulation_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/circulation-go/circulation"
)

// TestSupervisorGoexitDuringStop: an attempt that a Fire concurrent with
// Stop started, and that calls runtime.Goexit once Stop has suspended the
// main Trigger, does not arm it again: Stop returns as soon as the attempt
// has, instead of waiting for the next attempt, and the one after (found by
// the explorer: "goexit arms while a Stop is under way").
func TestSupervisorGoexitDuringStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		var s *circulation.Supervisor
		release := make(chan struct{})
		s = circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			<-release
			runtime.Goexit()
			return nil
		}), circulation.Backoff{Base: time.Hour, Max: time.Hour, Timeout: time.Minute})
		hookIn, hookGo := make(chan struct{}), make(chan struct{})
		circulation.SetStopHook(func() {
			s.Fire() // concurrent with Stop
			hookIn <- struct{}{}
			<-hookGo
		})
		defer circulation.SetStopHook(nil)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
		defer cancel()
		stopped := make(chan error)
		go func() { stopped <- s.Stop(ctx) }()
		<-hookIn
		synctest.Wait() // the Fire's attempt has begun, and waits for release
		if n := s.Stats().Attempts; n != 1 {
			t.Fatalf("%d attempts have begun, want 1", n)
		}
		close(hookGo)
		synctest.Wait() // Stop has suspended the main Trigger, and waits for the attempt
		close(release)
		if err := <-stopped; err != nil {
			t.Fatalf("Stop = %v at %v, want nil at once", err, time.Since(p.t0))
		}
		if d := time.Since(p.t0); d != 0 {
			t.Fatalf("Stop returned at %v, want 0s", d)
		}
		circulation.SetStopHook(nil)
		p.at(3 * time.Hour)
		p.wantStarts(t, 0)
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Panics: 1, ConsecutiveFailures: 1, Delay: time.Hour})
	})
}

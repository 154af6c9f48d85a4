package circulation_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
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

// TestSupervisorStopStress runs Stop again and again while other goroutines
// Fire, FireAfter and Suspend, with attempts that overstay, fail, panic and
// call runtime.Goexit, in real time and under -race: attempts never
// overlap, each Stop with a live context returns, and a last Stop leaves no
// goroutine and no timer (goleak checks after the tests).
func TestSupervisorStopStress(t *testing.T) {
	const us = time.Microsecond
	p := newProbe()
	var n atomic.Int64
	s := circulation.Supervise(p.task(func(ctx context.Context, _ int) error {
		k := n.Add(1)
		if k%3 == 0 {
			time.Sleep(time.Duration(k%4) * 100 * us) // around the 150µs Timeout, ignoring ctx
		}
		switch k % 9 {
		case 0:
			return errFlaky
		case 2:
			panic("boom")
		case 4:
			runtime.Goexit()
		case 6:
			<-ctx.Done()
			return circulation.Permanent(ctx.Err())
		}
		return nil
	}), circulation.Backoff{Base: 20 * us, Max: 500 * us, Jitter: 0.5, Timeout: 150 * us})
	deadline := time.Now().Add(300 * time.Millisecond)
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; time.Now().Before(deadline); i++ {
				switch i % 4 {
				case 0, 1:
					s.Fire()
				case 2:
					s.FireAfter(time.Duration(i%200) * us)
				case 3:
					s.Suspend()
				}
				time.Sleep(30 * us)
			}
		}()
	}
	stops := 0
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.Stop(ctx); err != nil {
			cancel()
			t.Fatalf("Stop: %v", err)
		}
		cancel()
		stops++
		s.Fire()
		time.Sleep(200 * us)
	}
	wg.Wait()
	stop(t, s)
	if m := p.most.Load(); m != 1 {
		t.Fatalf("%d attempts ran at once", m)
	}
	st := s.Stats()
	if st.Running || st.Late != st.Timeouts || st.Attempts != st.Successes+st.Errors+st.Panics+st.Timeouts+st.Canceled {
		t.Fatalf("Stats after Stop %+v", st)
	}
	t.Logf("%d Stops; %+v", stops, st)
}

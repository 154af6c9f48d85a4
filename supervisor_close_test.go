package circulation_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/circulation-go/circulation"
)

// Close stops the Supervisor, waiting for the attempt in flight, and every
// later Fire and FireAfter does nothing; a second Close returns at once.
func TestSupervisorClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			<-ctx.Done() // until Close cancels it
			time.Sleep(sec)
			return ctx.Err()
		}), circulation.Backoff{Base: sec, Max: sec})
		s.Fire()
		p.at(10 * sec)
		if !s.Running() {
			t.Fatal("Running() = false while the attempt runs")
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if got := time.Since(p.t0); got != 11*sec {
			t.Fatalf("Close returned at %v, want 11s: after the attempt", got)
		}
		if s.Running() {
			t.Fatal("Running() = true after Close")
		}
		s.Fire()
		s.FireAfter(sec)
		p.at(time.Hour)
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Fatalf("Stop after Close: %v", err)
		}
		p.wantStarts(t, 0)
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Canceled: 1, Delay: 0})
	})
}

// Close from inside the task, with the task's context, closes the
// Supervisor and returns nil at once; the attempt then ends as a cancelled
// one, and nothing runs again: not the Fire the task made before, nor its
// return.
func TestSupervisorCloseFromInside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		var s *circulation.Supervisor
		s = circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			s.Fire()
			if err := s.Close(ctx); err != nil {
				t.Errorf("Close from inside: %v", err)
			}
			if ctx.Err() == nil {
				t.Error("Close from inside left the attempt's context alive")
			}
			s.Fire()
			return errFlaky
		}), circulation.Backoff{Base: sec, Max: sec, Timeout: time.Minute})
		s.Fire()
		p.at(time.Hour)
		p.wantStarts(t, 0)
		wantStats(t, p, s, circulation.Stats{Attempts: 1, Canceled: 1})
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// Wait returns the permanent error: at once if the Supervisor stopped on
// one already, to every waiter, and that very error even when a Fire
// restarts the Supervisor before the waiter runs; nil once it is closed;
// ctx.Err() when ctx ends first.
func TestSupervisorWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		errs := []error{circulation.Permanent(errors.New("gone")), circulation.Permanent(errors.New("gone again"))}
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			switch n {
			case 2:
				return errs[0]
			case 3:
				return errs[1]
			}
			return errFlaky
		}), circulation.Backoff{Base: sec, Max: sec})
		ctx, cancel := context.WithTimeout(context.Background(), sec/2)
		if err := s.Wait(ctx); err != context.DeadlineExceeded {
			t.Fatalf("Wait before any attempt = %v, want DeadlineExceeded", err)
		}
		cancel()
		got := make(chan error, 4)
		for range 3 {
			go func() { got <- s.Wait(context.Background()) }()
		}
		synctest.Wait()
		s.Fire() // fails at once, then stops on errs[0] at 1.5s
		p.at(sec + sec/2)
		if err := s.Wait(context.Background()); err != errs[0] {
			t.Fatalf("Wait after the stop = %v, want %v", err, errs[0])
		}
		s.Fire() // restarts it: errs[1] at once
		for range 3 {
			if err := <-got; err != errs[0] {
				t.Fatalf("a waiter got %v, want %v", err, errs[0])
			}
		}
		synctest.Wait()
		if err := s.Wait(context.Background()); err != errs[1] {
			t.Fatalf("Wait after the second stop = %v, want %v", err, errs[1])
		}
		s.Fire() // n = 4 fails, and it retries every second until closed
		synctest.Wait()
		for range 2 {
			go func() { got <- s.Wait(context.Background()) }()
		}
		p.at(10 * sec)
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := <-got; err != nil {
				t.Fatalf("a waiter got %v when closed, want nil", err)
			}
		}
		if err := s.Wait(context.Background()); err != nil {
			t.Fatalf("Wait after Close = %v, want nil", err)
		}
	})
}

// A Fire racing the permanent stop either comes before it (and is dropped
// with the schedule, and Wait returns the error) or after it (and restarts
// the Supervisor); a Wait made before both always returns the error.
func TestSupervisorWaitRacesFire(t *testing.T) {
	for i := 0; i < 200; i++ {
		gone := circulation.Permanent(errors.New("gone"))
		started := make(chan struct{})
		var once sync.Once
		s := circulation.Supervise(func(ctx context.Context) error {
			once.Do(func() { close(started) })
			return gone
		}, circulation.Backoff{Base: time.Millisecond, Max: time.Millisecond})
		got := make(chan error, 1)
		go func() { got <- s.Wait(context.Background()) }()
		s.Fire()
		<-started
		s.Fire()
		if err := <-got; err != gone {
			t.Fatalf("Wait = %v, want %v", err, gone)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// Close racing Fire, FireAfter and the Supervisor's own schedule: once
// Close has returned, no attempt starts.
func TestSupervisorCloseRacesFire(t *testing.T) {
	for i := 0; i < 200; i++ {
		var closed, after atomic.Int32
		s := circulation.Supervise(func(ctx context.Context) error {
			if closed.Load() != 0 {
				after.Add(1)
			}
			runtime.Gosched()
			return nil
		}, circulation.Backoff{Base: time.Microsecond, Max: time.Microsecond, Timeout: time.Millisecond})
		s.Fire()
		var wg sync.WaitGroup
		stopFiring := make(chan struct{})
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stopFiring:
						return
					default:
					}
					if g == 0 {
						s.Fire()
					} else {
						s.FireAfter(time.Microsecond)
					}
				}
			}()
		}
		runtime.Gosched()
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		closed.Store(1)
		time.Sleep(time.Millisecond) // let the firing goroutines try again
		close(stopFiring)
		wg.Wait()
		if err := s.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := after.Load(); n != 0 {
			t.Fatalf("round %d: %d attempts started after Close returned", i, n)
		}
	}
}

// Next reports the due time of the next attempt, kept by every party that
// schedules one, and the zero Time when none is scheduled.
func TestSupervisorNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		var s0 *circulation.Supervisor
		wantNext := func(want time.Duration, none bool) {
			t.Helper()
			got := p.t0.Add(-1) // not a due time
			if n := s0.Next(); !n.IsZero() {
				got = n
			}
			switch {
			case none && !got.Equal(p.t0.Add(-1)):
				t.Fatalf("at %v: Next() = %v after the start, want zero", time.Since(p.t0), got.Sub(p.t0))
			case !none && !got.Equal(p.t0.Add(want)):
				t.Fatalf("at %v: Next() = %v after the start, want %v", time.Since(p.t0), got.Sub(p.t0), want)
			}
		}
		s0 = circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			switch n {
			case 1:
				time.Sleep(sec)
				return nil
			case 2:
				return errFlaky
			case 3: // overstays its Timeout of 2s by 5s
				time.Sleep(7 * sec)
				return nil
			case 4:
				return circulation.Permanent(errFlaky)
			}
			return nil
		}), circulation.Backoff{Base: 10 * sec, Max: 20 * sec, Retry: 3 * sec, Timeout: 2 * sec})
		wantNext(0, true) // before the first Fire
		s0.Fire()
		// Due now, or, if the attempt has begun already (the Trigger runs
		// it on a goroutine of its own at once), no time at all.
		if n := s0.Next(); !n.IsZero() && !n.Equal(p.t0) {
			t.Fatalf("right after Fire: Next() = %v after the start, want 0s or zero", n.Sub(p.t0))
		}
		p.at(sec / 2)
		wantNext(0, true) // the attempt runs, and nothing asked for another
		p.at(2 * sec)
		wantNext(11*sec, false) // its end plus Base
		p.at(11 * sec)
		wantNext(14*sec, false) // the error: Retry
		p.at(14*sec + sec/2)
		wantNext(0, true)
		p.at(16 * sec)
		wantNext(22*sec, false) // timed out at 16s: the watchdog's due time, 6s later
		p.at(21 * sec)
		wantNext(22*sec, false) // returned late at 21s: still the watchdog's
		p.at(22 * sec)
		wantNext(0, true) // attempt 4 stops it
		s0.FireAfter(5 * sec)
		wantNext(27*sec, false)
		s0.Suspend()
		wantNext(0, true)
		s0.FireAfter(sec)
		if err := s0.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		wantNext(0, true)
		p.wantStarts(t, 0, 11*sec, 14*sec, 22*sec)
	})
}

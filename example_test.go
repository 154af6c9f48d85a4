package circulation_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/wheel"
)

// A Trigger runs its task when fired, then again whenever the task asks:
// here three times, 10ms apart, after which it rests until the next Fire.
func ExampleBind() {
	done := make(chan struct{})
	n := 0 // runs never overlap, so the task's own state needs no lock
	poll := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		n++
		fmt.Println("poll", n)
		if n == 3 {
			close(done)
			return 0, false // rest until the next Fire
		}
		return 10 * time.Millisecond, true // run again in 10ms
	})

	poll.Fire()
	<-done
	if err := poll.Stop(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// poll 1
	// poll 2
	// poll 3
}

// Fires that arrive while the task runs are neither lost nor run alongside
// it: however many there are, they make exactly one more run, right after
// the one in flight.
func ExampleTrigger_Fire() {
	started := make(chan int)
	finish := make(chan struct{})
	runs := 0
	reload := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		runs++
		started <- runs
		<-finish // a slow reload
		return 0, false
	})

	reload.Fire()
	fmt.Println("run", <-started, "started")
	var wg sync.WaitGroup
	for range 10 { // ten "update now" messages, from ten goroutines
		wg.Go(reload.Fire)
	}
	wg.Wait()
	finish <- struct{}{}
	fmt.Println("run", <-started, "started, for all ten fires")
	finish <- struct{}{}

	if err := reload.Stop(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("runs:", runs)
	// Output:
	// run 1 started
	// run 2 started, for all ten fires
	// runs: 2
}

// The latest call wins, whether it brings the run forward or puts it off.
func ExampleTrigger_FireAfter() {
	ran := make(chan time.Time)
	t := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		ran <- time.Now()
		return 0, false
	})

	start := time.Now()
	t.FireAfter(time.Hour)
	t.FireAfter(10 * time.Millisecond) // sooner: replaces the hour
	fmt.Println("ran after 10ms:", (<-ran).Sub(start) >= 10*time.Millisecond)

	start = time.Now()
	t.FireAfter(10 * time.Millisecond)
	t.FireAfter(50 * time.Millisecond) // later: replaces the 10ms
	fmt.Println("ran after 50ms:", (<-ran).Sub(start) >= 50*time.Millisecond)

	if err := t.Stop(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// ran after 10ms: true
	// ran after 50ms: true
}

// Suspend is an off switch: it cancels the run in flight without waiting
// for it, the run's request to run again is ignored, and nothing runs until
// the next Fire.
func ExampleTrigger_Suspend() {
	running := make(chan struct{})
	stopped := make(chan error, 2)
	t := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		running <- struct{}{}
		<-ctx.Done() // a long pull, cut short
		stopped <- ctx.Err()
		return time.Millisecond, true // ignored: Suspend came after this run began
	})

	t.Fire()
	<-running
	t.Suspend()
	fmt.Println("run stopped:", <-stopped)
	select {
	case <-running:
		fmt.Println("ran again")
	case <-time.After(50 * time.Millisecond):
		fmt.Println("nothing runs while suspended")
	}

	t.Fire()
	<-running
	fmt.Println("running again after Fire")
	if err := t.Stop(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// run stopped: context canceled
	// nothing runs while suspended
	// running again after Fire
}

// Stop is for shutting down: it suspends the Trigger, then waits until the
// run in flight has returned and no timer is left, for as long as its
// context allows.
func ExampleTrigger_Stop() {
	running := make(chan struct{})
	finish := make(chan struct{})
	t := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		close(running)
		<-finish // a write that must not be cut short: it ignores ctx
		fmt.Println("saved")
		return time.Minute, true
	})
	t.Fire()
	<-running

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	fmt.Println("Stop with a deadline:", t.Stop(ctx)) // the run is still in flight

	close(finish)
	fmt.Println("Stop:", t.Stop(context.Background())) // waits for it
	// Output:
	// Stop with a deadline: context deadline exceeded
	// saved
	// Stop: <nil>
}

// A timing wheel is a Scheduler for many timers. Here each of a thousand
// connections has an idle Trigger on one wheel, fired again by every
// message: the latest FireAfter wins and stops the timer it replaces, so
// the wheel holds one timer per connection however many messages come.
func Example_wheel() {
	w := wheel.New(wheel.WithTick(time.Millisecond), wheel.WithSlots(512))
	defer w.Stop()

	closed := make(chan int)
	idle := make([]*circulation.Trigger, 1000)
	for i := range idle {
		idle[i] = circulation.Bind(w, func(context.Context) (time.Duration, bool) {
			closed <- i // silent for too long: close the connection
			return 0, false
		})
	}
	for range 3 { // three messages on every connection
		for _, t := range idle {
			t.FireAfter(time.Minute)
		}
	}
	fmt.Println("timers pending:", w.Len())

	idle[7].Fire() // connection 7 says goodbye: close it now, not in a minute
	fmt.Println("closed connection", <-closed)
	fmt.Println("timers pending:", w.Len())

	for _, t := range idle {
		if err := t.Stop(context.Background()); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("timers pending after Stop:", w.Len())
	// Output:
	// timers pending: 1000
	// closed connection 7
	// timers pending: 999
	// timers pending after Stop: 0
}

// A task that fails three times, succeeds, then fails for good. Failures
// double the delay up to Max; the success brings it back to Base; the
// permanent error stops the Supervisor. The random source is fixed so that
// the jitter draws exactly the interval.
func ExampleSupervise() {
	n := 0
	done := make(chan struct{})
	var s *circulation.Supervisor
	s = circulation.Supervise(func(ctx context.Context) error {
		n++ // attempts never overlap: no lock needed
		fmt.Printf("attempt %d after %v\n", n, s.Stats().Delay)
		switch {
		case n <= 3:
			return errors.New("registry unavailable")
		case n == 4:
			return nil
		}
		context.AfterFunc(ctx, func() { close(done) }) // once this attempt has returned
		return circulation.Permanent(errors.New("service decommissioned"))
	}, circulation.Backoff{
		Base:       10 * time.Millisecond,
		Max:        30 * time.Millisecond,
		Multiplier: 2,
		Jitter:     0.2,
		Timeout:    time.Second,
	}, circulation.WithRand(func() float64 { return 0.5 }))

	s.Fire()
	<-done
	if err := s.Stop(context.Background()); err != nil {
		fmt.Println(err)
	}
	st := s.Stats()
	fmt.Printf("%d attempts, %d errors; stopped by %q\n", st.Attempts, st.Errors, s.Err())
	// Output:
	// attempt 1 after 0s
	// attempt 2 after 20ms
	// attempt 3 after 30ms
	// attempt 4 after 30ms
	// attempt 5 after 10ms
	// 5 attempts, 4 errors; stopped by "service decommissioned"
}

package circulation_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/circulation-go/circulation"
)

// Writers from many goroutines ask for a flush within an hour, and one asks
// for one within 10ms: the earliest time wins, and one flush takes all the
// writes.
func ExampleTrigger_FireWithin() {
	var pending atomic.Int64
	flushed := make(chan int64)
	flusher := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		flushed <- pending.Swap(0)
		return 0, false
	})

	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			pending.Add(1)
			flusher.FireWithin(time.Hour) // rides on whatever is due sooner
		})
	}
	wg.Wait()
	pending.Add(1)
	flusher.FireWithin(10 * time.Millisecond) // sooner: replaces the hour
	fmt.Println("flushed", <-flushed, "writes")
	if err := flusher.Stop(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// flushed 6 writes
}

// Shutdown runs a pending arming at once instead of at its due time, waits
// for it, and closes the Trigger: later fires do nothing.
func ExampleTrigger_Shutdown() {
	runs := 0
	flusher := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		runs++
		return time.Second, true // ignored: the Trigger is closing
	})

	flusher.FireAfter(time.Hour)
	start := time.Now()
	if err := flusher.Shutdown(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("runs:", runs, "long before the hour:", time.Since(start) < time.Minute)
	flusher.Fire() // closed: nothing happens
	time.Sleep(10 * time.Millisecond)
	fmt.Println("runs:", runs)
	// Output:
	// runs: 1 long before the hour: true
	// runs: 1
}

// A task that asks to run again at once still runs at most once per
// minimum interval: each run starts 20ms after the one before at the
// earliest, so the third starts 40ms after the Fire at the earliest
// (however late the Func reads the clock).
func ExampleWithMinInterval() {
	var runs int
	var third time.Time
	done := make(chan struct{})
	tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
		runs++
		if runs == 3 {
			third = time.Now()
			close(done)
			return 0, false
		}
		return 0, true // again, at once
	}, circulation.WithMinInterval(20*time.Millisecond))

	fired := time.Now()
	tr.Fire()
	<-done
	if err := tr.Close(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("runs:", runs)
	fmt.Println("the third at least 40ms after the Fire:", third.Sub(fired) >= 40*time.Millisecond)
	// Output:
	// runs: 3
	// the third at least 40ms after the Fire: true
}

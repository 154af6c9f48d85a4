package wheel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/wheel"
)

func Example() {
	w := wheel.New()
	defer w.Stop()

	done := make(chan struct{})
	t := w.AfterFunc(10*time.Millisecond, func() { close(done) })
	<-done
	fmt.Println("fired; Stop after firing:", t.Stop())

	t = w.AfterFunc(time.Hour, func() { fmt.Println("never printed") })
	fmt.Println("pending:", w.Len())
	fmt.Println("Stop before firing:", t.Stop(), "pending:", w.Len())
	// Output:
	// fired; Stop after firing: false
	// pending: 1
	// Stop before firing: true pending: 0
}

// A Trigger can run on a wheel instead of the runtime's timers.
func Example_trigger() {
	w := wheel.New()
	defer w.Stop()

	runs := make(chan int, 3)
	n := 0
	tr := circulation.Bind(w, func(context.Context) (time.Duration, bool) {
		n++
		runs <- n
		return 5 * time.Millisecond, n < 3 // run three times, 5 ms apart
	})
	tr.Fire()
	fmt.Println(<-runs, <-runs, <-runs)
	if err := tr.Stop(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("pending:", w.Len())
	// Output:
	// 1 2 3
	// pending: 0
}

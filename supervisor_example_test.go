package circulation_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/circulation-go/circulation"
)

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
		close(done)
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

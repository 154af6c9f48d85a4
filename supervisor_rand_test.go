package circulation_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/circulation-go/circulation"
)

// TestSupervisorRandCallsBack: the random source runs outside the
// Supervisor's bookkeeping, so it may call the Supervisor: Stats (which
// never waits), and even Fire or Suspend. The test runs in real time, not
// in a synctest bubble: a Stats that spun would keep the bubble's clock
// from moving, and the test would hang instead of failing.
func TestSupervisorRandCallsBack(t *testing.T) {
	var s *circulation.Supervisor
	var calls atomic.Int32
	done := make(chan circulation.Stats, 1)
	rand := func() float64 {
		st := s.Stats()
		switch calls.Add(1) {
		case 1:
			s.Fire() // runs the next attempt at once
		case 2:
			s.Suspend()
			done <- st
		}
		return 0.5
	}
	s = circulation.Supervise(func(ctx context.Context) error { return nil },
		circulation.Backoff{Base: time.Hour, Max: time.Hour, Jitter: 0.5, Timeout: time.Hour},
		circulation.WithRand(rand))
	s.Fire()
	select {
	case st := <-done:
		if want := (circulation.Stats{Attempts: 2, Successes: 1, Delay: time.Hour, Running: true}); st != want {
			t.Errorf("Stats inside the random source = %+v, want %+v", st, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the random source did not return: Stats or Fire waited inside it")
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Attempts != 2 || st.Successes != 2 {
		t.Fatalf("Stats %+v, want 2 attempts, both successes", st)
	}
}

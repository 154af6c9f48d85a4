package circulation_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
)

// A FireAfter that supersedes a pending arming on RuntimeScheduler keeps
// that arming's timer when it comes no later than the new due time (see
// retarget in shot.go). These tests check that the Func still runs exactly
// when the latest call asked for, on the bubble's clock.

// starts records when each run starts, relative to the bubble's start.
type starts struct {
	t0 time.Time
	mu sync.Mutex
	at []time.Duration
}

func (s *starts) f(context.Context) (time.Duration, bool) {
	s.mu.Lock()
	s.at = append(s.at, time.Since(s.t0))
	s.mu.Unlock()
	return 0, false
}

// reset forgets the runs so far and restarts the clock.
func (s *starts) reset() {
	s.mu.Lock()
	s.t0, s.at = time.Now(), nil
	s.mu.Unlock()
}

func (s *starts) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.at...)
}

func TestRetargetLaterRunsAtTheLaterDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &starts{t0: time.Now()}
		tr := circulation.Bind(nil, s.f)
		tr.FireAfter(time.Second) // timer at 1s
		time.Sleep(500 * ms)
		tr.FireAfter(time.Second) // due at 1.5s: the timer at 1s comes early and is re-armed
		time.Sleep(400 * ms)
		tr.FireAfter(time.Second) // due at 1.9s
		time.Sleep(1050 * ms)     // 1.95s
		synctest.Wait()
		assert.Equal(t, []time.Duration{1900 * ms}, s.all(), "ran at another time than the latest call's due time")

		// Again, superseding after the early callback re-armed the timer.
		s.reset()
		tr.FireAfter(time.Second)
		time.Sleep(500 * ms)
		tr.FireAfter(time.Second) // due at 1.5s
		time.Sleep(700 * ms)      // 1.2s: the timer came early and was re-armed for 1.5s
		synctest.Wait()
		tr.FireAfter(time.Second) // due at 2.2s
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, []time.Duration{2200 * ms}, s.all())
		require.NoError(t, tr.Stop(context.Background()))
	})
}

func TestRetargetSoonerIsNotLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &starts{t0: time.Now()}
		tr := circulation.Bind(nil, s.f)
		tr.FireAfter(time.Hour)
		time.Sleep(100 * ms)
		tr.FireAfter(time.Second) // due at 1.1s, sooner than the timer
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, []time.Duration{1100 * ms}, s.all())

		// Sooner than a re-targeted arming whose timer comes sooner still.
		s.reset()
		tr.FireAfter(time.Second) // timer at 1s
		time.Sleep(100 * ms)
		tr.FireAfter(5 * time.Second) // due at 5.1s: re-targeted, timer kept at 1s
		time.Sleep(100 * ms)
		tr.FireAfter(2 * time.Second) // due at 2.2s
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Equal(t, []time.Duration{2200 * ms}, s.all())

		// Sooner than a re-targeted arming whose timer comes later.
		s.reset()
		tr.FireAfter(2 * time.Second) // timer at 2s
		time.Sleep(100 * ms)
		tr.FireAfter(3 * time.Second) // due at 3.1s, timer kept at 2s
		time.Sleep(100 * ms)
		tr.FireAfter(time.Second) // due at 1.2s: the timer is re-armed sooner
		time.Sleep(4 * time.Second)
		synctest.Wait()
		assert.Equal(t, []time.Duration{1200 * ms}, s.all())
		require.NoError(t, tr.Stop(context.Background()))
	})
}

func TestRetargetThenSuspend(t *testing.T) {
	for _, early := range []bool{false, true} {
		name := "BeforeTheTimer"
		if early {
			name = "AfterTheEarlyTimer"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &starts{t0: time.Now()}
				tr := circulation.Bind(nil, s.f)
				tr.FireAfter(time.Second)
				time.Sleep(500 * ms)
				tr.FireAfter(time.Second)
				if early {
					time.Sleep(700 * ms) // the timer came at 1s and was re-armed for 1.5s
					synctest.Wait()
				}
				tr.Suspend()
				time.Sleep(time.Hour)
				synctest.Wait()
				assert.Empty(t, s.all())

				// Stop returns at once: no timer is left pending.
				tr.FireAfter(time.Second)
				time.Sleep(500 * ms)
				tr.FireAfter(time.Second)
				if early {
					time.Sleep(700 * ms)
					synctest.Wait()
				}
				before := time.Now()
				require.NoError(t, tr.Stop(context.Background()))
				assert.Zero(t, time.Since(before), "Stop waited for a timer")
				time.Sleep(time.Hour)
				synctest.Wait()
				assert.Empty(t, s.all())
			})
		})
	}
}

// An arming re-targeted away counts as superseded once, with its own due
// time; the run reports the due time it was re-targeted to.
func TestRetargetObserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &trace{start: time.Now()}
		tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) { return 0, false },
			circulation.WithObserver(ev.observe))
		tr.FireAfter(time.Second)
		time.Sleep(500 * ms)
		tr.FireAfter(time.Second) // due at 1.5s
		assert.Equal(t, ev.at(1500*ms), tr.Next().Round(0))
		time.Sleep(700 * ms) // the timer came at 1s, early
		synctest.Wait()
		assert.Equal(t, ev.at(1500*ms), tr.Next().Round(0), "Next after the early timer")
		assert.Empty(t, ev.of(circulation.RunStarted))
		tr.FireAfter(time.Second) // due at 2.2s
		time.Sleep(2 * time.Second)
		synctest.Wait()

		sup := stripMono(ev.of(circulation.ArmingSuperseded))
		require.Len(t, sup, 2)
		assert.Equal(t, []time.Time{ev.at(time.Second), ev.at(1500 * ms)}, []time.Time{sup[0].Due, sup[1].Due})
		run := ev.of(circulation.RunStarted)
		require.Len(t, run, 1)
		assert.Equal(t, ev.at(2200*ms), run[0].Due.Round(0))
		assert.Equal(t, ev.at(2200*ms), run[0].Start.Round(0))
		assert.Equal(t, circulation.TriggerStats{Runs: 1, Fires: 3, Superseded: 2}, tr.Stats())

		// Suspend counts the re-targeted arming once.
		tr.FireAfter(time.Second)
		time.Sleep(500 * ms)
		tr.FireAfter(time.Second)
		time.Sleep(700 * ms)
		synctest.Wait()
		tr.Suspend()
		assert.Equal(t, circulation.TriggerStats{Runs: 1, Fires: 5, Superseded: 4}, tr.Stats())
		require.NoError(t, tr.Stop(context.Background()))
	})
}

// TestStressRetarget hammers one Trigger on the real clock from several
// goroutines with FireAfter of random delays, sooner and later than the
// pending arming, Fire and Suspend. No run starts before the due time of
// its arming (the observer reports both), no two runs overlap, and after
// the hammering a burst of FireAfter(d) leads to exactly one run, no
// sooner than d after the last of them.
func TestStressRetarget(t *testing.T) {
	var inflight, overlaps, early atomic.Int64
	var mu sync.Mutex
	var runStarts []time.Time
	tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) {
		if inflight.Add(1) > 1 {
			overlaps.Add(1)
		}
		mu.Lock()
		runStarts = append(runStarts, time.Now())
		mu.Unlock()
		spin(rand.IntN(2000))
		inflight.Add(-1)
		return 0, false
	}, circulation.WithObserver(func(ev circulation.TriggerEvent) {
		if ev.Kind == circulation.RunStarted && !ev.Due.IsZero() && ev.Start.Before(ev.Due) {
			early.Add(1)
		}
	}))
	deadline := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				spin(rand.IntN(2000))
				switch r := rand.IntN(10); {
				case r < 6:
					tr.FireAfter(time.Duration(rand.IntN(200)) * time.Microsecond)
				case r < 8:
					tr.FireAfter(time.Duration(rand.IntN(3)) * time.Millisecond)
				case r < 9:
					tr.Fire()
				default:
					tr.Suspend()
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, overlaps.Load(), "runs overlapped")
	require.Zero(t, early.Load(), "runs started before their due time")

	require.NoError(t, tr.Stop(context.Background()))
	mu.Lock()
	n := len(runStarts)
	mu.Unlock()
	require.NotZero(t, n)

	// A burst of re-targets: one run, d after the last call. A call that
	// came d or more after the one before it let that one run, which tells
	// nothing: the burst is tried again with a longer d.
	for d := 20 * time.Millisecond; ; d *= 2 {
		require.Less(t, d, 10*time.Second, "every burst had a call d or more after the one before it")
		var last, prev time.Time
		loose := false
		for i := range 50 {
			last = time.Now()
			tr.FireAfter(d)
			if i > 0 && time.Since(prev) >= d {
				loose = true
			}
			prev = last
			spin(rand.IntN(20000))
		}
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(runStarts) > n
		}, time.Minute, time.Millisecond, "the burst ran nothing")
		time.Sleep(2 * d)
		require.NoError(t, tr.Stop(context.Background()))
		mu.Lock()
		starts := runStarts[n:]
		n = len(runStarts)
		mu.Unlock()
		if loose {
			t.Logf("a call came %v or more after the one before it: again with %v", d, 2*d)
			continue
		}
		require.Len(t, starts, 1, "the burst ran more than once")
		assert.False(t, starts[0].Before(last.Add(d)), "the burst's run started %v after its last call, before its due time", starts[0].Sub(last))
		return
	}
}

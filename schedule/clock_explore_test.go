package schedule_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/schedule"
)

// The explorer drives one job on a Scheduler that calls back only when
// told, from one goroutine, with random SetSchedule, Pause, Resume and
// RunNow calls, sleeps, and callbacks delivered at their time, early,
// late, twice, or after their Stop; in half the seeds, Stop reports false
// at random and stops nothing (the callback still comes, as a Scheduler
// must); in a third, the job's store is a Sharer that owns the job or not,
// changing at random. After every step it checks the clock's promises:
//
//   - the job has at most one timer whose callback is still to come;
//   - on an honest Scheduler, a job with a next slot has one, due no later
//     than the slot (or than its hand-off, on a Sharer), and a job without
//     has none;
//   - no slot is claimed twice, and no slot's run starts before its Due;
//   - after Stop returns, no callback makes a claim, a record or a timer.

// claims is a MemoryStore that counts the claims of each Due.
type claims struct {
	*schedule.MemoryStore
	mu sync.Mutex
	n  map[time.Time]int
}

func (c *claims) Claim(ctx context.Context, r schedule.Record) error {
	c.mu.Lock()
	c.n[r.Due]++
	c.mu.Unlock()
	return c.MemoryStore.Claim(ctx, r)
}

func (c *claims) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.n {
		n += k
	}
	return n
}

// sharedClaims is claims as a Sharer whose Owns the explorer flips: a
// job another node owns defers its wake to the end of the slot's hand-off
// and holds the slot in its RunLimit, and the owner, here, never claims.
type sharedClaims struct {
	*claims
	owns atomic.Bool
}

func (c *sharedClaims) ClaimRun(ctx context.Context, r schedule.Record, cc schedule.Concurrency) (time.Time, error) {
	c.mu.Lock()
	c.n[r.Due]++
	c.mu.Unlock()
	return c.MemoryStore.ClaimRun(ctx, r, cc)
}

func (c *sharedClaims) Owns(string) bool { return c.owns.Load() }

func (c *sharedClaims) Claimed(ctx context.Context, rs []schedule.Record) ([]bool, error) {
	out := make([]bool, len(rs))
	for i, r := range rs {
		h, err := c.History(ctx, r.Job, 1<<20)
		if err != nil {
			return nil, err
		}
		for _, x := range h {
			out[i] = out[i] || x.Due.Equal(r.Due)
		}
	}
	return out, nil
}

// liar is held with a Stop that, when lie is set, reports false at random
// and stops nothing.
type liar struct {
	held
	lie bool
	r   *rand.Rand
}

type liarTimer struct {
	*heldTimer
	s *liar
}

func (s *liar) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return liarTimer{s.held.AfterFunc(d, f).(*heldTimer), s}
}

func (t liarTimer) Stop() bool {
	if t.s.lie && t.s.r.IntN(2) == 0 {
		return false
	}
	return t.heldTimer.Stop()
}

// pending returns the job's timers whose callback is still to come: not
// called back, and not stopped.
func (s *liar) pending(code uintptr) []*heldTimer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p []*heldTimer
	for _, t := range s.timers {
		if t.code == code && !t.stopped && !t.fired {
			p = append(p, t)
		}
	}
	return p
}

// exploreClock runs one seed in a bubble of its own and returns the first
// broken promise, or "".
func exploreClock(t *testing.T, seed uint64, steps int) (violation string) {
	synctest.Test(t, func(*testing.T) { violation = exploreBubble(seed, steps) })
	return violation
}

func exploreBubble(seed uint64, steps int) string {
	r := rand.New(rand.NewPCG(seed, 14))
	s := &liar{lie: seed%2 == 1, r: r}
	store := &claims{MemoryStore: schedule.NewMemoryStore(1 << 20), n: map[time.Time]int{}}
	var mu sync.Mutex
	var early []string
	var records int
	// In a third of the seeds the job's store is a Sharer, which owns the
	// job or not at random at each step: the job's timer may then be due
	// up to the hand-off (a quarter of the grace period) after the slot.
	var shared *sharedClaims
	opts := []schedule.Option{schedule.WithScheduler(s), schedule.WithStore(store)}
	handOff := time.Duration(0)
	if seed%3 == 2 {
		shared = &sharedClaims{claims: store}
		opts = []schedule.Option{schedule.WithScheduler(s), schedule.WithStore(shared), schedule.WithRunLimit(schedule.NewRunLimit(4))}
		handOff = time.Second / 4
	}
	j := schedule.NewJob("j", schedule.Every(time.Second), func(_ context.Context, run schedule.Run) error {
		if now := time.Now(); now.Before(run.Due) && run.Reason != schedule.Manual { // a Manual Due may be a nanosecond ahead
			mu.Lock()
			early = append(early, fmt.Sprintf("run of %s started at %s", since(run.Due), since(now)))
			mu.Unlock()
		}
		return nil
	}, append(opts, schedule.WithObserver(func(schedule.Record) {
		mu.Lock()
		records++
		mu.Unlock()
	}))...)
	if err := j.Start(context.Background()); err != nil {
		return err.Error()
	}
	code := s.all()[0].code // the job's timers; the others are its watch's
	var log []string
	check := func() string {
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(early) > 0 {
			return early[0]
		}
		store.mu.Lock()
		defer store.mu.Unlock()
		for due, n := range store.n {
			if n > 1 {
				return fmt.Sprintf("slot %s claimed %d times", since(due), n)
			}
		}
		p, next := s.pending(code), j.Next()
		switch {
		case len(p) > 1:
			return fmt.Sprintf("%d timers of the job pending", len(p))
		case s.lie:
		case next.IsZero() && len(p) > 0:
			return "a timer pending with no next slot"
		case !next.IsZero() && len(p) == 0:
			return fmt.Sprintf("no timer pending for the next slot %s", since(next))
		case !next.IsZero() && p[0].at.After(next.Add(handOff)) && p[0].d > 0: // a slot due by the arming: at once
			return fmt.Sprintf("the timer is due at %s, after the next slot %s", since(p[0].at), since(next))
		}
		return ""
	}
	deliver := func(all bool) {
		ts := s.all()
		if len(ts) == 0 {
			return
		}
		var t *heldTimer
		if all || r.IntN(2) == 0 {
			t = ts[r.IntN(len(ts))] // any: stale, stopped, called back before, early
			log = append(log, fmt.Sprintf("call #%d (due %s)", len(ts), since(t.at)))
		} else {
			for _, c := range ts { // a punctual one: pending and due
				if !c.stopped && !c.fired && !c.at.After(time.Now()) {
					t = c
					break
				}
			}
			if t == nil {
				return
			}
			log = append(log, fmt.Sprintf("call due %s", since(t.at)))
		}
		t.call()
	}
	for step := range steps {
		switch op := r.IntN(10); op {
		case 0:
			d := []time.Duration{700 * time.Millisecond, time.Second, 1500 * time.Millisecond}[r.IntN(3)]
			log = append(log, fmt.Sprint("SetSchedule ", d))
			j.SetSchedule(schedule.EveryFrom(t0, d))
		case 1:
			log = append(log, "Pause")
			j.Pause()
		case 2:
			log = append(log, "Resume")
			j.Resume()
		case 3:
			log = append(log, "RunNow")
			j.RunNow()
		case 4, 5:
			d := time.Duration(r.IntN(1500)) * time.Millisecond
			log = append(log, fmt.Sprint("sleep ", d))
			time.Sleep(d)
			if shared != nil {
				owns := r.IntN(2) == 0
				log = append(log, fmt.Sprint("owns ", owns))
				shared.owns.Store(owns)
			}
		default:
			deliver(false)
		}
		if v := check(); v != "" {
			return fmt.Sprintf("seed %d step %d at %s: %s, after %v", seed, step, since(time.Now()), v, log)
		}
	}
	// Stop, while callbacks that Stop failed to stop may still be due: they
	// come, in any order, with stale ones.
	stopped := make(chan error, 1)
	go func() { stopped <- j.Stop(context.Background()) }()
	synctest.Wait()
	for _, t := range s.all() {
		if !t.stopped && !t.fired {
			t.call()
		}
	}
	if err := <-stopped; err != nil {
		return err.Error()
	}
	mu.Lock()
	n, recs := store.total(), records
	mu.Unlock()
	for range 3 {
		deliver(true)
	}
	synctest.Wait()
	mu.Lock()
	defer mu.Unlock()
	switch {
	case store.total() != n || records != recs:
		return fmt.Sprintf("seed %d: a callback after Stop made a claim or a record", seed)
	case len(s.pending(code)) > 0:
		return fmt.Sprintf("seed %d: a timer pending after Stop", seed)
	}
	return ""
}

// TestClockExplore runs the explorer over 2000 seeds of 100 steps.
func TestClockExplore(t *testing.T) {
	for seed := range uint64(2000) {
		if v := exploreClock(t, seed, 100); v != "" {
			t.Fatal(v)
		}
	}
}

// Each mutant of the clock makes the explorer fail.
func TestClockExploreMutants(t *testing.T) {
	for name, m := range schedule.Mutants {
		t.Run(name, func(t *testing.T) {
			restore := schedule.SetMutant(m)
			defer restore()
			for seed := range uint64(2000) {
				if v := exploreClock(t, seed, 100); v != "" {
					t.Logf("found: %s", v)
					return
				}
			}
			t.Fatal("the explorer found nothing")
		})
	}
}

package circulation_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/circulation-go/circulation"
)

// events records AttemptEvents as lines, with times relative to t0.
type events struct {
	t0    time.Time
	mu    sync.Mutex
	lines []string
	in    atomic.Int32 // calls in progress
	most  atomic.Int32
}

func (e *events) notify(ev circulation.AttemptEvent) {
	if n := e.in.Add(1); n > e.most.Load() {
		e.most.Store(n)
	}
	defer e.in.Add(-1)
	next := "-"
	if ev.Scheduled {
		next = ev.Next.String()
	}
	e.mu.Lock()
	e.lines = append(e.lines, fmt.Sprintf("%v #%d start=%v dur=%v err=%v next=%s cf=%d",
		ev.Outcome, ev.Attempt, ev.Start.Sub(e.t0), ev.Duration, ev.Err, next, ev.ConsecutiveFailures))
	e.mu.Unlock()
}

func (e *events) want(t *testing.T, want ...string) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if got := strings.Join(e.lines, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if m := e.most.Load(); m > 1 {
		t.Fatalf("%d notifications overlapped", m)
	}
}

// Every outcome is reported once, as it happens, with its attempt, start,
// duration, error, the delay drawn for the next attempt and whether the
// schedule uses it.
func TestSupervisorNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		e := &events{t0: p.t0}
		errBroken := circulation.Permanent(errors.New("broken"))
		s := circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			switch n {
			case 1:
				time.Sleep(sec / 2)
				return nil
			case 2:
				return errFlaky
			case 3:
				panic("boom")
			case 4:
				time.Sleep(11 * sec) // ignores its context
				return nil
			case 5:
				return errBroken
			}
			<-ctx.Done()
			return ctx.Err()
		}), circulation.Backoff{Base: sec, Max: 8 * sec, Timeout: 2 * sec}, circulation.WithNotify(e.notify))
		s.Fire()
		p.at(30 * sec)
		s.Fire()
		p.at(31 * sec)
		s.Suspend()
		p.at(40 * sec)
		e.want(t,
			"success #1 start=0s dur=500ms err=<nil> next=1s cf=0",
			"error #2 start=1.5s dur=0s err=flaky next=2s cf=1",
			"panic #3 start=3.5s dur=0s err=circulation: task panicked: boom next=4s cf=2",
			"timeout #4 start=7.5s dur=2s err=context deadline exceeded next=8s cf=3",
			"skip #4 start=17.5s dur=0s err=<nil> next=8s cf=4",
			"late #4 start=7.5s dur=11s err=<nil> next=- cf=4",
			"permanent #5 start=25.5s dur=0s err=broken next=- cf=5",
			"canceled #6 start=30s dur=1s err=context canceled next=- cf=5",
		)
		p.wantStarts(t, 0, sec+sec/2, 3*sec+sec/2, 7*sec+sec/2, 25*sec+sec/2, 30*sec)
		stop(t, s)
	})
}

// A Fire made while the attempt runs supersedes the schedule: the event
// says the drawn delay is not used. f may call the Supervisor, and a slow f
// does not stretch the delay: the next attempt is due Next after the
// outcome, or when f returns if that is later.
func TestSupervisorNotifyCallsBackAndSlowNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe()
		e := &events{t0: p.t0}
		var s *circulation.Supervisor
		s = circulation.Supervise(p.task(func(ctx context.Context, n int) error {
			if n == 1 {
				s.FireAfter(5 * sec)
			}
			return nil
		}), circulation.Backoff{Base: 3 * sec, Max: 3 * sec}, circulation.WithNotify(func(ev circulation.AttemptEvent) {
			e.notify(ev)
			_ = s.Stats()
			if ev.Attempt == 2 {
				time.Sleep(sec) // shorter than the delay: no effect
			}
			if ev.Attempt == 3 {
				time.Sleep(4 * sec) // longer: the next attempt starts when f returns
			}
			if ev.Attempt == 4 {
				done, cancel := context.WithCancel(context.Background())
				cancel() // Close must not wait for f, its caller
				if err := s.Close(done); err != context.Canceled {
					t.Errorf("Close from f = %v", err)
				}
			}
		}))
		s.Fire()
		p.at(time.Minute)
		e.want(t,
			"success #1 start=0s dur=0s err=<nil> next=- cf=0",
			"success #2 start=5s dur=0s err=<nil> next=3s cf=0",
			"success #3 start=8s dur=0s err=<nil> next=3s cf=0",
			"success #4 start=12s dur=0s err=<nil> next=3s cf=0",
		)
		p.wantStarts(t, 0, 5*sec, 8*sec, 12*sec)
		stop(t, s)
	})
}

// Under -race, with timeouts, skips and late completions racing on two
// goroutines and Fire from outside, the notifications never overlap, and
// each attempt's events come in order.
func TestSupervisorNotifyNeverOverlaps(t *testing.T) {
	e := &events{t0: time.Now()}
	var mu sync.Mutex
	seen := map[uint64]circulation.Outcome{}
	var calls atomic.Int64
	s := circulation.Supervise(func(ctx context.Context) error {
		time.Sleep(time.Duration(calls.Add(1)%3) * 50 * time.Microsecond)
		return errFlaky
	}, circulation.Backoff{Base: 10 * time.Microsecond, Max: 100 * time.Microsecond, Timeout: 50 * time.Microsecond},
		circulation.WithNotify(func(ev circulation.AttemptEvent) {
			e.notify(ev)
			mu.Lock()
			defer mu.Unlock()
			if prev, ok := seen[ev.Attempt]; ok && prev == circulation.AttemptLate {
				t.Errorf("attempt %d: %v after late", ev.Attempt, ev.Outcome)
			}
			seen[ev.Attempt] = ev.Outcome
		}))
	s.Fire()
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		s.Fire()
		time.Sleep(100 * time.Microsecond)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := e.most.Load(); m > 1 {
		t.Fatalf("%d notifications overlapped", m)
	}
	if len(e.lines) == 0 {
		t.Fatal("no events")
	}
}

func TestOutcomeString(t *testing.T) {
	var names []string
	for o := circulation.AttemptSucceeded; o <= circulation.AttemptCanceled+1; o++ {
		names = append(names, o.String())
	}
	names = append(names, circulation.Outcome(0).String())
	if got := strings.Join(names, " "); got != "success error panic timeout skip late permanent canceled Outcome(9) Outcome(0)" {
		t.Fatal(got)
	}
}

package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/schedule"
)

// t0 is the start of every synctest bubble: midnight UTC, a slot of every
// Every schedule used here.
var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Local()

// at is t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// since formats a time as its offset from t0.
func since(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Sub(t0).String()
}

// journal records what a job did: each start and end of its Func, and
// each Record the Observer received, and counts the runs in flight.
type journal struct {
	mu      sync.Mutex
	events  []string
	records []schedule.Record
	running int
	maxRun  int
}

// observe is an Observer.
func (l *journal) observe(r schedule.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r)
}

// work returns a Func that logs its start, works for d or until its
// context is done, and logs its end.
func (l *journal) work(d time.Duration) schedule.Func {
	return func(ctx context.Context, r schedule.Run) error {
		l.mu.Lock()
		l.running++
		l.maxRun = max(l.maxRun, l.running)
		l.events = append(l.events, fmt.Sprintf("%s start %s due %s", since(time.Now()), r.Reason, since(r.Due)))
		l.mu.Unlock()
		var err error
		select {
		case <-time.After(d):
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
		l.mu.Lock()
		l.running--
		l.events = append(l.events, fmt.Sprintf("%s end due %s", since(time.Now()), since(r.Due)))
		l.mu.Unlock()
		return err
	}
}

// runs returns the start events.
func (l *journal) starts() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s []string
	for _, e := range l.events {
		if strings.Contains(e, " start ") {
			s = append(s, e)
		}
	}
	return s
}

// summary returns the records as "due status reason" lines, sorted by the
// order the Observer got them.
func (l *journal) summary() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s []string
	for _, r := range l.records {
		line := fmt.Sprintf("%s %s %s", since(r.Due), r.Status, r.Reason)
		if r.Status != schedule.Missed && r.Status != schedule.Skipped {
			line += fmt.Sprintf(" %s-%s", since(r.Start), since(r.End))
		}
		s = append(s, line)
	}
	return s
}

func (l *journal) recs() []schedule.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records)
}

// stop stops j and fails t if that fails.
func stop(t *testing.T, j *schedule.Job) {
	t.Helper()
	if err := j.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func start(t *testing.T, j *schedule.Job) {
	t.Helper()
	if err := j.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// flakyStore is a MemoryStore whose calls fail while down is set.
type flakyStore struct {
	*schedule.MemoryStore
	mu   sync.Mutex
	down bool
	n    int // calls that failed
}

var errDown = errors.New("connection refused")

func (s *flakyStore) fail() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		s.n++
		return errDown
	}
	return nil
}

func (s *flakyStore) setDown(d bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = d
}

func (s *flakyStore) Claim(ctx context.Context, r schedule.Record) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.MemoryStore.Claim(ctx, r)
}

func (s *flakyStore) ClaimRun(ctx context.Context, r schedule.Record, c schedule.Concurrency) (time.Time, error) {
	if err := s.fail(); err != nil {
		return time.Time{}, err
	}
	return s.MemoryStore.ClaimRun(ctx, r, c)
}

// Finish fails while the store is down, as a write whose reply is lost
// after its commit does: the outcome is recorded, and the claim no longer
// counts as a run in flight (a MemoryStore's claims never expire).
func (s *flakyStore) Finish(ctx context.Context, r schedule.Record) error {
	if err := s.fail(); err != nil {
		_ = s.MemoryStore.Finish(ctx, r)
		return err
	}
	return s.MemoryStore.Finish(ctx, r)
}

func (s *flakyStore) Last(ctx context.Context, job string) (schedule.Record, error) {
	if err := s.fail(); err != nil {
		return schedule.Record{}, err
	}
	return s.MemoryStore.Last(ctx, job)
}

// countingScheduler is the runtime's Scheduler that counts the timers
// pending.
type countingScheduler struct {
	mu      sync.Mutex
	pending int
}

type countedTimer struct {
	s    *countingScheduler
	t    *time.Timer
	once sync.Once
}

func (c *countedTimer) done() { c.once.Do(func() { c.s.mu.Lock(); c.s.pending--; c.s.mu.Unlock() }) }

func (c *countedTimer) Stop() bool {
	ok := c.t.Stop()
	if ok {
		c.done()
	}
	return ok
}

func (s *countingScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	s.mu.Lock()
	s.pending++
	s.mu.Unlock()
	c := &countedTimer{s: s}
	c.t = time.AfterFunc(d, func() { c.done(); f() })
	return c
}

func (s *countingScheduler) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending
}

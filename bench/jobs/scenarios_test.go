package jobs

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"

	"github.com/circulation-go/circulation/schedule"
)

// u is the scenarios' time unit, the reports' second: they run on
// synctest's fake clock, which needs no scaling down.
const u = time.Second

// A scenario replays one overlap bug reported against gocron, on a
// library: it reports whether the library did what the reporter expected,
// and what it saw.
type scenario struct {
	issue, expect string
	gocron        func() (bool, string)
	schedule      func() (bool, string) // nil: the package offers no such policy
	// alone says the scenario counts goroutines, so it runs after the
	// others, not beside them.
	alone bool
}

// starts records when a Func started, and how many runs were in flight.
type starts struct {
	mu       sync.Mutex
	at       []time.Duration
	inFlight int
	most     int
	begin    time.Time
}

func (s *starts) enter() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, time.Since(s.begin))
	s.inFlight++
	s.most = max(s.most, s.inFlight)
}

func (s *starts) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
}

func (s *starts) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at)
}

func (s *starts) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, d := range s.at {
		fmt.Fprintf(&b, " %.1fu", float64(d)/float64(u))
	}
	return fmt.Sprintf("%d runs at%s, at most %d at once", len(s.at), b.String(), s.most)
}

// task returns a Func-like body that runs for d(i) on its i-th run.
func (s *starts) task(d func(i int) time.Duration) func(ctx context.Context) {
	var n atomic.Int32
	return func(ctx context.Context) {
		s.enter()
		defer s.leave()
		select {
		case <-time.After(d(int(n.Add(1)))):
		case <-ctx.Done():
		}
	}
}

func newGocron(t testing.TB, opts ...gocron.SchedulerOption) gocron.Scheduler {
	s, err := gocron.NewScheduler(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func job(name string, s schedule.Schedule, body func(context.Context), opts ...schedule.Option) *schedule.Job {
	j := schedule.NewJob(name, s, func(ctx context.Context, r schedule.Run) error { body(ctx); return nil }, opts...)
	if err := j.Start(context.Background()); err != nil {
		panic(err)
	}
	return j
}

func scenarios(t testing.TB) []scenario {
	return []scenario{{
		issue:  "#683",
		expect: "a singleton job whose run overstays its slot keeps running at later slots (LimitModeReschedule; OverlapSkip)",
		gocron: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			body := s.task(func(i int) time.Duration { return map[bool]time.Duration{true: 5 * u / 2, false: u / 4}[i == 1] })
			g := newGocron(t)
			_, _ = g.NewJob(gocron.DurationJob(u), gocron.NewTask(body), gocron.WithSingletonMode(gocron.LimitModeReschedule))
			g.Start()
			time.Sleep(12 * u)
			_ = g.Shutdown()
			return s.n() >= 6 && s.most == 1, s.String()
		},
		schedule: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			body := s.task(func(i int) time.Duration { return map[bool]time.Duration{true: 5 * u / 2, false: u / 4}[i == 1] })
			j := job("683", schedule.EveryFrom(s.begin, u), body)
			time.Sleep(12 * u)
			_ = j.Stop(context.Background())
			return s.n() >= 6 && s.most == 1, s.String()
		},
	}, {
		issue:  "#439",
		expect: "a singleton job whose runs block does not pile up goroutines while its slots fall due (SingletonMode; OverlapSkip)",
		gocron: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			base := goroutinesOf(gocronPkg)
			g := newGocron(t)
			_, _ = g.NewJob(gocron.DurationJob(u/4), gocron.NewTask(s.task(func(int) time.Duration { return 10 * u })),
				gocron.WithSingletonMode(gocron.LimitModeReschedule))
			g.Start()
			time.Sleep(8 * u)
			grown := goroutinesOf(gocronPkg) - base
			_ = g.Shutdown()
			return grown <= 8, fmt.Sprintf("%d goroutines more after 32 slots; %v", grown, &s)
		},
		schedule: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			base := goroutinesOf(schedulePkgs...)
			j := job("439", schedule.EveryFrom(s.begin, u/4), s.task(func(int) time.Duration { return 10 * u }))
			time.Sleep(8 * u)
			grown := goroutinesOf(schedulePkgs...) - base
			_ = j.Stop(context.Background())
			return grown <= 8, fmt.Sprintf("%d goroutines more after 32 slots; %v", grown, &s)
		},
		alone: true,
	}, {
		issue:  "#442",
		expect: "with runs longer than the interval, the runs the library reports are the runs that happened (singleton; Observer)",
		gocron: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			var reported atomic.Int32
			g := newGocron(t)
			_, _ = g.NewJob(gocron.DurationJob(u), gocron.NewTask(s.task(func(int) time.Duration { return 3 * u / 2 })),
				gocron.WithSingletonMode(gocron.LimitModeReschedule),
				gocron.WithEventListeners(gocron.AfterJobRuns(func(uuid.UUID, string) { reported.Add(1) })))
			g.Start()
			time.Sleep(10 * u)
			_ = g.Shutdown()
			time.Sleep(u)
			return int(reported.Load()) == s.n(), fmt.Sprintf("%d reported, %v", reported.Load(), &s)
		},
		schedule: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			var reported atomic.Int32
			j := job("442", schedule.EveryFrom(s.begin, u), s.task(func(int) time.Duration { return 3 * u / 2 }),
				schedule.WithObserver(func(r schedule.Record) {
					if r.Status != schedule.Skipped && r.Status != schedule.Missed {
						reported.Add(1)
					}
				}))
			time.Sleep(10 * u)
			_ = j.Stop(context.Background())
			return int(reported.Load()) == s.n(), fmt.Sprintf("%d reported, %v", reported.Load(), &s)
		},
	}, {
		issue:  "#601",
		expect: "a singleton job never runs twice for one slot, nor two runs at once",
		gocron: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			g := newGocron(t)
			_, _ = g.NewJob(gocron.DurationJob(u), gocron.NewTask(s.task(func(int) time.Duration { return u / 10 })),
				gocron.WithSingletonMode(gocron.LimitModeReschedule))
			g.Start()
			time.Sleep(10 * u)
			_ = g.Shutdown()
			return s.most == 1 && !twice(&s), s.String()
		},
		schedule: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			j := job("601", schedule.EveryFrom(s.begin, u), s.task(func(int) time.Duration { return u / 10 }))
			time.Sleep(10 * u)
			_ = j.Stop(context.Background())
			return s.most == 1 && !twice(&s), s.String()
		},
	}, {
		issue:  "#676",
		expect: "a singleton job in wait mode queues every overlapping slot and runs all six, late (LimitModeWait; OverlapBufferAll)",
		gocron: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			g := newGocron(t, gocron.WithLimitConcurrentJobs(1, gocron.LimitModeWait))
			times := []time.Time{}
			for i := range 6 {
				times = append(times, s.begin.Add(time.Duration(i+1)*u))
			}
			_, _ = g.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartDateTimes(times...)),
				gocron.NewTask(s.task(func(int) time.Duration { return 3 * u / 2 })), gocron.WithSingletonMode(gocron.LimitModeWait))
			g.Start()
			time.Sleep(12 * u)
			_ = g.Shutdown()
			return s.n() == 6 && s.most == 1, s.String()
		},
		schedule: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			times := []time.Time{}
			for i := range 6 {
				times = append(times, s.begin.Add(time.Duration(i+1)*u))
			}
			j := job("676", schedule.At(times...), s.task(func(int) time.Duration { return 3 * u / 2 }),
				schedule.WithOverlap(schedule.OverlapBufferAll))
			time.Sleep(12 * u)
			_ = j.Stop(context.Background())
			return s.n() == 6 && s.most == 1, s.String()
		},
	}, {
		issue:  "#773",
		expect: "a one-time job at 3, 6 and 15 whose runs take 10, in wait mode, runs all three (LimitModeWait; OverlapBufferOne)",
		gocron: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			g := newGocron(t, gocron.WithLimitConcurrentJobs(10, gocron.LimitModeWait))
			g.Start()
			_, _ = g.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartDateTimes(s.begin.Add(3*u), s.begin.Add(6*u), s.begin.Add(15*u))),
				gocron.NewTask(s.task(func(int) time.Duration { return 10 * u })), gocron.WithSingletonMode(gocron.LimitModeWait))
			time.Sleep(36 * u)
			_ = g.Shutdown()
			return s.n() == 3 && s.most == 1, s.String()
		},
		schedule: func() (bool, string) {
			var s starts
			s.begin = time.Now()
			j := job("773", schedule.At(s.begin.Add(3*u), s.begin.Add(6*u), s.begin.Add(15*u)),
				s.task(func(int) time.Duration { return 10 * u }), schedule.WithOverlap(schedule.OverlapBufferOne))
			time.Sleep(36 * u)
			_ = j.Stop(context.Background())
			return s.n() == 3 && s.most == 1, s.String()
		},
	}}
}

// The import paths by which goroutinesOf tells each library's goroutines.
const gocronPkg = "github.com/go-co-op/gocron/v2."

var schedulePkgs = []string{
	"github.com/circulation-go/circulation.",
	"github.com/circulation-go/circulation/schedule.",
}

// goroutinesOf counts the goroutines with a function of one of pkgs on
// their stack. Unlike runtime.NumGoroutine it leaves out the test's own
// goroutines and the other library's, whose shutdown may still be under way.
func goroutinesOf(pkgs ...string) int {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, p := range pkgs {
			if strings.Contains(g, p) {
				count++
				break
			}
		}
	}
	return count
}

// twice reports whether two runs started within half a unit of each
// other: two runs of one slot.
func twice(s *starts) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := append([]time.Duration(nil), s.at...)
	sort.Slice(at, func(i, k int) bool { return at[i] < at[k] })
	for i := 1; i < len(at); i++ {
		if at[i]-at[i-1] < u/2 {
			return true
		}
	}
	return false
}

// TestGocronOverlapScenarios replays each scenario on gocron v2 and on
// package schedule, in parallel but for those that count goroutines, and
// logs a table of who did what the reporter expected. It fails only if
// package schedule gets one wrong: gocron's answers are measured, not
// asserted.
func TestGocronOverlapScenarios(t *testing.T) {
	var mu sync.Mutex
	rights := map[string]int{}
	run := func(t *testing.T, sc scenario) {
		var ok bool
		var saw string
		synctest.Test(t, func(*testing.T) { ok, saw = sc.gocron() })
		t.Logf("gocron v2   %-5v %s", ok, saw)
		mu.Lock()
		if ok {
			rights["gocron"]++
		}
		mu.Unlock()
		if sc.schedule == nil {
			t.Logf("schedule    n/a   %s: no such policy", sc.expect)
			return
		}
		synctest.Test(t, func(*testing.T) { ok, saw = sc.schedule() })
		t.Logf("schedule    %-5v %s", ok, saw)
		if !ok {
			t.Errorf("%s: %s; saw %s", sc.issue, sc.expect, saw)
		}
		mu.Lock()
		if ok {
			rights["schedule"]++
		}
		mu.Unlock()
	}
	t.Run("group", func(t *testing.T) {
		for _, sc := range scenarios(t) {
			if sc.alone {
				continue
			}
			t.Run(sc.issue, func(t *testing.T) {
				t.Parallel()
				run(t, sc)
			})
		}
	})
	for _, sc := range scenarios(t) {
		if sc.alone {
			t.Run(sc.issue, func(t *testing.T) { run(t, sc) })
		}
	}
	t.Logf("of 6 scenarios right: gocron v2 %d, schedule %d", rights["gocron"], rights["schedule"])
}

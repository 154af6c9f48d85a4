package schedule_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// tracer records what the hooks of its Trace are told, one line each, and
// the Records of RunEnd and NotRun in the order they came.
type tracer struct {
	mu      sync.Mutex
	lines   []string
	records []schedule.Record
}

type traceKey struct{}

// quiet keeps the lines of WithLogger out of the test's output.
var quiet = schedule.WithLogger(slog.New(slog.DiscardHandler))

func (tr *tracer) add(format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.lines = append(tr.lines, fmt.Sprintf(format, args...))
}

func (tr *tracer) got() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.lines...)
}

func (tr *tracer) recs() []schedule.Record {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]schedule.Record(nil), tr.records...)
}

// trace returns a Trace whose every hook records a line. RunStart gives
// the run a context with a value naming the attempt, which RunEnd checks
// it gets back.
func (tr *tracer) trace() *schedule.Trace {
	return &schedule.Trace{
		RunStart: func(ctx context.Context, rec schedule.Record) context.Context {
			tr.add("%s start %s due %s attempt %d %s started %s by %s", since(time.Now()), rec.Job, since(rec.Due), rec.Attempt,
				rec.Status, since(rec.Start), rec.Node)
			return context.WithValue(ctx, traceKey{}, fmt.Sprintf("%s@%s#%d", rec.Job, since(rec.Due), rec.Attempt))
		},
		RunEnd: func(ctx context.Context, rec schedule.Record) {
			tr.add("%s end %s due %s attempt %d %s %q ctx %v", since(time.Now()), rec.Job, since(rec.Due), rec.Attempt,
				rec.Status, rec.Err, ctx.Value(traceKey{}))
			tr.mu.Lock()
			tr.records = append(tr.records, rec)
			tr.mu.Unlock()
		},
		NotRun: func(rec schedule.Record) {
			tr.add("%s notrun %s due %s %s", since(time.Now()), rec.Job, since(rec.Due), rec.Status)
			tr.mu.Lock()
			tr.records = append(tr.records, rec)
			tr.mu.Unlock()
		},
		ClaimLost: func(r schedule.Run) {
			tr.add("%s lost %s due %s", since(time.Now()), r.Job, since(r.Due))
		},
		TakeOver: func(rec schedule.Record) {
			tr.add("%s takeover %s due %s attempt %d by %s", since(time.Now()), rec.Job, since(rec.Due), rec.Attempt, rec.Node)
		},
		LeaseLost: func(rec schedule.Record, err error) {
			tr.add("%s leaselost %s due %s attempt %d: %v", since(time.Now()), rec.Job, since(rec.Due), rec.Attempt, err)
		},
		StoreFailed: func(job string, err error) {
			tr.add("%s storefailed %s: %v", since(time.Now()), job, err)
		},
	}
}

// A Trace hears of each attempt as it starts and ends, the Func and RunEnd
// running under the context RunStart gave, and of each slot that did not
// run, beside the Observer, which gets the same Records after it.
func TestTraceRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr tracer
		var l journal
		var funcCtx []any
		var mu sync.Mutex
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(ctx context.Context, r schedule.Run) error {
			mu.Lock()
			funcCtx = append(funcCtx, ctx.Value(traceKey{}))
			mu.Unlock()
			switch {
			case r.Due.Equal(at(time.Minute)) && r.Attempt == 1:
				time.Sleep(time.Second)
				return assert.AnError
			case r.Due.Equal(at(2 * time.Minute)):
				time.Sleep(90 * time.Second) // the slot of 3m is Skipped
			}
			return nil
		}, schedule.WithRetry(2, 10*time.Second), schedule.WithNode("n"), schedule.WithTimeout(time.Hour),
			schedule.WithObserver(l.observe), schedule.WithTrace(tr.trace()))
		start(t, j)
		time.Sleep(4*time.Minute + 30*time.Second)
		stop(t, j)
		assert.Equal(t, []string{
			"1m0s start j due 1m0s attempt 1 Running started 1m0s by n",
			`1m1s end j due 1m0s attempt 1 Failed "assert.AnError general error for testing" ctx j@1m0s#1`,
			"1m11s start j due 1m0s attempt 2 Running started 1m11s by n",
			`1m11s end j due 1m0s attempt 2 Succeeded "" ctx j@1m0s#2`,
			"2m0s start j due 2m0s attempt 1 Running started 2m0s by n",
			"3m0s notrun j due 3m0s Skipped",
			`3m30s end j due 2m0s attempt 1 Succeeded "" ctx j@2m0s#1`,
			"4m0s start j due 4m0s attempt 1 Running started 4m0s by n",
			`4m0s end j due 4m0s attempt 1 Succeeded "" ctx j@4m0s#1`,
		}, tr.got())
		assert.Equal(t, []any{"j@1m0s#1", "j@1m0s#2", "j@2m0s#1", "j@4m0s#1"}, funcCtx, "the Func runs under RunStart's context")
		assert.Equal(t, l.recs(), tr.recs(), "the Observer gets what the Trace gets")
	})
}

// The Jobs made with a Preset share its Trace; a Trace with nil hooks
// costs them nothing but the checks.
func TestTracePreset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr tracer
		p := schedule.Preset(schedule.WithTrace(tr.trace()), schedule.WithNode("n"))
		f := func(context.Context, schedule.Run) error { return nil }
		a := schedule.NewJob("a", schedule.Every(time.Minute), f, p)
		b := schedule.NewJob("b", schedule.Every(time.Minute), f, p)
		empty := schedule.NewJob("c", schedule.Every(time.Minute), f, schedule.WithTrace(&schedule.Trace{}))
		for _, j := range []*schedule.Job{a, b, empty} {
			start(t, j)
		}
		time.Sleep(90 * time.Second)
		for _, j := range []*schedule.Job{a, b, empty} {
			stop(t, j)
		}
		got := tr.got()
		assert.ElementsMatch(t, []string{
			"1m0s start a due 1m0s attempt 1 Running started 1m0s by n",
			`1m0s end a due 1m0s attempt 1 Succeeded "" ctx a@1m0s#1`,
			"1m0s start b due 1m0s attempt 1 Running started 1m0s by n",
			`1m0s end b due 1m0s attempt 1 Succeeded "" ctx b@1m0s#1`,
		}, got)
	})
}

// Two Jobs of one name on a Store that is not shared race for each slot:
// the one that loses hears of it through ClaimLost.
func TestTraceClaimLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr tracer
		store := struct{ schedule.Store }{schedule.NewMemoryStore(10)} // not a SharedStore
		f := func(context.Context, schedule.Run) error { return nil }
		var jobs []*schedule.Job
		for _, node := range []string{"a", "b"} {
			j := schedule.NewJob("j", schedule.Every(time.Minute), f, schedule.WithStore(store), schedule.WithNode(node),
				schedule.WithTrace(tr.trace()))
			start(t, j)
			jobs = append(jobs, j)
		}
		time.Sleep(3*time.Minute + 30*time.Second)
		for _, j := range jobs {
			stop(t, j)
		}
		lost, ends := 0, 0
		for _, l := range tr.got() {
			var at, job, due string
			if n, _ := fmt.Sscanf(l, "%s lost %s due %s", &at, &job, &due); n == 3 {
				lost++
			}
			if n, _ := fmt.Sscanf(l, "%s end %s due %s", &at, &job, &due); n == 3 {
				ends++
			}
		}
		assert.Equal(t, 3, lost, "one claim lost for each slot: %q", tr.got())
		assert.Equal(t, 3, ends, "one run for each slot: %q", tr.got())
	})
}

// A claim taken over from a dead node reaches TakeOver before its run
// starts, as the "claim taken over" line is logged.
func TestTraceTakeOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr tracer
		store := newLeaseStore(9 * time.Second)
		dead := schedule.Record{Job: "j", Due: at(-time.Minute), Status: schedule.Running, Node: "dead", Attempt: 1}
		require.NoError(t, store.Claim(context.Background(), dead))
		j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithTrace(tr.trace()), quiet)
		time.Sleep(5 * time.Second)
		start(t, j)
		time.Sleep(30 * time.Second)
		stop(t, j)
		got := tr.got()
		require.GreaterOrEqual(t, len(got), 3, "%q", got) // then the slot of 0s, caught up
		assert.Regexp(t, `^\S+ takeover j due -1m0s attempt 2 by n$`, got[0])
		assert.Regexp(t, `^\S+ start j due -1m0s attempt 2 Running started \S+ by n$`, got[1])
		assert.Regexp(t, `^\S+ end j due -1m0s attempt 2 Succeeded "" ctx j@-1m0s#2$`, got[2])
	})
}

// A run whose lease could not be renewed reaches LeaseLost with the cause,
// and ends Canceled.
func TestTraceLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr tracer
		var l journal
		store := newLeaseStore(9 * time.Second)
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(time.Minute),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithTrace(tr.trace()), quiet)
		start(t, j)
		time.Sleep(67 * time.Second)
		store.mu.Lock()
		store.renewDown = true
		store.mu.Unlock()
		time.Sleep(9 * time.Second)
		stop(t, j)
		got := tr.got()
		require.Len(t, got, 3)
		assert.Equal(t, "1m0s start j due 1m0s attempt 1 Running started 1m0s by n", got[0])
		// The run's end and LeaseLost come in either order: the run is
		// cancelled first.
		assert.ElementsMatch(t, []string{
			"1m15s leaselost j due 1m0s attempt 1: schedule: lease could not be renewed for 9s: connection refused",
			`1m15s end j due 1m0s attempt 1 Canceled "schedule: lease could not be renewed for 9s: connection refused" ctx j@1m0s#1`,
		}, got[1:])
	})
}

// Each claim that fails with a store error reaches StoreFailed; the slots whose claims failed reach NotRun Skipped.
func TestTraceStoreFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr tracer
		store := &flakyStore{MemoryStore: schedule.NewMemoryStore(10)}
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(store), schedule.WithClaimRetry(0), schedule.WithMisfire(schedule.MisfireSkip),
			schedule.WithTrace(tr.trace()), quiet)
		start(t, j)
		store.setDown(true)
		time.Sleep(2*time.Minute + 30*time.Second)
		store.setDown(false)
		stop(t, j)
		assert.Equal(t, []string{
			"1m0s storefailed j: connection refused",
			"1m0s notrun j due 1m0s Skipped",
			"2m0s storefailed j: connection refused",
			"2m0s notrun j due 2m0s Skipped",
		}, tr.got())
	})
}

// A Func that calls runtime.Goexit leaves its run without an outcome: the
// Trace's RunEnd still gets one, Failed, so that every RunStart has its
// RunEnd.
func TestTraceGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr tracer
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error {
			runtime.Goexit()
			return nil
		}, schedule.WithNode("n"), schedule.WithTrace(tr.trace()))
		start(t, j)
		time.Sleep(90 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{
			"1m0s start j due 1m0s attempt 1 Running started 1m0s by n",
			`1m0s end j due 1m0s attempt 1 Failed "schedule: the Func called runtime.Goexit" ctx j@1m0s#1`,
		}, tr.got())
	})
}

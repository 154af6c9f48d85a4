package schedule_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// logLine is a line a logRecorder recorded: its level, message and
// attributes, each as its Value's Any.
type logLine struct {
	Level slog.Level
	Msg   string
	Attrs map[string]any
}

// logRecorder is a slog.Handler that records every line, at every level.
type logRecorder struct {
	mu    sync.Mutex
	lines []logLine
}

func (*logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l := logLine{Level: r.Level, Msg: r.Message, Attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool {
		l.Attrs[a.Key] = a.Value.Resolve().Any()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, l)
	return nil
}

func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// got returns the lines recorded so far.
func (h *logRecorder) got() []logLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]logLine(nil), h.lines...)
}

// A claim taken over from a dead node logs one Warn, naming the run and
// the node that took it over.
func TestLogTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		var h logRecorder
		store := newLeaseStore(9 * time.Second)
		dead := schedule.Record{Job: "j", Due: at(-time.Minute), Status: schedule.Running, Node: "dead", Attempt: 1}
		require.NoError(t, store.Claim(context.Background(), dead))
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Second),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithObserver(l.observe),
			schedule.WithLogger(slog.New(&h)))
		time.Sleep(5 * time.Second)
		start(t, j)
		time.Sleep(30 * time.Second)
		stop(t, j)
		assert.Equal(t, []logLine{{Level: slog.LevelWarn, Msg: "schedule: claim taken over",
			Attrs: map[string]any{"job": "j", "due": at(-time.Minute), "node": "n", "attempt": int64(2)}}}, h.got())
	})
}

// A store whose claims fail for 30s under 1,000 jobs logs two lines, as
// the outage starts and as it ends, with the count of the claims that
// failed meanwhile, and not one per job or per claim. A second outage
// soon after is counted, not logged.
func TestLogOutageOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h logRecorder
		store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(10)}
		p := schedule.Preset(schedule.WithStore(store), schedule.WithClaimRetry(0), schedule.WithNode("n"),
			schedule.WithLogger(slog.New(&h)))
		f := func(context.Context, schedule.Run) error { return nil }
		jobs := make([]*schedule.Job, 1000)
		for i := range jobs {
			jobs[i] = schedule.NewJob("j"+strconv.Itoa(i), schedule.Every(10*time.Second), f, p)
			start(t, jobs[i])
		}
		time.Sleep(15 * time.Second)
		store.set(func(s *scriptedStore) { s.claimsDown = true })
		time.Sleep(30 * time.Second) // 45s: the claims of 20s, 30s and 40s failed
		store.set(func(s *scriptedStore) { s.claimsDown = false })
		time.Sleep(10 * time.Second) // 55s
		lines := h.got()
		require.Len(t, lines, 2)
		assert.Equal(t, slog.LevelError, lines[0].Level)
		assert.Equal(t, "schedule: store unreachable", lines[0].Msg)
		assert.Equal(t, "connection refused", lines[0].Attrs["err"])
		assert.Equal(t, "n", lines[0].Attrs["node"])
		assert.Contains(t, lines[0].Attrs["job"], "j")
		assert.Equal(t, logLine{Level: slog.LevelWarn, Msg: "schedule: store reachable again",
			Attrs: map[string]any{"store": "*schedule_test.scriptedStore", "node": "n", "failed": int64(3000), "took": 30 * time.Second}}, lines[1])

		store.set(func(s *scriptedStore) { s.claimsDown = true })
		time.Sleep(10 * time.Second) // 65s: the claims of 1m0s failed
		store.set(func(s *scriptedStore) { s.claimsDown = false })
		time.Sleep(10 * time.Second) // 75s
		for _, j := range jobs {
			stop(t, j)
		}
		assert.Len(t, h.got(), 2, "an outage within a minute of the last is not logged")
	})
}

// A job that pauses itself after its failures logs it once.
func TestLogPausedAfterFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h logRecorder
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error {
			return assert.AnError
		}, schedule.WithPauseOnFailures(2, nil), schedule.WithNode("n"), schedule.WithLogger(slog.New(&h)))
		start(t, j)
		time.Sleep(5 * time.Minute)
		stop(t, j)
		assert.Equal(t, []logLine{{Level: slog.LevelWarn, Msg: "schedule: job paused after failures",
			Attrs: map[string]any{"job": "j", "due": at(2 * time.Minute), "node": "n", "failed": int64(2)}}}, h.got())
	})
}

// A run whose lease could not be renewed logs it once.
func TestLogLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		var h logRecorder
		store := newLeaseStore(9 * time.Second)
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(time.Minute),
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithLogger(slog.New(&h)))
		start(t, j)
		time.Sleep(67 * time.Second)
		store.mu.Lock()
		store.renewDown = true
		store.mu.Unlock()
		time.Sleep(9 * time.Second)
		stop(t, j)
		assert.Equal(t, []logLine{{Level: slog.LevelWarn, Msg: "schedule: lease lost",
			Attrs: map[string]any{"job": "j", "due": at(time.Minute), "node": "n", "attempt": int64(1),
				"err": "schedule: lease could not be renewed for 9s: connection refused"}}}, h.got())
	})
}

// By default, the jobs log to slog.Default(), and nothing while all goes
// well: runs on their own memory, on a MemoryStore, and on a store with
// leases log no line. (Not parallel: the default logger is the process's.)
func TestLogDefaultSilentOnSuccess(t *testing.T) {
	var h logRecorder
	old := slog.Default()
	slog.SetDefault(slog.New(&h))
	defer slog.SetDefault(old)
	synctest.Test(t, func(t *testing.T) {
		f := func(context.Context, schedule.Run) error { return nil }
		jobs := []*schedule.Job{
			schedule.NewJob("own", schedule.Every(time.Minute), f),
			schedule.NewJob("memory", schedule.Every(time.Minute), f, schedule.WithStore(schedule.NewMemoryStore(10))),
			schedule.NewJob("lease", schedule.Every(time.Minute), f, schedule.WithStore(newLeaseStore(9*time.Second))),
		}
		for _, j := range jobs {
			start(t, j)
		}
		time.Sleep(5 * time.Minute)
		for _, j := range jobs {
			stop(t, j)
		}
	})
	assert.Empty(t, h.got())

	// A failure reaches the default logger.
	synctest.Test(t, func(t *testing.T) {
		store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(10)}
		store.set(func(s *scriptedStore) { s.claimsDown = true })
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(store), schedule.WithClaimRetry(0))
		start(t, j)
		time.Sleep(90 * time.Second)
		stop(t, j)
	})
	lines := h.got()
	require.Len(t, lines, 1)
	assert.Equal(t, "schedule: store unreachable", lines[0].Msg)
}

// A Finish that fails leaves the run Running in the store, to be run
// again once taken over: it starts the store's outage as a failed claim
// does, and the next answer ends it.
func TestLogFinishFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h logRecorder
		store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(10)}
		j := schedule.NewJob("j", schedule.Every(10*time.Second), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(store), schedule.WithNode("n"), schedule.WithLogger(slog.New(&h)))
		store.set(func(s *scriptedStore) { s.finishDown = true })
		start(t, j)
		time.Sleep(15 * time.Second) // the finish of 10s fails
		store.set(func(s *scriptedStore) { s.finishDown = false })
		time.Sleep(10 * time.Second) // 25s: the claim of 20s answers
		stop(t, j)
		lines := h.got()
		require.Len(t, lines, 2)
		assert.Equal(t, logLine{Level: slog.LevelError, Msg: "schedule: store unreachable",
			Attrs: map[string]any{"store": "*schedule_test.scriptedStore", "job": "j", "node": "n", "err": "connection refused"}}, lines[0])
		assert.Equal(t, "schedule: store reachable again", lines[1].Msg)
		assert.Equal(t, int64(1), lines[1].Attrs["failed"])
		r, err := store.Last(context.Background(), "j")
		require.NoError(t, err)
		assert.Equal(t, at(20*time.Second), r.Due)
	})
}

// Slots Missed by 1,000 jobs that start after them log one line, with
// the first job's; those missed within the minute after it are counted in
// the next line.
func TestLogMissedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h logRecorder
		p := schedule.Preset(schedule.WithNode("n"), schedule.WithLogger(slog.New(&h)))
		f := func(context.Context, schedule.Run) error { return nil }
		restart := func(name string) *schedule.Job {
			store := schedule.NewMemoryStore(10)
			last := schedule.Record{Job: name, Due: time.Now().Add(-55 * time.Second), Status: schedule.Succeeded}
			require.NoError(t, store.Claim(context.Background(), last))
			j := schedule.NewJob(name, schedule.Every(10*time.Second), f, p, schedule.WithStore(store))
			start(t, j)
			return j
		}
		time.Sleep(5 * time.Second)
		var jobs []*schedule.Job
		for i := range 1000 {
			jobs = append(jobs, restart("j"+strconv.Itoa(i))) // 4 slots Missed each, the 5th caught up
		}
		assert.Equal(t, []logLine{{Level: slog.LevelWarn, Msg: "schedule: slots missed",
			Attrs: map[string]any{"job": "j0", "due": at(-40 * time.Second), "node": "n", "missed": int64(4)}}}, h.got())
		time.Sleep(2 * time.Minute)
		for _, j := range jobs {
			stop(t, j)
		}
		assert.Equal(t, []logLine{{Level: slog.LevelWarn, Msg: "schedule: slots missed",
			Attrs: map[string]any{"job": "j0", "due": at(-40 * time.Second), "node": "n", "missed": int64(4)}},
			{Level: slog.LevelWarn, Msg: "schedule: slots missed",
				Attrs: map[string]any{"job": "j1", "due": at(-40 * time.Second), "node": "n", "missed": int64(999 * 4)}}},
			h.got(), "the count held back, logged once the minute is over")
	})
}

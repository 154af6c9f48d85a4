package schedule_test

import (
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// The Missed slots held back within the minute after a "slots missed"
// line are logged once the minute is over, with no later slot to carry
// them.
func TestLogMissedHeldCountIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h logRecorder
		p := schedule.Preset(schedule.WithNode("n"), schedule.WithLogger(slog.New(&h)))
		f := func(context.Context, schedule.Run) error { return nil }
		time.Sleep(5 * time.Second)
		var jobs []*schedule.Job
		for i := range 10 {
			name := "j" + strconv.Itoa(i)
			store := schedule.NewMemoryStore(10)
			last := schedule.Record{Job: name, Due: time.Now().Add(-55 * time.Second), Status: schedule.Succeeded}
			require.NoError(t, store.Claim(context.Background(), last))
			j := schedule.NewJob(name, schedule.Every(10*time.Second), f, p, schedule.WithStore(store))
			start(t, j)
			jobs = append(jobs, j)
		}
		time.Sleep(5 * time.Minute)
		for _, j := range jobs {
			stop(t, j)
		}
		total := int64(0)
		for _, l := range h.got() {
			if l.Msg == "schedule: slots missed" {
				total += l.Attrs["missed"].(int64)
			}
		}
		assert.Equal(t, int64(40), total, "Missed slots counted in no line")
	})
}

// A Finish that finds its record dropped (ErrNoRecord) is an answer of
// the store, not an outage.
func TestLogFinishErrNoRecordIsNotAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h logRecorder
		f := func(ctx context.Context, r schedule.Run) error {
			if r.Due.Equal(at(10 * time.Second)) {
				time.Sleep(25 * time.Second)
			}
			return nil
		}
		j := schedule.NewJob("j", schedule.Every(10*time.Second), f,
			schedule.WithStore(schedule.NewMemoryStore(1)), schedule.WithOverlap(schedule.OverlapAllow),
			schedule.WithNode("n"), schedule.WithLogger(slog.New(&h)))
		start(t, j)
		time.Sleep(40 * time.Second) // the run of 10s ends at 35s: its record was dropped at 30s
		stop(t, j)
		for _, l := range h.got() {
			assert.NotEqual(t, "schedule: store unreachable", l.Msg, "%v", l.Attrs)
		}
	})
}

// A logger that logged Missed slots is collected once dropped: a logger
// per job or per Table is not kept for ever.
func TestLogMissedKeepsNoLoggerAlive(t *testing.T) {
	collected := make(chan struct{}, 1)
	synctest.Test(t, func(t *testing.T) {
		h := &logRecorder{}
		l := slog.New(h)
		runtime.SetFinalizer(l, func(*slog.Logger) { collected <- struct{}{} })
		store := schedule.NewMemoryStore(10)
		last := schedule.Record{Job: "j", Due: time.Now().Add(-55 * time.Second), Status: schedule.Succeeded}
		require.NoError(t, store.Claim(context.Background(), last))
		j := schedule.NewJob("j", schedule.Every(10*time.Second), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(store), schedule.WithLogger(l))
		start(t, j)
		time.Sleep(5 * time.Second)
		stop(t, j)
		require.NotEmpty(t, h.got())
	})
	for range 10 {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("a logger that logged a Missed slot is never collected")
}

package schedule_test

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// missedJob starts a job of name on l whose store's last record is 55s
// old: its Start finds Missed slots.
func missedJob(t *testing.T, name string, l *slog.Logger) *schedule.Job {
	store := schedule.NewMemoryStore(10)
	last := schedule.Record{Job: name, Due: time.Now().Add(-55 * time.Second), Status: schedule.Succeeded}
	require.NoError(t, store.Claim(context.Background(), last))
	j := schedule.NewJob(name, schedule.Every(10*time.Second), func(context.Context, schedule.Run) error { return nil },
		schedule.WithStore(store), schedule.WithNode("n"), schedule.WithLogger(l))
	start(t, j)
	return j
}

// A "slots missed" line logged by another clock, one later than now (the
// wall clock set back; a test's bubble after the real clock), does not
// hold the next lines back until that clock's minute is over: they are
// logged at once, by the clock they read.
func TestLogMissedAcrossClocks(t *testing.T) {
	var h logRecorder
	l := slog.New(&h)
	a := missedJob(t, "a", l) // the real clock: logged at once
	stop(t, a)
	require.Len(t, h.got(), 1)
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(5 * time.Second) // 2000-01-01, 25 years before the line
		b := missedJob(t, "b", l)
		stop(t, b)
	})
	lines := h.got()
	require.Len(t, lines, 2, "b's slots logged at once, not held for 25 years")
	assert.Equal(t, "b", lines[1].Attrs["job"])
}

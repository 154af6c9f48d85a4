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

// A logger shared by the tests of a package (slog.Default(), or a test
// logger of the package) keeps one missedLog for ever. A bubble that ends
// within the minute after a "slots missed" line leaves its flush timer
// pending: it never fires (a bubble's timers die with it), and m.timer
// stays non-nil for ever, so that no later bubble, nor the real clock,
// arms one again: every count held afterwards waits for a Missed slot
// after the minute, which may never come.
func TestRev3LogMissedTimerDiesWithItsBubble(t *testing.T) {
	var h logRecorder
	l := slog.New(&h)
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(5 * time.Second)
		a := missedJob(t, "a", l) // logged at once
		b := missedJob(t, "b", l) // held, a timer armed for 1m in this bubble
		stop(t, a)
		stop(t, b)
	}) // ends at 5s: the timer never fires
	n := len(h.got())
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(5 * time.Second)
		c := missedJob(t, "c", l) // held: logged within the minute, by this bubble's clock
		time.Sleep(5 * time.Minute)
		stop(t, c)
	})
	total := int64(0)
	for _, line := range h.got()[n:] {
		if line.Msg == "schedule: slots missed" {
			total += line.Attrs["missed"].(int64)
		}
	}
	assert.NotZero(t, total, "the Missed slots of c (and b) are never logged: the timer of the first bubble is taken as armed")
}

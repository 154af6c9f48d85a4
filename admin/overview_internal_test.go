package admin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// TestRecordStates: a task is late when its next slot fell due more than a
// minute ago and it runs nothing and is not paused; failing by its last
// record; running by its runs here or its last record; never run without
// a record.
func TestRecordStates(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ok := schedule.Record{Due: now.Add(-time.Hour), Status: schedule.Succeeded}
	failed := schedule.Record{Due: now.Add(-time.Hour), Status: schedule.Failed}
	running := schedule.Record{Due: now.Add(-time.Hour), Status: schedule.Running}
	for _, c := range []struct {
		name   string
		last   schedule.Record
		here   int
		paused bool
		next   time.Time
		want   states
	}{
		{"idle", ok, 0, false, now.Add(time.Hour), 0},
		{"due just now", ok, 0, false, now.Add(-30 * time.Second), 0},
		{"late", ok, 0, false, now.Add(-2 * time.Minute), stLate},
		{"late, never run", schedule.Record{}, 0, false, now.Add(-2 * time.Minute), stLate | stNever},
		{"due and running here", ok, 1, false, now.Add(-2 * time.Minute), stRunning},
		{"due and running elsewhere", running, 0, false, now.Add(-2 * time.Minute), stRunning},
		{"paused", failed, 0, true, time.Time{}, stFailing | stPaused},
		{"failing", failed, 0, false, now.Add(time.Hour), stFailing},
		{"no next", ok, 0, false, time.Time{}, 0},
	} {
		assert.Equal(t, c.want, recordStates(c.last, c.here, c.paused, c.next, now), c.name)
	}
}

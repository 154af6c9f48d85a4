package schedule_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// A job paused by hand, with a note, while a run that fails is in flight:
// the failure does not pause it again, and the operator's note stands;
// the callback, which cron writes to every replica, is not called.
func TestPauseOnFailuresKeepsAnOperatorsPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var notes []schedule.PauseNote
		j := schedule.NewJob("j", schedule.Every(10*time.Second), func(ctx context.Context, _ schedule.Run) error {
			time.Sleep(5 * time.Second)
			return errors.New("boom")
		}, schedule.WithStore(schedule.NewMemoryStore(100)), schedule.WithNode("n"),
			schedule.WithPauseOnFailures(1, func(_ *schedule.Job, n schedule.PauseNote) { notes = append(notes, n) }))
		start(t, j)
		time.Sleep(12 * time.Second)
		j.Pause(schedule.Because("maintenance (ana)"), schedule.ResumeAt(time.Now().Add(time.Hour)))
		time.Sleep(5 * time.Second)
		n, ok := j.PauseNote()
		assert.True(t, ok)
		assert.Equal(t, "maintenance (ana)", n.Note, "the operator's note is kept")
		assert.Empty(t, notes, "the job did not pause itself: it was paused already")
		stop(t, j)
	})
}

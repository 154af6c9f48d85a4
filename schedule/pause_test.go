package schedule_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// A Pause with a note and an end: PauseNote reports them while the job is
// paused, no slot falls due meanwhile, and the job resumes by itself at
// the end, as by Resume: its next slot is the first after then.
func TestPauseResumesAtItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(15 * time.Second)
		j.Pause(schedule.Because("db migration (ana)"), schedule.ResumeAt(at(42*time.Second)))
		n, paused := j.PauseNote()
		assert.True(t, paused)
		assert.Equal(t, schedule.PauseNote{Note: "db migration (ana)", Since: at(15 * time.Second), Until: at(42 * time.Second)}, n)
		time.Sleep(26 * time.Second) // 41s
		assert.True(t, j.Paused())
		time.Sleep(2 * time.Second) // 43s
		assert.False(t, j.Paused())
		n, paused = j.PauseNote()
		assert.False(t, paused)
		assert.Zero(t, n)
		assert.Equal(t, at(50*time.Second), j.Next())
		time.Sleep(10 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{"10s Succeeded Scheduled 10s-11s", "50s Succeeded Scheduled 50s-51s"}, l.summary())
	})
}

// The end of a pause belongs to that pause: a Resume before it, and a
// new Pause after, are not ended by it; a Pause of a paused job with no
// options keeps its note; with some, they replace it, since the start of
// the pause.
func TestPauseEndBelongsToItsPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil })
		start(t, j)
		j.Pause(schedule.Because("a"), schedule.ResumeAt(at(10*time.Second)))
		time.Sleep(5 * time.Second)
		j.Resume()
		j.Pause()
		time.Sleep(10 * time.Second) // past the first pause's end
		n, paused := j.PauseNote()
		assert.True(t, paused, "the first pause's end ended the second")
		assert.Equal(t, schedule.PauseNote{Since: at(5 * time.Second)}, n)

		j.Pause(schedule.Because("b"))
		j.Pause()
		n, _ = j.PauseNote()
		assert.Equal(t, schedule.PauseNote{Note: "b", Since: at(5 * time.Second)}, n, "a Pause with no options keeps the note")
		j.Pause(schedule.ResumeAt(at(20 * time.Second)))
		n, _ = j.PauseNote()
		assert.Equal(t, schedule.PauseNote{Since: at(5 * time.Second), Until: at(20 * time.Second)}, n, "options make a new note")
		time.Sleep(6 * time.Second) // 21s
		assert.False(t, j.Paused())
		stop(t, j)
	})
}

// A pause whose end is not after the Pause ends at once; one made before
// Start makes the job start paused, and ends at its time; Stop leaves the
// note, and nothing resumes a stopped job.
func TestPauseEndEdges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second), schedule.WithObserver(l.observe))
		j.Pause(schedule.Because("not yet"), schedule.ResumeAt(at(25*time.Second)))
		start(t, j)
		assert.True(t, j.Paused())
		time.Sleep(36 * time.Second)
		assert.False(t, j.Paused())
		j.Pause(schedule.ResumeAt(at(time.Second)))
		synctest.Wait()
		assert.False(t, j.Paused(), "an end in the past")
		j.Pause(schedule.Because("for good"), schedule.ResumeAt(at(time.Minute)))
		stop(t, j)
		time.Sleep(time.Minute)
		n, paused := j.PauseNote()
		assert.True(t, paused)
		assert.Equal(t, "for good", n.Note)
		assert.Equal(t, []string{"30s Succeeded Scheduled 30s-31s"}, l.summary())
	})
}

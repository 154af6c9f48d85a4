package schedule_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation"
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
// new Pause after, are not ended by it; a Pause of a paused job changes
// what its options give, and keeps the rest and the start of the pause.
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
		assert.Equal(t, schedule.PauseNote{Note: "b", Since: at(5 * time.Second), Until: at(20 * time.Second)}, n, "an option changes what it gives, and keeps the rest")
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

// A Pause and a Resume before Start do not change what the Start catches
// up: here the claims of the slots the Start owes fail, and the next slot
// catches them up, as it does with no Pause before.
func TestPauseBeforeStartKeepsTheCatchUp(t *testing.T) {
	for _, pause := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "paused and resumed"}[pause], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(100)}
				succeeded(t, store.MemoryStore, at(10*time.Second))
				time.Sleep(33 * time.Second)
				j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
					schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireRunAll),
					schedule.WithObserver(l.observe), schedule.WithClaimRetry(0))
				if pause {
					j.Pause(schedule.Because("not yet"))
					j.Resume()
				}
				time.Sleep(2 * time.Second) // 35s
				store.set(func(s *scriptedStore) { s.claimsDown = true })
				start(t, j)
				time.Sleep(time.Second)
				store.set(func(s *scriptedStore) { s.claimsDown = false })
				time.Sleep(10 * time.Second) // 46s
				stop(t, j)
				assert.Subset(t, l.summary(), []string{"20s Succeeded CatchUp 40s-41s", "30s Succeeded CatchUp 41s-42s"})
			})
		})
	}
}

// A pause whose end has passed pauses nothing: a Start right after it
// catches up what it owes, as with no Pause.
func TestPauseWithAPastEndBeforeStart(t *testing.T) {
	for _, pause := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "paused"}[pause], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := schedule.NewMemoryStore(100)
				succeeded(t, store, at(10*time.Second))
				time.Sleep(35 * time.Second)
				j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
					schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithObserver(l.observe))
				if pause {
					j.Pause(schedule.ResumeAt(at(time.Second)))
					assert.False(t, j.Paused())
				}
				start(t, j)
				time.Sleep(10 * time.Second)
				stop(t, j)
				assert.Equal(t, []string{"20s Succeeded CatchUp 35s-36s", "30s Succeeded CatchUp 36s-37s", "40s Succeeded Scheduled 40s-41s"}, l.summary())
			})
		})
	}
}

// refusingScheduler panics in AfterFunc once refuse is set, as a stopped
// wheel.Wheel does.
type refusingScheduler struct{ refuse *atomic.Bool }

func (s refusingScheduler) AfterFunc(d time.Duration, f func()) circulation.Timer {
	if s.refuse.Load() {
		panic("scheduler stopped")
	}
	return time.AfterFunc(d, f)
}

// The end of a pause resumes the job on the timer's goroutine: a
// Scheduler that refuses the job's timer then leaves the job resumed but
// unarmed, where Resume would pass its panic on, which would end the
// process.
func TestPauseEndWithARefusingScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var refuse atomic.Bool
		j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil },
			schedule.WithScheduler(refusingScheduler{&refuse}))
		start(t, j)
		j.Pause(schedule.ResumeAt(at(time.Second)))
		refuse.Store(true) // the wheel is stopped, as in a shutdown
		time.Sleep(2 * time.Second)
		assert.False(t, j.Paused())
		assert.Panics(t, func() { j.Pause(); j.Resume() }, "Resume passes the refusal on")
		stop(t, j)
	})
}

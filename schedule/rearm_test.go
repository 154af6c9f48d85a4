package schedule_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/schedule"
)

// late is the runtime's Scheduler with every timer d late: a slot is due
// for d before the job's timer handles it.
type late time.Duration

func (l late) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return time.AfterFunc(d+time.Duration(l), f)
}

// timers are the job's Schedulers: the runtime's, whose timer fires at the
// very instant of a slot, before or after the caller wakes, and one whose
// timer fires a millisecond after it.
var timers = map[string]circulation.Scheduler{"runtime": circulation.RuntimeScheduler{}, "late": late(time.Millisecond)}

// A slot due at the moment of SetSchedule or Pause, that the job's timer
// has not handled yet, is handled first: it runs or is recorded.
func TestRearmAtASlot(t *testing.T) {
	for name, call := range map[string]func(*schedule.Job){
		"SetSchedule":  func(j *schedule.Job) { j.SetSchedule(schedule.Every(time.Hour)) },
		"Pause":        func(j *schedule.Job) { j.Pause() },
		"Pause+Resume": func(j *schedule.Job) { j.Pause(); j.Resume() },
	} {
		for tn, ts := range timers {
			t.Run(name+"/"+tn, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var l journal
					j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Second),
						schedule.WithScheduler(ts), schedule.WithObserver(l.observe))
					start(t, j)
					slot := j.Next()
					time.Sleep(time.Until(slot))
					call(j)
					time.Sleep(time.Minute)
					stop(t, j)
					rs := l.recs()
					if assert.Len(t, rs, 1) {
						assert.Equal(t, slot, rs[0].Due)
						assert.Contains(t, []schedule.Status{schedule.Succeeded, schedule.Skipped}, rs[0].Status)
					}
				})
			})
		}
	}
}

// Pause and Resume in a loop lose no slot that was due at a Pause: each
// slot of 1s, all at a Pause here, gets exactly one record.
func TestPauseResumeStorm(t *testing.T) {
	for tn, ts := range timers {
		t.Run(tn, func(t *testing.T) { pauseResumeStorm(t, ts) })
	}
}

func pauseResumeStorm(t *testing.T, ts circulation.Scheduler) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Second), l.work(time.Millisecond),
			schedule.WithScheduler(ts), schedule.WithObserver(l.observe))
		start(t, j)
		for range 100 {
			time.Sleep(100 * time.Millisecond)
			j.Pause()
			j.Resume()
		}
		time.Sleep(10 * time.Millisecond) // the last run ends
		stop(t, j)
		per := map[time.Duration]int{}
		for _, r := range l.recs() {
			assert.Contains(t, []schedule.Status{schedule.Succeeded, schedule.Skipped}, r.Status, "%+v", r)
			per[r.Due.Sub(t0)]++
		}
		want := map[time.Duration]int{}
		for i := 1; i <= 10; i++ {
			want[time.Duration(i)*time.Second] = 1
		}
		assert.Equal(t, want, per)
	})
}

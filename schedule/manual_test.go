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

// Two RunNow at the same instant are two runs, with distinct Dues.
func TestRunNowTwiceAtOneInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Second),
			schedule.WithOverlap(schedule.OverlapAllow), schedule.WithObserver(l.observe))
		start(t, j)
		j.RunNow()
		j.RunNow()
		time.Sleep(2 * time.Second)
		stop(t, j)
		rs := l.recs()
		if assert.Len(t, rs, 2) {
			assert.Equal(t, schedule.Succeeded, rs[0].Status)
			assert.Equal(t, schedule.Succeeded, rs[1].Status)
			assert.NotEqual(t, rs[0].Due, rs[1].Due)
		}
	})
}

// A RunNow at the very time of a slot, before or after the job's timer
// handled it, runs besides the slot.
func TestRunNowAtASlot(t *testing.T) {
	for _, o := range []schedule.Overlap{schedule.OverlapAllow, schedule.OverlapBufferOne, schedule.OverlapBufferAll} {
		for tn, ts := range timers {
			t.Run(o.String()+"/"+tn, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var l journal
					j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Second),
						schedule.WithOverlap(o), schedule.WithScheduler(ts), schedule.WithObserver(l.observe))
					start(t, j)
					time.Sleep(time.Until(j.Next()))
					j.RunNow()
					time.Sleep(time.Minute)
					stop(t, j)
					got := map[schedule.Reason]int{}
					for _, r := range l.recs() {
						assert.Equal(t, schedule.Succeeded, r.Status, "%+v", r)
						got[r.Reason]++
					}
					assert.Equal(t, map[schedule.Reason]int{schedule.Scheduled: 1, schedule.Manual: 1}, got)
				})
			})
		}
	}
}

// A Manual run whose (Job, Due) another replica claimed first is Skipped,
// not lost without a record.
func TestRunNowClaimedElsewhereIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(16)
		var l journal
		a := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Second),
			schedule.WithStore(store), schedule.WithNode("a"), schedule.WithObserver(l.observe))
		b := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Second),
			schedule.WithStore(store), schedule.WithNode("b"), schedule.WithObserver(l.observe))
		start(t, a)
		start(t, b)
		a.RunNow()
		b.RunNow() // the same instant, on another replica: the same (Job, Due)
		time.Sleep(2 * time.Second)
		stop(t, a)
		stop(t, b)
		assert.ElementsMatch(t, []string{"0s Succeeded Manual 0s-1s", "0s Skipped Manual"}, l.summary())
	})
}

// An Observer that retries a failed run with RunNow starts a run: the
// failed run no longer counts as in flight when the Observer learns of
// it. Under OverlapSkip, and OverlapAllow limited to one run, a RunNow
// that found the run still counted was always Skipped.
func TestRunNowFromTheObserverRetries(t *testing.T) {
	for name, opts := range map[string][]schedule.Option{
		"OverlapSkip":        {schedule.WithOverlap(schedule.OverlapSkip)},
		"OverlapAllow max 1": {schedule.WithOverlap(schedule.OverlapAllow), schedule.WithMaxParallel(1)},
		"OverlapBufferOne":   {schedule.WithOverlap(schedule.OverlapBufferOne)},
		"OverlapReplace":     {schedule.WithOverlap(schedule.OverlapReplace)},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				var j *schedule.Job
				fails := 2 // the scheduled run and the first retry fail
				f := func(ctx context.Context, r schedule.Run) error {
					time.Sleep(time.Second)
					if fails > 0 {
						fails--
						return errors.New("boom")
					}
					return nil
				}
				observe := func(r schedule.Record) {
					l.observe(r)
					if r.Status == schedule.Failed {
						j.RunNow()
					}
				}
				j = schedule.NewJob("j", schedule.Every(time.Hour), f, append(opts, schedule.WithObserver(observe))...)
				start(t, j)
				time.Sleep(time.Hour + time.Minute)
				stop(t, j)
				assert.Equal(t, []string{"1h0m0s Failed Scheduled 1h0m0s-1h0m1s",
					"1h0m1s Failed Manual 1h0m1s-1h0m2s", "1h0m2s Succeeded Manual 1h0m2s-1h0m3s"}, l.summary())
			})
		})
	}
}

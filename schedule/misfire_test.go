package schedule_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/schedule"
)

// restart starts, at 5s, a 10s job whose store's last record is due at
// -55s: the slots -50s to 0s were missed while it was down.
func restart(t *testing.T, opts ...schedule.Option) (*journal, *schedule.Job) {
	var l journal
	store := schedule.NewMemoryStore(100)
	require.NoError(t, store.Claim(context.Background(), schedule.Record{Job: "j", Due: at(-55 * time.Second), Status: schedule.Succeeded}))
	time.Sleep(5 * time.Second)
	opts = append(opts, schedule.WithStore(store), schedule.WithObserver(l.observe))
	j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second), opts...)
	start(t, j)
	assert.Equal(t, at(10*time.Second), j.Next(), "Next is the first slot after now, whatever is caught up")
	time.Sleep(12 * time.Second) // 17s
	stop(t, j)
	return &l, j
}

func TestMisfireRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := restart(t)
		assert.Equal(t, []string{
			"-50s Missed CatchUp", "-40s Missed CatchUp", "-30s Missed CatchUp",
			"-20s Missed CatchUp", "-10s Missed CatchUp",
			"0s Succeeded CatchUp 5s-6s",
			"10s Succeeded Scheduled 10s-11s",
		}, l.summary())
	})
}

func TestMisfireRunAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := restart(t, schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithCatchUpLimit(3))
		assert.Equal(t, []string{
			"-20s Missed CatchUp", "-10s Missed CatchUp", "0s Missed CatchUp", // beyond the limit
			"-50s Succeeded CatchUp 5s-6s",
			"-40s Succeeded CatchUp 6s-7s",
			"-30s Succeeded CatchUp 7s-8s",
			"10s Succeeded Scheduled 10s-11s",
		}, l.summary())
	})
}

func TestMisfireSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := restart(t, schedule.WithMisfire(schedule.MisfireSkip))
		assert.Equal(t, []string{
			"-50s Missed CatchUp", "-40s Missed CatchUp", "-30s Missed CatchUp",
			"-20s Missed CatchUp", "-10s Missed CatchUp", "0s Missed CatchUp",
			"10s Succeeded Scheduled 10s-11s",
		}, l.summary())
	})
}

// A run that starts within the grace period of its slot is on time.
func TestMisfireGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := restart(t, schedule.WithGrace(5*time.Second), schedule.WithMisfire(schedule.MisfireSkip))
		assert.Equal(t, []string{
			"-50s Missed CatchUp", "-40s Missed CatchUp", "-30s Missed CatchUp",
			"-20s Missed CatchUp", "-10s Missed CatchUp",
			"0s Succeeded Scheduled 5s-6s",
			"10s Succeeded Scheduled 10s-11s",
		}, l.summary())
	})
}

// A catch-up window leaves the slots missed longer ago than it Missed,
// whatever the policy: at 5s, a window of 22s keeps the slots of -10s and
// 0s, and one of 3s none. It does not touch a slot whose run starts on
// time, within the grace period.
func TestCatchUpWindow(t *testing.T) {
	old := []string{"-50s Missed CatchUp", "-40s Missed CatchUp", "-30s Missed CatchUp", "-20s Missed CatchUp"}
	for _, tc := range []struct {
		name string
		opts []schedule.Option
		want []string
	}{
		{"run-once", []schedule.Option{schedule.WithCatchUpWindow(22 * time.Second)},
			append(old, "-10s Missed CatchUp", "0s Succeeded CatchUp 5s-6s", "10s Succeeded Scheduled 10s-11s")},
		{"run-once, all too old", []schedule.Option{schedule.WithCatchUpWindow(3 * time.Second)},
			append(old, "-10s Missed CatchUp", "0s Missed CatchUp", "10s Succeeded Scheduled 10s-11s")},
		{"run-all", []schedule.Option{schedule.WithCatchUpWindow(22 * time.Second), schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithCatchUpLimit(3)},
			append(old, "-10s Succeeded CatchUp 5s-6s", "0s Succeeded CatchUp 6s-7s", "10s Succeeded Scheduled 10s-11s")},
		{"run-all, beyond the limit", []schedule.Option{schedule.WithCatchUpWindow(22 * time.Second), schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithCatchUpLimit(1)},
			append(old, "0s Missed CatchUp", "-10s Succeeded CatchUp 5s-6s", "10s Succeeded Scheduled 10s-11s")},
		{"skip", []schedule.Option{schedule.WithCatchUpWindow(22 * time.Second), schedule.WithMisfire(schedule.MisfireSkip)},
			append(old, "-10s Missed CatchUp", "0s Missed CatchUp", "10s Succeeded Scheduled 10s-11s")},
		{"on time", []schedule.Option{schedule.WithCatchUpWindow(3 * time.Second), schedule.WithGrace(5 * time.Second)},
			append(old, "-10s Missed CatchUp", "0s Succeeded Scheduled 5s-6s", "10s Succeeded Scheduled 10s-11s")},
		{"no window", []schedule.Option{schedule.WithCatchUpWindow(-time.Second), schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithCatchUpLimit(1)},
			[]string{"-40s Missed CatchUp", "-30s Missed CatchUp", "-20s Missed CatchUp", "-10s Missed CatchUp", "0s Missed CatchUp",
				"-50s Succeeded CatchUp 5s-6s", "10s Succeeded Scheduled 10s-11s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, _ := restart(t, tc.opts...)
				assert.Equal(t, tc.want, l.summary())
			})
		})
	}
}

// After a gap longer than the scan limit, a catch-up window still runs
// the slots within it: a job every minute, down for a day, with a window
// of an hour, runs the last hour's slots under MisfireRunAll, and reports
// the older ones Missed, up to the scan limit.
func TestCatchUpWindowAfterALongGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(100)
		succeeded(t, store, at(0))
		time.Sleep(24*time.Hour + 30*time.Second)
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(time.Millisecond), schedule.WithStore(store),
			schedule.WithObserver(l.observe), schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithCatchUpWindow(time.Hour))
		start(t, j)
		time.Sleep(10 * time.Second)
		stop(t, j)
		var ran, missed []time.Time
		for _, r := range l.recs() {
			switch r.Status {
			case schedule.Succeeded:
				ran = append(ran, r.Due)
			case schedule.Missed:
				missed = append(missed, r.Due)
			}
		}
		require.Len(t, ran, 60, "the slots of the last hour")
		assert.Equal(t, at(23*time.Hour+time.Minute), ran[0])
		assert.Equal(t, at(24*time.Hour), ran[59])
		assert.Len(t, missed, 1001, "the scan limit's, and the latest before the window")
		assert.Equal(t, at(23*time.Hour), missed[len(missed)-1], "older than the window by 30s")
	})
}

// After a Start whose store was down, the slots it missed are as old as
// they are when the store answers: a window of an hour leaves them Missed
// once the store is back three hours later, though they were within it at
// the Start.
func TestCatchUpWindowAfterAStartOutage(t *testing.T) {
	// With a grace of 10m, the slot of 1h10m was on time at the Start,
	// and is as old as the others once the store answers.
	for _, grace := range []time.Duration{time.Second, 10 * time.Minute} {
		t.Run(grace.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				store := &scriptedStore{MemoryStore: schedule.NewMemoryStore(100)}
				succeeded(t, store.MemoryStore, at(10*time.Minute))
				time.Sleep(75 * time.Minute) // down since 10m: the slots of 20m to 1h10m missed
				store.set(func(s *scriptedStore) { s.lastDown = true })
				j := schedule.NewJob("j", schedule.Every(10*time.Minute), l.work(time.Second), schedule.WithStore(store),
					schedule.WithObserver(l.observe), schedule.WithMisfire(schedule.MisfireRunAll),
					schedule.WithCatchUpWindow(time.Hour), schedule.WithGrace(grace))
				start(t, j)
				time.Sleep(3 * time.Hour)
				store.set(func(s *scriptedStore) { s.lastDown = false })
				time.Sleep(time.Hour)
				stop(t, j)
				var before []string
				for _, r := range l.recs() {
					if r.Due.Before(at(75 * time.Minute)) {
						before = append(before, since(r.Due)+" "+r.Status.String())
					}
				}
				slices.Sort(before)
				assert.Equal(t, []string{"1h0m0s Missed", "1h10m0s Missed", "20m0s Missed", "30m0s Missed", "40m0s Missed", "50m0s Missed"}, before)
			})
		})
	}
}

// A job with no record catches up nothing.
func TestNewJobCatchesUpNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		time.Sleep(5 * time.Second)
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
			schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithStore(schedule.NewMemoryStore(10)), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(12 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{"10s Succeeded Scheduled 10s-11s"}, l.summary())
	})
}

// A gap of a year of one-second slots is handled in a few calls of Next,
// and reported up to the scan limit.
func TestMisfireHugeGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(10)
		require.NoError(t, store.Claim(context.Background(), schedule.Record{Job: "j", Due: at(-365 * 24 * time.Hour)}))
		c := &countingSchedule{s: schedule.Every(time.Second)}
		j := schedule.NewJob("j", c, l.work(0), schedule.WithStore(store), schedule.WithObserver(l.observe))
		time.Sleep(1500 * time.Millisecond)
		start(t, j)
		time.Sleep(time.Millisecond)
		stop(t, j)
		s := l.summary()
		require.Len(t, s, 1001, "1000 slots reported Missed, the latest run")
		assert.Contains(t, s, "1s Succeeded Scheduled 1.5s-1.5s", "on time: within the grace period")
		// The run may report before Start has reported every missed slot;
		// the Missed records come in order.
		var missed []string
		for _, line := range s {
			if strings.Contains(line, "Missed") {
				missed = append(missed, line)
			}
		}
		require.Len(t, missed, 1000)
		assert.Equal(t, "-8759h59m59s Missed CatchUp", missed[0])
		assert.Equal(t, "-8759h43m20s Missed CatchUp", missed[999])
		assert.Less(t, c.n, 1200)
	})
}

type countingSchedule struct {
	s schedule.Schedule
	n int
}

func (c *countingSchedule) Next(t time.Time) time.Time { c.n++; return c.s.Next(t) }

// sleepy is a Scheduler whose timers stop while the machine sleeps, from
// from to from+d, as the monotonic clock does (golang/go#35012): a timer
// pending then fires d later than asked.
type sleepy struct {
	from time.Time
	d    time.Duration
}

func (s sleepy) AfterFunc(d time.Duration, f func()) circulation.Timer {
	due := time.Now().Add(d)
	if due.After(s.from) && time.Now().Before(s.from.Add(s.d)) {
		due = due.Add(s.d)
	}
	return time.AfterFunc(time.Until(due), f)
}

// A machine that sleeps through slots: its job notices within a second of
// waking (the watch of its Scheduler does), and runs what the Misfire
// policy says, not a burst.
func TestSleepIsNoticedWithinASecond(t *testing.T) {
	for _, tc := range []struct {
		misfire schedule.Misfire
		want    []string
	}{
		{schedule.MisfireRunOnce, []string{"10m0s Missed CatchUp", "20m0s Missed CatchUp", "30m0s Succeeded CatchUp 31m31s-31m32s"}},
		{schedule.MisfireSkip, []string{"10m0s Missed CatchUp", "20m0s Missed CatchUp", "30m0s Missed CatchUp"}},
		{schedule.MisfireRunAll, []string{"10m0s Succeeded CatchUp 31m31s-31m32s", "20m0s Succeeded CatchUp 31m32s-31m33s", "30m0s Succeeded CatchUp 31m33s-31m34s"}},
	} {
		t.Run(tc.misfire.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				// Asleep from 1m30s to 31m30s: the job's timer, armed at
				// 0 for 10m, would fire at 40m; the watch's, armed at
				// 1m30s for 1s, fires at 31m31s and finds the wall clock
				// 30m ahead of it.
				j := schedule.NewJob("j", schedule.Every(10*time.Minute), l.work(time.Second),
					schedule.WithScheduler(sleepy{from: at(90 * time.Second), d: 30 * time.Minute}),
					schedule.WithMisfire(tc.misfire), schedule.WithObserver(l.observe))
				start(t, j)
				time.Sleep(39 * time.Minute)
				stop(t, j)
				assert.Equal(t, tc.want, l.summary())
			})
		})
	}
}

// early is a Scheduler whose timers fire early by a fraction, as they do
// when the wall clock was set back: a job never runs a slot before its
// due time by the wall clock.
type early struct{}

func (early) AfterFunc(d time.Duration, f func()) circulation.Timer {
	return time.AfterFunc(d-d/3, f) // d itself below 3ns
}

func TestEarlyTimersNeverRunASlotEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
			schedule.WithScheduler(early{}), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(25 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{"10s Succeeded Scheduled 10s-11s", "20s Succeeded Scheduled 20s-21s"}, l.summary())
	})
}

// With WithGrace(0), a run is on time only if the job wakes at the very
// time of its slot.
func TestZeroGrace(t *testing.T) {
	for _, c := range []struct {
		timer circulation.Scheduler
		m     schedule.Misfire
		want  []string
	}{
		{circulation.RuntimeScheduler{}, schedule.MisfireRunOnce, []string{"1s Succeeded Scheduled 1s-1s", "2s Succeeded Scheduled 2s-2s"}},
		{circulation.RuntimeScheduler{}, schedule.MisfireSkip, []string{"1s Succeeded Scheduled 1s-1s", "2s Succeeded Scheduled 2s-2s"}},
		{late(time.Nanosecond), schedule.MisfireRunOnce, []string{"1s Succeeded CatchUp 1.000000001s-1.000000001s", "2s Succeeded CatchUp 2.000000001s-2.000000001s"}},
		{late(time.Nanosecond), schedule.MisfireSkip, []string{"1s Missed CatchUp", "2s Missed CatchUp"}},
	} {
		synctest.Test(t, func(t *testing.T) {
			var l journal
			j := schedule.NewJob("j", schedule.Every(time.Second), l.work(0), schedule.WithGrace(0),
				schedule.WithMisfire(c.m), schedule.WithScheduler(c.timer), schedule.WithObserver(l.observe))
			start(t, j)
			time.Sleep(2500 * time.Millisecond)
			stop(t, j)
			assert.Equal(t, c.want, l.summary(), "%T %v", c.timer, c.m)
		})
	}
}

// The catch-up window holds for a job, not a process: two Jobs of one name
// sharing a store, down for a day, run each of the last hour's slots
// once between them, and the store keeps the newest of the older ones
// Missed, once. (Under OverlapBufferAll, so that the catch-up of one Job waits for the
// other's run, which OverlapSkip's would skip.)
func TestCatchUpWindowOnReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(5000)
		succeeded(t, store, at(0))
		time.Sleep(24*time.Hour + 30*time.Second)
		var js []*schedule.Job
		for _, node := range []string{"a", "b"} {
			j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(time.Millisecond), schedule.WithStore(store),
				schedule.WithNode(node), schedule.WithObserver(l.observe), schedule.WithMisfire(schedule.MisfireRunAll),
				schedule.WithCatchUpWindow(time.Hour), schedule.WithOverlap(schedule.OverlapBufferAll))
			start(t, j)
			js = append(js, j)
		}
		time.Sleep(10 * time.Second)
		for _, j := range js {
			stop(t, j)
		}
		ran := map[time.Time]int{}
		for _, r := range l.recs() {
			if r.Status == schedule.Succeeded {
				ran[r.Due]++
			}
		}
		require.Len(t, ran, 60, "the slots of the last hour")
		for due, n := range ran {
			assert.Equal(t, 1, n, "runs of %v", due.Sub(at(0)))
			assert.False(t, due.Before(at(23*time.Hour+time.Minute)), "%v is older than the window", due.Sub(at(0)))
		}
		h, err := store.History(context.Background(), "j", 5000)
		require.NoError(t, err)
		fates := map[schedule.Status]int{}
		for _, r := range h {
			fates[r.Status]++
			if r.Status == schedule.Missed {
				assert.True(t, r.Due.Before(at(23*time.Hour+time.Minute)), "%v Missed, within the window", r.Due.Sub(at(0)))
			}
		}
		assert.Equal(t, 60+1, fates[schedule.Succeeded], "the last hour's, and the record before the gap")
		assert.Equal(t, 16, fates[schedule.Missed], "the newest of the Missed reported, as many as a note keeps")
	})
}

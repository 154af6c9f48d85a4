package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// backfilled returns the Dues, as offsets from t0, of the records with
// Reason Backfill, in the order the Observer got them, with their status
// when it is not Succeeded.
func (l *journal) backfilled() []string {
	var s []string
	for _, r := range l.recs() {
		if r.Reason != schedule.Backfill {
			continue
		}
		line := since(r.Due)
		if r.Status != schedule.Succeeded {
			line += " " + r.Status.String()
		}
		s = append(s, line)
	}
	return s
}

// hours returns the offsets of the hours from, from+1h... up to to
// excluded, as since formats them.
func hours(from, to int) []string {
	var s []string
	for h := from; h < to; h++ {
		s = append(s, since(at(time.Duration(h)*time.Hour)))
	}
	return s
}

// Backfill runs each slot of the range, oldest first, one at a time, with
// Reason Backfill, and returns once the last has ended.
func TestBackfillRunsEachSlotInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		// Runs of 7 minutes: none ends at 1h, where a slot falls due.
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(7*time.Minute),
			schedule.WithStore(schedule.NewMemoryStore(100)), schedule.WithObserver(l.observe))
		start(t, j)
		begun := time.Now()
		p, err := j.Backfill(context.Background(), at(-10*time.Hour), at(-30*time.Minute))
		require.NoError(t, err)
		assert.Equal(t, 70*time.Minute, time.Since(begun), "ten runs of seven minutes, one after another")
		assert.Equal(t, schedule.BackfillProgress{From: at(-10 * time.Hour), To: at(-30 * time.Minute), Slots: 10, Done: 10}, p)
		_, ok := j.Backfilling()
		assert.False(t, ok)
		stop(t, j)
		assert.Equal(t, hours(-10, 0), l.backfilled())
		assert.Equal(t, 1, l.maxRun)
		assert.Equal(t, "Backfill", schedule.Backfill.String())
	})
}

// A slot that has a record is not run again: a second Backfill of the
// range runs nothing, and the slots the schedule ran are left as they are.
func TestBackfillSkipsSlotsWithRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Minute),
			schedule.WithStore(schedule.NewMemoryStore(100)), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(3*time.Hour + 30*time.Minute) // 1h, 2h and 3h run, Scheduled
		p, err := j.Backfill(context.Background(), at(-2*time.Hour), at(4*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, 6, p.Slots, "-2h to 3h: 4h is after the call")
		assert.Equal(t, 6, p.Done)
		assert.GreaterOrEqual(t, p.HadRecord, 3)
		ran := p.Done - p.HadRecord
		p, err = j.Backfill(context.Background(), at(-2*time.Hour), at(4*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, schedule.BackfillProgress{From: at(-2 * time.Hour), To: at(4 * time.Hour), Slots: 6, Done: 6, HadRecord: 6}, p)
		stop(t, j)
		bf := l.backfilled()
		assert.Len(t, bf, ran)
		assert.Subset(t, hours(-2, 1), bf)
	})
}

// A range that holds no slot, or only slots after the call, returns at
// once; one that holds more than MaxBackfill is refused; and so are a
// zero time, a reversed range, a job without a Store, before Start, while
// paused and after Stop.
func TestBackfillRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(0),
			schedule.WithStore(schedule.NewMemoryStore(10)), schedule.WithObserver(l.observe))
		_, err := j.Backfill(ctx, at(-time.Hour), at(0))
		assert.ErrorContains(t, err, "before Start")
		start(t, j)
		for _, c := range []struct {
			from, to time.Time
			want     string
		}{
			{time.Time{}, at(0), "from is the zero Time"},
			{at(-time.Hour), time.Time{}, "to is the zero Time"},
			{at(0), at(-time.Hour), "is after to"},
		} {
			p, err := j.Backfill(ctx, c.from, c.to)
			assert.ErrorContains(t, err, c.want)
			assert.Zero(t, p.Slots)
		}
		p, err := j.Backfill(ctx, at(-1001*time.Minute), at(0))
		assert.ErrorIs(t, err, schedule.ErrBackfillTooLong)
		assert.ErrorContains(t, err, "more than 1000 slots")
		assert.Zero(t, p.Slots)
		p, err = j.Backfill(ctx, at(-1000*time.Minute), at(0))
		assert.NoError(t, err, "exactly MaxBackfill")
		assert.Equal(t, schedule.MaxBackfill, p.Done)
		p, err = j.Backfill(ctx, at(-30*time.Second), at(-1))
		assert.NoError(t, err)
		assert.Zero(t, p.Slots)
		p, err = j.Backfill(ctx, at(time.Hour), at(2*time.Hour))
		assert.NoError(t, err, "slots after the call are the schedule's")
		assert.Zero(t, p.Slots)
		p, err = j.Backfill(ctx, time.Now(), time.Now())
		assert.NoError(t, err)
		assert.Zero(t, p.Slots)
		done, cancel := context.WithCancel(ctx)
		cancel()
		_, err = j.Backfill(done, at(-1001*time.Minute), at(0))
		assert.ErrorIs(t, err, schedule.ErrBackfillTooLong, "a done ctx checks the range first")
		p, err = j.Backfill(done, at(-time.Hour), at(0))
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 60, p.Slots)
		assert.Zero(t, p.Done)
		j.Pause()
		_, err = j.Backfill(ctx, at(-time.Hour), at(0))
		assert.ErrorIs(t, err, schedule.ErrPaused)
		j.Resume()
		stop(t, j)
		_, err = j.Backfill(ctx, at(-time.Hour), at(0))
		assert.ErrorIs(t, err, schedule.ErrStopped)

		noStore := schedule.NewJob("n", schedule.Every(time.Minute), l.work(0))
		start(t, noStore)
		_, err = noStore.Backfill(ctx, at(-time.Hour), at(0))
		assert.ErrorContains(t, err, "has no Store")
		stop(t, noStore)
	})
}

// Stop during a Backfill cancels its run in flight, and the Backfill
// returns ErrStopped: no slot after it runs, and nothing is left running.
func TestBackfillEndsAtStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		// Runs of 40 minutes: the second is in flight from 40m to 80m, and
		// the slot at 1h is Skipped (OverlapSkip).
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(40*time.Minute),
			schedule.WithStore(schedule.NewMemoryStore(100)), schedule.WithObserver(l.observe))
		start(t, j)
		done := make(chan error)
		var p schedule.BackfillProgress
		go func() {
			var err error
			p, err = j.Backfill(context.Background(), at(-5*time.Hour), at(0))
			done <- err
		}()
		time.Sleep(70 * time.Minute)
		stop(t, j)
		err := <-done
		assert.ErrorIs(t, err, schedule.ErrStopped)
		assert.Equal(t, 2, p.Done, "the first ran, and the second was cut short")
		assert.Equal(t, []string{since(at(-5 * time.Hour)), since(at(-4*time.Hour)) + " Canceled"}, l.backfilled())
	})
}

// Pause during a Backfill lets its run in flight end, and the Backfill
// returns ErrPaused; after Resume, the same range runs the slots left.
func TestBackfillEndsAtPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(40*time.Minute),
			schedule.WithStore(schedule.NewMemoryStore(100)), schedule.WithObserver(l.observe))
		start(t, j)
		done := make(chan error)
		go func() {
			_, err := j.Backfill(context.Background(), at(-5*time.Hour), at(-2*time.Hour))
			done <- err
		}()
		time.Sleep(70 * time.Minute)
		j.Pause()
		err := <-done
		assert.ErrorIs(t, err, schedule.ErrPaused)
		assert.Equal(t, 80*time.Minute, time.Since(t0), "the run in flight ended first")
		j.Resume()
		p, err := j.Backfill(context.Background(), at(-5*time.Hour), at(-2*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, 2, p.HadRecord)
		stop(t, j)
		assert.Equal(t, hours(-5, -2), l.backfilled())
	})
}

// A Backfill whose context is done returns at once with its error; the
// slot handed runs on, and a second Backfill of the range runs the rest.
// Its progress is visible meanwhile, and a second Backfill beside it is
// refused.
func TestBackfillCancelAndProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(20*time.Minute),
			schedule.WithStore(schedule.NewMemoryStore(100)), schedule.WithObserver(l.observe),
			schedule.WithOverlap(schedule.OverlapBufferAll))
		start(t, j)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() {
			_, err := j.Backfill(ctx, at(-4*time.Hour), at(0))
			done <- err
		}()
		time.Sleep(30 * time.Minute)
		p, ok := j.Backfilling()
		assert.True(t, ok)
		assert.Equal(t, schedule.BackfillProgress{From: at(-4 * time.Hour), To: at(0), Slots: 4, Done: 1, Running: at(-3 * time.Hour)}, p)
		_, err := j.Backfill(context.Background(), at(-time.Hour), at(0))
		assert.ErrorIs(t, err, schedule.ErrBackfilling)
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
		assert.Equal(t, 30*time.Minute, time.Since(t0), "at once")
		_, ok = j.Backfilling()
		assert.False(t, ok)
		p, err = j.Backfill(context.Background(), at(-4*time.Hour), at(0))
		require.NoError(t, err)
		assert.Equal(t, 2, p.HadRecord, "the first, and the one in flight at the cancel")
		stop(t, j)
		assert.Equal(t, hours(-4, 0), l.backfilled())
	})
}

// A Backfill from the job's own Func, with its context, returns an error
// at once rather than wait for itself; one it starts on a goroutine of
// its own runs once the Func has returned.
func TestBackfillFromItsOwnFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		var j *schedule.Job
		var inRun error
		var wg sync.WaitGroup
		var bg error
		f := func(ctx context.Context, r schedule.Run) error {
			if r.Reason == schedule.Scheduled {
				_, inRun = j.Backfill(ctx, at(-3*time.Hour), at(0))
				wg.Go(func() { _, bg = j.Backfill(context.Background(), at(-3*time.Hour), at(0)) })
			}
			return l.work(time.Minute)(ctx, r)
		}
		j = schedule.NewJob("j", schedule.Every(time.Hour), f,
			schedule.WithStore(schedule.NewMemoryStore(100)), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(90 * time.Minute)
		wg.Wait()
		stop(t, j)
		assert.ErrorContains(t, inRun, "from its own run")
		assert.NoError(t, bg)
		assert.Equal(t, hours(-3, 0), l.backfilled())
		assert.Equal(t, 1, l.maxRun)
	})
}

// A Backfill never runs beside the job's other runs beyond what its
// overlap policy allows, and never skips or replaces them: each slot waits
// for the job to be free. A slot that falls due while a backfill's run is
// in flight meets the policy as it would any run.
func TestBackfillUnderEachOverlapPolicy(t *testing.T) {
	eachOverlapPolicy(t, func(t *testing.T, o schedule.Overlap, most int, j *schedule.Job, l *journal) {
		p, err := j.Backfill(context.Background(), at(-20*time.Minute), at(0))
		require.NoError(t, err)
		assert.Equal(t, 20, p.Done)
		stop(t, j)
		assert.LessOrEqual(t, l.maxRun, most)
		assert.Len(t, l.backfilled(), 20)
		for _, r := range l.recs() {
			if r.Reason == schedule.Backfill && r.Status != schedule.Succeeded {
				// Only a slot that fell due can cut a backfill's
				// run short, and only by replacing it.
				assert.Equal(t, schedule.OverlapReplace, o, "%+v", r)
				assert.Equal(t, schedule.Canceled, r.Status, "%+v", r)
			}
		}
	})
}

// eachOverlapPolicy runs f, on the fake clock, for each overlap policy,
// with the most runs of a job it allows at once (two under OverlapAllow,
// WithMaxParallel(2)), and a Job of it on a MemoryStore, every minute,
// whose runs take 40s, started 30s ago, observed by l.
func eachOverlapPolicy(t *testing.T, f func(t *testing.T, o schedule.Overlap, most int, j *schedule.Job, l *journal)) {
	for _, c := range []struct {
		o   schedule.Overlap
		max int
	}{
		{schedule.OverlapSkip, 1}, {schedule.OverlapBufferOne, 1}, {schedule.OverlapBufferAll, 1},
		{schedule.OverlapReplace, 1}, {schedule.OverlapAllow, 2},
	} {
		t.Run(c.o.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				opts := []schedule.Option{schedule.WithStore(schedule.NewMemoryStore(1000)),
					schedule.WithObserver(l.observe), schedule.WithOverlap(c.o)}
				if c.o == schedule.OverlapAllow {
					opts = append(opts, schedule.WithMaxParallel(2))
				}
				j := schedule.NewJob("j", schedule.Every(time.Minute), l.work(40*time.Second), opts...)
				start(t, j)
				time.Sleep(30 * time.Second)
				f(t, c.o, c.max, j, &l)
			})
		})
	}
}

// Two replicas sharing a store backfill the same range at once: each slot
// runs once, and never beside another run of the job.
func TestBackfillAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(1000)
		var l journal
		var jobs []*schedule.Job
		for _, node := range []string{"a", "b"} {
			j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Minute),
				schedule.WithStore(store), schedule.WithNode(node), schedule.WithObserver(l.observe))
			start(t, j)
			jobs = append(jobs, j)
		}
		var wg sync.WaitGroup
		progress := make([]schedule.BackfillProgress, 2)
		for i, j := range jobs {
			wg.Go(func() {
				var err error
				progress[i], err = j.Backfill(context.Background(), at(-48*time.Hour), at(0))
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		for _, j := range jobs {
			stop(t, j)
		}
		assert.ElementsMatch(t, hours(-48, 0), l.backfilled())
		assert.Equal(t, 48, progress[0].Done-progress[0].HadRecord+progress[1].Done-progress[1].HadRecord)
		assert.Equal(t, 1, l.maxRun)
	})
}

// A Backfill on a replica whose run is in flight on another node waits for
// it, under OverlapSkip too: the slot is neither Skipped nor run beside it.
func TestBackfillWaitsForAReplicasRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		var l journal
		a := schedule.NewJob("j", schedule.Every(time.Hour), l.work(30*time.Minute),
			schedule.WithStore(store), schedule.WithNode("a"), schedule.WithObserver(l.observe))
		b := schedule.NewJob("j", schedule.Every(time.Hour), l.work(30*time.Minute),
			schedule.WithStore(store), schedule.WithNode("b"), schedule.WithObserver(l.observe))
		start(t, a)
		start(t, b)
		time.Sleep(time.Hour + time.Minute) // one of them runs 1h until 1h30m
		free := b
		if r, err := store.Last(context.Background(), "j"); assert.NoError(t, err) && r.Node == "b" {
			free = a
		}
		p, err := free.Backfill(context.Background(), at(-time.Hour), at(0))
		require.NoError(t, err)
		assert.Equal(t, 1, p.Done)
		assert.Equal(t, 1, l.maxRun)
		stop(t, a)
		stop(t, b)
		for _, r := range l.recs() {
			if r.Reason == schedule.Backfill {
				assert.Equal(t, schedule.Succeeded, r.Status)
				assert.False(t, r.Start.Before(at(90*time.Minute)), "after a's run: %+v", r)
			}
		}
	})
}

// A Backfill uses its schedule's slots: the days an exclusion calendar
// takes out are not slots, and a jittered slot starts at once.
func TestBackfillExceptAndJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		days, err := schedule.ParseDays(time.UTC, "1999-12-30")
		require.NoError(t, err)
		s := schedule.Except(schedule.Every(24*time.Hour), days)
		j := schedule.NewJob("j", s, l.work(0), schedule.WithJitter(time.Hour),
			schedule.WithStore(schedule.NewMemoryStore(100)), schedule.WithObserver(l.observe))
		start(t, j)
		p, err := j.Backfill(context.Background(), at(-4*24*time.Hour), at(0))
		require.NoError(t, err)
		assert.Equal(t, 3, p.Done)
		stop(t, j)
		var dues []string
		for _, r := range l.recs() {
			dues = append(dues, r.Due.UTC().Format("01-02"))
			assert.Equal(t, t0, r.Start, "at once, without the jitter")
		}
		assert.Equal(t, []string{"12-28", "12-29", "12-31"}, dues)
	})
}

// A Backfill stops at the first slot whose claim fails: the slot is
// Skipped with the store's error, which the Backfill returns.
func TestBackfillStopsAtAFailedClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &flakyStore{MemoryStore: schedule.NewMemoryStore(100)}
		var l journal
		var n int
		f := func(ctx context.Context, r schedule.Run) error {
			if n++; n == 2 {
				store.setDown(true)
			}
			return nil
		}
		j := schedule.NewJob("j", schedule.Every(time.Hour), f,
			schedule.WithStore(store), schedule.WithObserver(l.observe))
		start(t, j)
		p, err := j.Backfill(context.Background(), at(-5*time.Hour), at(0))
		assert.ErrorIs(t, err, errDown)
		assert.ErrorContains(t, err, fmt.Sprintf("slot %v", at(-3*time.Hour)))
		assert.Equal(t, 2, p.Done)
		store.setDown(false)
		stop(t, j)
		// A slot's Skipped record is not ordered with the outcomes of
		// runs (WithObserver): it may reach the Observer before the
		// record of the run before it.
		rs := l.recs()
		slices.SortFunc(rs, func(a, b schedule.Record) int { return a.Due.Compare(b.Due) })
		if assert.Len(t, rs, 3) {
			assert.Equal(t, schedule.Skipped, rs[2].Status)
			assert.Equal(t, at(-3*time.Hour), rs[2].Due)
			assert.True(t, errors.Is(err, errDown))
		}
	})
}

package schedule_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// againOf returns the Dues, as offsets from t0, and the Attempts of the
// records with Reason Backfill, in the order the Observer got them.
func (l *journal) againOf() map[string]int {
	m := map[string]int{}
	for _, r := range l.recs() {
		if r.Reason == schedule.Backfill {
			m[since(r.Due)] = r.Attempt
		}
	}
	return m
}

// A Backfill with RunAgain runs again, oldest first, the slots whose
// record is finished, whatever its status, with an Attempt one more than
// the record's; it leaves a Running and a Released record alone, and runs
// a slot with no record as without it.
func TestBackfillRunAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := schedule.NewMemoryStore(100)
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Minute),
			schedule.WithStore(store), schedule.WithObserver(l.observe))
		start(t, j)
		seed := func(d time.Duration, s schedule.Status, attempt int, end time.Time) {
			require.NoError(t, store.Claim(ctx, schedule.Record{Job: "j", Due: at(d), Status: s,
				Node: "x", Attempt: attempt, Start: end, End: end}))
		}
		seed(-5*time.Hour, schedule.Failed, 3, at(-time.Hour))
		seed(-4*time.Hour, schedule.Running, 1, time.Time{})
		seed(-3*time.Hour, schedule.Released, 1, at(-time.Hour))
		seed(-2*time.Hour, schedule.Skipped, 0, time.Time{})
		p, err := j.Backfill(ctx, at(-time.Hour), at(-30*time.Minute))
		require.NoError(t, err)
		require.Equal(t, 1, p.Done-p.HadRecord, "-1h ran")
		time.Sleep(time.Second) // a run that ended as Backfill was called did not end before it

		p, err = j.Backfill(ctx, at(-6*time.Hour), at(-30*time.Minute), schedule.RunAgain())
		require.NoError(t, err)
		assert.Equal(t, schedule.BackfillProgress{From: at(-6 * time.Hour), To: at(-30 * time.Minute),
			Slots: 6, Done: 6, HadRecord: 2, RanAgain: 3}, p)
		stop(t, j)
		assert.Equal(t, []string{"-1h0m0s", "-6h0m0s", "-5h0m0s", "-2h0m0s", "-1h0m0s"}, l.backfilled(),
			"in order, each once, all Succeeded")
		assert.Equal(t, map[string]int{"-6h0m0s": 1, "-5h0m0s": 4, "-2h0m0s": 1, "-1h0m0s": 2}, l.againOf())
		h, err := store.History(ctx, "j", 10)
		require.NoError(t, err)
		for _, r := range h {
			switch {
			case !r.Due.Before(at(0)):
			case r.Due.Equal(at(-4 * time.Hour)):
				assert.Equal(t, schedule.Running, r.Status, "left alone")
				assert.Equal(t, "x", r.Node)
			case r.Due.Equal(at(-3 * time.Hour)):
				assert.Equal(t, schedule.Released, r.Status, "left alone")
			default:
				assert.Equal(t, schedule.Succeeded, r.Status, "%+v", r)
				assert.Equal(t, schedule.Backfill, r.Reason, "%+v", r)
			}
		}
	})
}

// A Backfill with RunAgain on a store that cannot claim a slot again is
// refused, naming the store's type, and runs nothing; a nil option is a
// programmer's error.
func TestBackfillRunAgainNeedsAnAgainStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := struct{ schedule.SharedStore }{schedule.NewMemoryStore(10)}
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Minute),
			schedule.WithStore(store), schedule.WithObserver(l.observe))
		start(t, j)
		_, err := j.Backfill(context.Background(), at(-3*time.Hour), at(0), schedule.RunAgain())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "struct { schedule.SharedStore }")
		assert.Contains(t, err.Error(), "AgainStore")
		assert.PanicsWithValue(t, "schedule: nil BackfillOption", func() {
			_, _ = j.Backfill(context.Background(), at(-3*time.Hour), at(0), nil)
		})
		stop(t, j)
		assert.Empty(t, l.backfilled())
	})
}

// A Backfill with RunAgain hands each slot under the overlap policy, as
// any Backfill: it never runs beside the job's runs beyond it.
func TestBackfillRunAgainUnderEachOverlapPolicy(t *testing.T) {
	eachOverlapPolicy(t, func(t *testing.T, _ schedule.Overlap, most int, j *schedule.Job, l *journal) {
		p, err := j.Backfill(context.Background(), at(-20*time.Minute), at(0))
		require.NoError(t, err)
		require.Equal(t, 20, p.Done)
		p, err = j.Backfill(context.Background(), at(-20*time.Minute), at(0), schedule.RunAgain())
		require.NoError(t, err)
		assert.Equal(t, 20, p.Done)
		assert.Equal(t, 20, p.RanAgain+p.HadRecord)
		assert.GreaterOrEqual(t, p.RanAgain, 19, "a slot replaced is Canceled, and runs again")
		stop(t, j)
		assert.LessOrEqual(t, l.maxRun, most)
		assert.GreaterOrEqual(t, len(l.backfilled()), 20+p.RanAgain)
	})
}

// Two replicas sharing a store backfill the same range with RunAgain at
// once: each slot runs again once, and never beside another run of the
// job.
func TestBackfillRunAgainAcrossReplicas(t *testing.T) {
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
		_, err := jobs[0].Backfill(context.Background(), at(-48*time.Hour), at(0))
		require.NoError(t, err)
		time.Sleep(time.Second)
		var wg sync.WaitGroup
		progress := make([]schedule.BackfillProgress, 2)
		for i, j := range jobs {
			wg.Go(func() {
				var err error
				progress[i], err = j.Backfill(context.Background(), at(-48*time.Hour), at(0), schedule.RunAgain())
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		for _, j := range jobs {
			stop(t, j)
		}
		assert.Equal(t, 48, progress[0].RanAgain+progress[1].RanAgain)
		assert.Equal(t, 48, progress[0].HadRecord+progress[1].HadRecord)
		assert.Len(t, l.backfilled(), 96)
		for due, attempt := range l.againOf() {
			assert.Equal(t, 2, attempt, due)
		}
		assert.Equal(t, 1, l.maxRun)
	})
}

// A Backfill with RunAgain that reaches a slot after another one ran it
// again, having been called before that run ended, leaves it: of two
// requests, one runs each slot again.
func TestBackfillRunAgainAfterAReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := schedule.NewMemoryStore(1000)
		var l journal
		work := l.work(time.Minute)
		// b, busy with a manual run of three hours, hands its backfill's
		// slots once a has run them again: a runs any number at once.
		a := schedule.NewJob("j", schedule.Every(time.Hour), work, schedule.WithStore(store), schedule.WithNode("a"),
			schedule.WithObserver(l.observe), schedule.WithOverlap(schedule.OverlapAllow))
		b := schedule.NewJob("j", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
			if r.Reason == schedule.Manual {
				time.Sleep(3 * time.Hour)
				return nil
			}
			return work(ctx, r)
		}, schedule.WithStore(store), schedule.WithNode("b"), schedule.WithObserver(l.observe))
		start(t, a)
		start(t, b)
		_, err := a.Backfill(ctx, at(-3*time.Hour), at(0))
		require.NoError(t, err)
		b.RunNow()
		synctest.Wait()
		var pb schedule.BackfillProgress
		var wg sync.WaitGroup
		wg.Go(func() {
			var err error
			pb, err = b.Backfill(ctx, at(-3*time.Hour), at(0), schedule.RunAgain())
			assert.NoError(t, err)
		})
		time.Sleep(time.Second)
		pa, err := a.Backfill(ctx, at(-3*time.Hour), at(0), schedule.RunAgain())
		require.NoError(t, err)
		assert.Equal(t, 3, pa.RanAgain)
		wg.Wait()
		assert.Equal(t, schedule.BackfillProgress{From: at(-3 * time.Hour), To: at(0), Slots: 3, Done: 3, HadRecord: 3}, pb)
		stop(t, a)
		stop(t, b)
		assert.Len(t, l.backfilled(), 6)
		// Called after those runs ended, a Backfill runs them again.
		c := schedule.NewJob("j", schedule.Every(time.Hour), work, schedule.WithStore(store), schedule.WithNode("c"),
			schedule.WithObserver(l.observe))
		start(t, c)
		pc, err := c.Backfill(ctx, at(-3*time.Hour), at(0), schedule.RunAgain())
		require.NoError(t, err)
		assert.Equal(t, 3, pc.RanAgain)
		stop(t, c)
		assert.Equal(t, map[string]int{"-3h0m0s": 3, "-2h0m0s": 3, "-1h0m0s": 3}, l.againOf())
	})
}

// MemoryStore.ClaimAgain claims a finished slot again only if its run
// ended before the request, and counts it a run in flight under the
// job's limit: refused ErrBusy at the limit, and holding the job busy
// until it finishes.
func TestMemoryStoreClaimAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := schedule.NewMemoryStore(10)
		one := schedule.Concurrency{Max: 1}
		rec := func(d time.Duration) schedule.Record {
			return schedule.Record{Job: "j", Due: at(d), Reason: schedule.Backfill, Status: schedule.Running,
				Node: "n", Start: time.Now()}
		}
		_, err := m.ClaimAgain(ctx, rec(-time.Hour), one, time.Now())
		assert.ErrorIs(t, err, schedule.ErrClaimed, "no record")
		done := rec(-time.Hour)
		done.Status, done.Attempt, done.End = schedule.Succeeded, 1, at(-time.Minute)
		require.NoError(t, m.Claim(ctx, done))

		// Another slot in flight: the job is at its limit of 1.
		_, err = m.ClaimRun(ctx, rec(0), one)
		require.NoError(t, err)
		_, err = m.ClaimAgain(ctx, rec(-time.Hour), one, time.Now())
		assert.ErrorIs(t, err, schedule.ErrBusy)
		got, err := m.ClaimAgain(ctx, rec(-time.Hour), schedule.Concurrency{Max: 2}, time.Now())
		require.NoError(t, err)
		assert.Equal(t, 2, got.Attempt)
		assert.Equal(t, schedule.Running, got.Status)
		assert.True(t, got.End.IsZero())
		_, err = m.ClaimRun(ctx, rec(time.Hour), schedule.Concurrency{Max: 2})
		assert.ErrorIs(t, err, schedule.ErrBusy, "the run again is in flight")
		_, err = m.ClaimAgain(ctx, rec(-time.Hour), schedule.Concurrency{}, time.Now())
		assert.ErrorIs(t, err, schedule.ErrClaimed, "its run is in flight")
		assert.NoError(t, m.Renew(ctx, got))

		time.Sleep(time.Minute)
		asked := time.Now()
		time.Sleep(time.Minute)
		got.Status, got.End = schedule.Failed, time.Now()
		require.NoError(t, m.Finish(ctx, got))
		_, err = m.ClaimRun(ctx, rec(time.Hour), schedule.Concurrency{Max: 2})
		assert.NoError(t, err, "finished: no longer in flight")
		_, err = m.ClaimAgain(ctx, rec(-time.Hour), schedule.Concurrency{}, asked)
		assert.ErrorIs(t, err, schedule.ErrClaimed, "it ended after the request")
		got, err = m.ClaimAgain(ctx, rec(-time.Hour), schedule.Concurrency{}, time.Now().Add(time.Nanosecond))
		require.NoError(t, err)
		assert.Equal(t, 3, got.Attempt)
	})
}

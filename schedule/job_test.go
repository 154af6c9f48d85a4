package schedule_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// Each slot runs at its due time, never before, once; its record is
// claimed in the store before the Func starts and finished after it.
func TestRunsStartAtTheirSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := schedule.NewMemoryStore(10)
		f := l.work(2 * time.Second)
		check := func(ctx context.Context, r schedule.Run) error {
			last, err := store.Last(ctx, r.Job)
			require.NoError(t, err)
			assert.Equal(t, r.Due, last.Due, "claimed before the Func starts")
			assert.Equal(t, schedule.Running, last.Status)
			return f(ctx, r)
		}
		time.Sleep(3 * time.Second)
		j := schedule.NewJob("j", schedule.Every(10*time.Second), check,
			schedule.WithStore(store), schedule.WithObserver(l.observe), schedule.WithNode("n1"))
		start(t, j)
		assert.Equal(t, at(10*time.Second), j.Next())
		time.Sleep(35 * time.Second) // 38s
		stop(t, j)
		assert.Equal(t, []string{
			"10s start Scheduled due 10s",
			"20s start Scheduled due 20s",
			"30s start Scheduled due 30s",
		}, l.starts())
		assert.Equal(t, []string{
			"10s Succeeded Scheduled 10s-12s",
			"20s Succeeded Scheduled 20s-22s",
			"30s Succeeded Scheduled 30s-32s",
		}, l.summary())
		h, err := store.History(context.Background(), "j", 10)
		require.NoError(t, err)
		require.Len(t, h, 3)
		assert.Equal(t, schedule.Record{Job: "j", Due: at(30 * time.Second), Reason: schedule.Scheduled,
			Status: schedule.Succeeded, Start: at(30 * time.Second), End: at(32 * time.Second), Node: "n1", Attempt: 1}, h[0])
		assert.Equal(t, l.recs()[2], h[0], "the Observer gets the record the store has")
	})
}

// overlapStory runs a job whose runs take 25s on a 10s schedule until 58s.
func overlapStory(t *testing.T, opts ...schedule.Option) *journal {
	var l journal
	opts = append(opts, schedule.WithObserver(l.observe))
	j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(25*time.Second), opts...)
	start(t, j)
	time.Sleep(58 * time.Second)
	stop(t, j)
	return &l
}

func TestOverlapSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := overlapStory(t)
		assert.Equal(t, []string{
			"20s Skipped Scheduled",
			"30s Skipped Scheduled",
			"10s Succeeded Scheduled 10s-35s",
			"50s Skipped Scheduled",
			"40s Canceled Scheduled 40s-58s",
		}, l.summary())
		assert.Equal(t, 1, l.maxRun)
	})
}

func TestOverlapBufferOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := overlapStory(t, schedule.WithOverlap(schedule.OverlapBufferOne))
		assert.Equal(t, []string{
			"20s Skipped Scheduled", // coalesced into the run for 30s
			"10s Succeeded Scheduled 10s-35s",
			"40s Skipped Scheduled",
			"50s Skipped Scheduled", // buffered, dropped by Stop
			"30s Canceled Scheduled 35s-58s",
		}, l.summary())
		assert.Equal(t, 1, l.maxRun)
	})
}

// Under OverlapBufferAll every slot that falls due meanwhile runs after
// the run in flight, in order, up to the buffer's limit: past it, the slot
// is Skipped, says why, and is kept in the store.
func TestOverlapBufferAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		l := overlapStory(t, schedule.WithOverlap(schedule.OverlapBufferAll), schedule.WithBufferLimit(2), schedule.WithStore(store))
		assert.Equal(t, []string{
			"10s Succeeded Scheduled 10s-35s", // 20s and 30s wait meanwhile
			"50s Skipped Scheduled",           // 30s and 40s wait: the buffer is full
			"30s Skipped Scheduled",           // buffered, dropped by Stop
			"40s Skipped Scheduled",
			"20s Canceled Scheduled 35s-58s",
		}, l.summary())
		assert.Equal(t, 1, l.maxRun)
		assert.Contains(t, l.recs()[1].Err, "the buffer is full")
		h, err := store.History(context.Background(), "j", 10)
		require.NoError(t, err)
		var kept []string
		for _, r := range h {
			kept = append(kept, since(r.Due)+" "+r.Status.String())
		}
		assert.Equal(t, []string{"50s Skipped", "20s Canceled", "10s Succeeded"}, kept,
			"the slot the full buffer Skipped is kept; those dropped by Stop are not, another node may run them")
	})
}

func TestOverlapReplace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := overlapStory(t, schedule.WithOverlap(schedule.OverlapReplace))
		assert.Equal(t, []string{
			"10s Canceled Scheduled 10s-20s",
			"20s Canceled Scheduled 20s-30s",
			"30s Canceled Scheduled 30s-40s",
			"40s Canceled Scheduled 40s-50s",
			"50s Canceled Scheduled 50s-58s",
		}, l.summary())
		assert.Equal(t, 1, l.maxRun, "runs never overlap")
		r := l.recs()
		assert.Equal(t, "schedule: run replaced by a newer one (OverlapReplace)", r[0].Err)
		assert.Equal(t, "schedule: job stopped", r[4].Err)
	})
}

func TestOverlapAllow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := overlapStory(t, schedule.WithOverlap(schedule.OverlapAllow), schedule.WithMaxParallel(2))
		assert.ElementsMatch(t, []string{ // the two Canceled ones in either order
			"30s Skipped Scheduled",
			"10s Succeeded Scheduled 10s-35s",
			"20s Succeeded Scheduled 20s-45s",
			"40s Canceled Scheduled 40s-58s",
			"50s Canceled Scheduled 50s-58s",
		}, l.summary())
		assert.Equal(t, 2, l.maxRun)
	})
}

package schedule_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// outcomes returns a Func whose runs fail or succeed as script says, slot
// after slot ('f' fails, 's' succeeds; past its end, each run fails).
func outcomes(script string) schedule.Func {
	var mu sync.Mutex
	i := 0
	return func(context.Context, schedule.Run) error {
		mu.Lock()
		defer mu.Unlock()
		c := byte('f')
		if i < len(script) {
			c = script[i]
		}
		i++
		if c == 'f' {
			return errors.New("boom")
		}
		return nil
	}
}

// A job that fails three slots in a row pauses itself, with a note naming
// the last, and tells the callback; a success between failures starts the
// count again; a Resume does too.
func TestPauseOnFailures(t *testing.T) {
	for _, store := range []string{"none", "MemoryStore"} {
		t.Run(store, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l journal
				var notes []schedule.PauseNote
				opts := []schedule.Option{schedule.WithObserver(l.observe), schedule.WithNode("n"),
					schedule.WithPauseOnFailures(3, func(_ *schedule.Job, n schedule.PauseNote) { notes = append(notes, n) })}
				if store == "MemoryStore" {
					opts = append(opts, schedule.WithStore(schedule.NewMemoryStore(100)))
				}
				j := schedule.NewJob("j", schedule.Every(10*time.Second), outcomes("ffsfff"+"ff"+"f"), opts...)
				start(t, j)
				time.Sleep(65 * time.Second)
				assert.True(t, j.Paused(), "after 40s, 50s and 60s failed")
				n, _ := j.PauseNote()
				assert.Equal(t, "paused after 3 failed slots in a row; the last, due 2000-01-01T00:01:00Z on n: boom", n.Note)
				assert.Equal(t, []schedule.PauseNote{n}, notes)
				time.Sleep(time.Minute)
				j.Resume() // at 2m5s
				time.Sleep(20 * time.Second)
				assert.False(t, j.Paused(), "2m10s and 2m20s failed: two since the Resume")
				time.Sleep(10 * time.Second)
				assert.True(t, j.Paused(), "2m30s failed: three")
				stop(t, j)
				assert.Len(t, notes, 2)
				assert.Equal(t, []string{
					"10s Failed Scheduled 10s-10s", "20s Failed Scheduled 20s-20s", "30s Succeeded Scheduled 30s-30s",
					"40s Failed Scheduled 40s-40s", "50s Failed Scheduled 50s-50s", "1m0s Failed Scheduled 1m0s-1m0s",
					"2m10s Failed Scheduled 2m10s-2m10s", "2m20s Failed Scheduled 2m20s-2m20s", "2m30s Failed Scheduled 2m30s-2m30s",
				}, l.summary())
			})
		})
	}
}

// The count is the store's: a Job on one replica fails two slots, each
// after its two attempts, and stops; a Skipped slot is recorded; a Job on
// another replica, started then, fails its first slot, the third in a row
// in the store, and pauses. A slot's retries are one slot; a Skipped slot
// is passed over.
func TestPauseOnFailuresOnReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := schedule.NewMemoryStore(100)
		var paused []string
		job := func(node string) *schedule.Job {
			return schedule.NewJob("j", schedule.Every(10*time.Second), outcomes(""),
				schedule.WithStore(store), schedule.WithNode(node), schedule.WithRetry(2, time.Second),
				schedule.WithPauseOnFailures(3, func(_ *schedule.Job, n schedule.PauseNote) { paused = append(paused, node+": "+n.Note) }))
		}
		a := job("a")
		start(t, a)
		time.Sleep(25 * time.Second)
		stop(t, a)
		require.NoError(t, store.Note(context.Background(), []schedule.Record{
			{Job: "j", Due: at(25 * time.Second), Reason: schedule.Manual, Status: schedule.Skipped, Node: "a"}}))
		b := job("b")
		start(t, b)
		time.Sleep(10 * time.Second)
		assert.False(t, a.Paused())
		assert.True(t, b.Paused())
		assert.Equal(t, []string{"b: paused after 3 failed slots in a row; the last, due 2000-01-01T00:00:30Z on b: boom"}, paused)
		stop(t, b)
		h, err := store.History(context.Background(), "j", 100)
		require.NoError(t, err)
		var got []string
		for _, r := range h {
			got = append(got, since(r.Due)+" "+r.Status.String()+" "+strconv.Itoa(r.Attempt))
		}
		assert.Equal(t, []string{"30s Failed 2", "25s Skipped 0", "20s Failed 2", "10s Failed 2"}, got)
	})
}

func TestPauseOnFailuresRefusesABadCount(t *testing.T) {
	for _, n := range []int{-1, schedule.MaxPauseOnFailures + 1} {
		assert.PanicsWithValue(t, "schedule: WithPauseOnFailures("+strconv.Itoa(n)+"): want 0 to 100", func() { schedule.WithPauseOnFailures(n, nil) })
	}
	assert.NotPanics(t, func() { schedule.WithPauseOnFailures(0, nil) })
}

package schedule_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

func TestNextBeforeStartAndAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error { return nil })
		assert.True(t, j.Next().IsZero())
		assert.Equal(t, "j", j.Name())
		time.Sleep(time.Minute) // a slot exactly now: Next is the one after
		start(t, j)
		assert.Equal(t, at(2*time.Minute), j.Next())
		require.ErrorIs(t, j.Start(context.Background()), schedule.ErrStarted)
		stop(t, j)
		assert.True(t, j.Next().IsZero())
		stop(t, j) // twice
	})
}

// Pause: no runs until Resume, and the slots in between are not missed.
func TestPauseResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second),
			schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(15 * time.Second)
		j.Pause()
		assert.True(t, j.Next().IsZero())
		j.RunNow() // Skipped: paused
		time.Sleep(30 * time.Second)
		j.Resume()
		assert.Equal(t, at(50*time.Second), j.Next())
		time.Sleep(10 * time.Second) // 55s
		stop(t, j)
		assert.Equal(t, []string{
			"10s Succeeded Scheduled 10s-11s",
			"15s Skipped Manual",
			"50s Succeeded Scheduled 50s-51s",
		}, l.summary())
	})
}

func TestPauseBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second), schedule.WithObserver(l.observe))
		j.Pause()
		start(t, j)
		assert.True(t, j.Next().IsZero())
		time.Sleep(25 * time.Second)
		j.Resume()
		assert.Equal(t, at(30*time.Second), j.Next())
		time.Sleep(10 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{"30s Succeeded Scheduled 30s-31s"}, l.summary())
	})
}

// RunNow runs at once, with Reason Manual, under the overlap policy.
func TestRunNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(10*time.Second), schedule.WithObserver(l.observe))
		j.RunNow() // before Start: nothing
		start(t, j)
		time.Sleep(time.Second)
		j.RunNow()
		time.Sleep(5 * time.Second)
		j.RunNow() // Skipped: the first is in flight
		time.Sleep(10 * time.Second)
		stop(t, j)
		assert.Equal(t, []string{"6s Skipped Manual", "1s Succeeded Manual 1s-11s"}, l.summary())
	})
}

// SetSchedule: the latest call wins, and Next reports its first slot.
func TestSetSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Hour), l.work(time.Second), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(time.Second)
		j.SetSchedule(schedule.Every(7 * time.Second))
		j.SetSchedule(schedule.Every(5 * time.Second))
		assert.Equal(t, at(5*time.Second), j.Next())
		time.Sleep(11 * time.Second) // 12s
		stop(t, j)
		assert.Equal(t, []string{"5s Succeeded Scheduled 5s-6s", "10s Succeeded Scheduled 10s-11s"}, l.summary())
	})
}

// Past the end of its window a job ends by itself: Next is zero, it holds
// no timer, and Stop returns nil. SetSchedule starts it again.
func TestWindowEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		var sched countingScheduler
		j := schedule.NewJob("j", schedule.Between(schedule.Every(10*time.Second), at(15*time.Second), at(30*time.Second)),
			l.work(time.Second), schedule.WithScheduler(&sched), schedule.WithObserver(l.observe))
		start(t, j)
		assert.Equal(t, at(20*time.Second), j.Next())
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.True(t, j.Next().IsZero())
		assert.Zero(t, sched.Pending(), "an ended job holds no timer")
		assert.Equal(t, []string{"20s Succeeded Scheduled 20s-21s", "30s Succeeded Scheduled 30s-31s"}, l.summary())
		j.SetSchedule(schedule.Once(at(70 * time.Second)))
		assert.Equal(t, at(70*time.Second), j.Next())
		time.Sleep(15 * time.Second)
		stop(t, j)
		assert.Equal(t, "1m10s Succeeded Scheduled 1m10s-1m11s", l.summary()[2])
	})
}

func TestOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Once(at(90*time.Second)), l.work(time.Second), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(2 * time.Minute)
		assert.True(t, j.Next().IsZero())
		stop(t, j)
		assert.Equal(t, []string{"1m30s Succeeded Scheduled 1m30s-1m31s"}, l.summary())
	})
}

// WithTimeout cancels a run's context with DeadlineExceeded: the run is
// Failed and its Err says so. Stop cancels a run: Canceled.
func TestTimeoutAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(10*time.Second), l.work(8*time.Second),
			schedule.WithTimeout(5*time.Second), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(22 * time.Second)
		stop(t, j)
		r := l.recs()
		require.Len(t, r, 2)
		assert.Equal(t, schedule.Failed, r[0].Status)
		assert.Equal(t, at(15*time.Second), r[0].End)
		assert.Equal(t, "schedule: run timed out after 5s: context deadline exceeded", r[0].Err)
		assert.Equal(t, schedule.Canceled, r[1].Status)
		assert.Equal(t, "schedule: job stopped", r[1].Err)
		assert.Equal(t, at(22*time.Second), r[1].End)
	})
}

// A Stop that comes after the Func returned does not make its run
// Canceled: the run finished, and is recorded as it finished.
func TestStopAfterTheFuncReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		var j *schedule.Job
		stopped := make(chan error, 1)
		schedule.SetReturnedHook(func() {
			schedule.SetReturnedHook(nil)
			go func() { stopped <- j.Stop(context.Background()) }()
			synctest.Wait() // Stop has cancelled the run's context and waits for it
		})
		defer schedule.SetReturnedHook(nil)
		j = schedule.NewJob("j", schedule.Every(10*time.Second), l.work(time.Second), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(15 * time.Second)
		require.NoError(t, <-stopped)
		r := l.recs()
		require.Len(t, r, 1)
		assert.Equal(t, schedule.Succeeded, r[0].Status, r[0].Err)
	})
}

// A Func that fails or panics makes a Failed run; the job goes on.
func TestFailuresAndPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		n := 0
		j := schedule.NewJob("j", schedule.Every(10*time.Second), func(ctx context.Context, r schedule.Run) error {
			n++
			switch n {
			case 1:
				return errors.New("disk full")
			case 2:
				panic("boom")
			}
			return nil
		}, schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(35 * time.Second)
		stop(t, j)
		r := l.recs()
		require.Len(t, r, 3)
		assert.Equal(t, "disk full", r[0].Err)
		assert.Equal(t, schedule.Failed, r[1].Status)
		assert.Equal(t, "schedule: panic: boom", r[1].Err)
		assert.Equal(t, schedule.Succeeded, r[2].Status)
	})
}

func TestBadInputPanics(t *testing.T) {
	f := func(context.Context, schedule.Run) error { return nil }
	s := schedule.Every(time.Second)
	assert.PanicsWithValue(t, "schedule: NewJob with an empty name", func() { schedule.NewJob("", s, f) })
	assert.PanicsWithValue(t, "schedule: NewJob with a nil Schedule", func() { schedule.NewJob("j", nil, f) })
	assert.PanicsWithValue(t, "schedule: NewJob with a nil Func", func() { schedule.NewJob("j", s, nil) })
	assert.PanicsWithValue(t, "schedule: Every with a non-positive period 0s", func() { schedule.Every(0) })
	assert.PanicsWithValue(t, "schedule: EveryFrom with a non-positive period -1s", func() { schedule.EveryFrom(t0, -time.Second) })
	assert.PanicsWithValue(t, "schedule: SetSchedule with a nil Schedule", func() { schedule.NewJob("j", s, f).SetSchedule(nil) })
	assert.PanicsWithValue(t, "schedule: NewMemoryStore with keep < 1", func() { schedule.NewMemoryStore(0) })
	assert.PanicsWithValue(t, "schedule: WithOverlap(9): unknown overlap policy", func() { schedule.WithOverlap(9) })
	assert.PanicsWithValue(t, "schedule: WithMisfire(9): unknown misfire policy", func() { schedule.WithMisfire(9) })
}

// A Store error other than ErrClaimed skips that run, reaches the
// Observer, and never wedges the job.
func TestStoreErrorSkipsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		store := &flakyStore{MemoryStore: schedule.NewMemoryStore(10)}
		ran := 0
		j := schedule.NewJob("j", schedule.Every(10*time.Second), func(context.Context, schedule.Run) error { ran++; return nil },
			schedule.WithStore(store), schedule.WithObserver(l.observe), schedule.WithClaimRetry(0))
		start(t, j)
		time.Sleep(15 * time.Second)
		store.setDown(true)
		time.Sleep(10 * time.Second)
		store.setDown(false)
		time.Sleep(10 * time.Second) // 35s
		stop(t, j)
		assert.Equal(t, 2, ran)
		r := l.recs()
		require.Len(t, r, 3)
		assert.Equal(t, schedule.Skipped, r[1].Status)
		assert.Equal(t, at(20*time.Second), r[1].Due)
		assert.Equal(t, "schedule: claim: connection refused", r[1].Err)
		assert.Equal(t, at(30*time.Second), r[2].Due)
	})
}

// Stop from inside the Func, with the Func's context, returns at once.
func TestStopFromInside(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var j *schedule.Job
		var err error
		done := make(chan struct{})
		j = schedule.NewJob("j", schedule.Every(time.Second), func(ctx context.Context, r schedule.Run) error {
			err = j.Stop(ctx)
			close(done)
			return nil
		})
		start(t, j)
		<-done
		assert.ErrorIs(t, err, context.Canceled)
		stop(t, j)
	})
}

// Stop returns ctx.Err() if a run outlives ctx.
func TestStopWithAContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		j := schedule.NewJob("j", schedule.Every(time.Second), func(ctx context.Context, r schedule.Run) error {
			<-release // ignores its context
			return nil
		})
		start(t, j)
		time.Sleep(1500 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		assert.ErrorIs(t, j.Stop(ctx), context.DeadlineExceeded)
		close(release)
		stop(t, j)
	})
}

// A Func that calls runtime.Goexit ends its run without a Record; the job
// goes on and Stop returns.
func TestGoexitInTheFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		j := schedule.NewJob("j", schedule.Every(time.Second), func(context.Context, schedule.Run) error {
			n++
			if n == 1 {
				runtime.Goexit()
			}
			return nil
		})
		start(t, j)
		time.Sleep(2500 * time.Millisecond)
		stop(t, j)
		assert.Equal(t, 2, n)
	})
}

// Without WithNode, Record.Node is the host name and the process id.
func TestDefaultNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l journal
		j := schedule.NewJob("j", schedule.Every(time.Second), l.work(0), schedule.WithObserver(l.observe))
		start(t, j)
		time.Sleep(1500 * time.Millisecond)
		stop(t, j)
		host, err := os.Hostname()
		require.NoError(t, err)
		r := l.recs()
		require.NotEmpty(t, r)
		assert.Equal(t, host+"-"+strconv.Itoa(os.Getpid()), r[0].Node)
	})
}

// Paused reports a Pause until the next Resume: before Start (the job
// then starts paused), while started, and after Stop.
func TestPaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := schedule.NewJob("j", schedule.Every(time.Second), func(context.Context, schedule.Run) error { return nil })
		assert.False(t, j.Paused())
		j.Pause()
		assert.True(t, j.Paused())
		start(t, j)
		assert.True(t, j.Paused(), "started paused")
		assert.True(t, j.Next().IsZero())
		j.Resume()
		assert.False(t, j.Paused())
		assert.False(t, j.Next().IsZero())
		j.Pause()
		j.Pause()
		assert.True(t, j.Paused())
		stop(t, j)
		assert.True(t, j.Paused())
	})
}

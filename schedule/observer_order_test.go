package schedule_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/circulation-go/circulation/schedule"
)

// Under every overlap policy but OverlapAllow, the records of runs reach
// the Observer one at a time, in the order of the runs, even when the
// Observer is slow and the next run ends before it returns.
func TestRunRecordsReachTheObserverInOrder(t *testing.T) {
	for _, o := range []schedule.Overlap{schedule.OverlapSkip, schedule.OverlapBufferOne, schedule.OverlapReplace, schedule.OverlapBufferAll} {
		t.Run(o.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				in, most := 0, 0
				var order []time.Duration
				obs := func(r schedule.Record) {
					if r.Status != schedule.Succeeded {
						return // the Skipped records of slots that fall due meanwhile
					}
					mu.Lock()
					in++
					most = max(most, in)
					first := len(order) == 0
					mu.Unlock()
					if first {
						time.Sleep(1500 * time.Millisecond) // a slow Observer: a log shipper, a metrics push
					}
					mu.Lock()
					in--
					order = append(order, r.Due.Sub(t0))
					mu.Unlock()
				}
				j := schedule.NewJob("j", schedule.Every(time.Second), func(context.Context, schedule.Run) error {
					time.Sleep(100 * time.Millisecond)
					return nil
				}, schedule.WithOverlap(o), schedule.WithObserver(obs))
				start(t, j)
				time.Sleep(3500 * time.Millisecond)
				stop(t, j)
				mu.Lock()
				defer mu.Unlock()
				assert.Equal(t, 1, most, "Observer calls at once under %v", o)
				assert.IsIncreasing(t, order, "records reach the Observer in the order of their runs")
			})
		})
	}
}

// Stop waits for the Observer of the last run to return: a run's record
// reaches the Observer after the run stops counting as in flight, and the
// job is not quiet until it has.
func TestStopWaitsForTheObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		returned := false
		j := schedule.NewJob("j", schedule.Every(time.Second), func(context.Context, schedule.Run) error { return nil },
			schedule.WithObserver(func(schedule.Record) {
				time.Sleep(time.Minute)
				mu.Lock()
				returned = true
				mu.Unlock()
			}))
		start(t, j)
		time.Sleep(time.Second) // the run of 1s has ended; its Observer sleeps
		synctest.Wait()
		j.Pause()
		stop(t, j)
		mu.Lock()
		defer mu.Unlock()
		assert.True(t, returned, "Stop returned while the Observer ran")
	})
}

// Stop waits, too, for the records that a call of another of the job's
// methods passes to the Observer: here a Pause, whose queued run is
// Skipped, called before Stop; its Observer returns after Stop began.
// Before, Stop returned while the Observer still ran, and the record came
// after it.
func TestStopWaitsForTheRecordsOfAnotherCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, release, seen := runAndQueue(t)
		go j.Pause()    // skips the queued run
		synctest.Wait() // Pause is passing the Skipped record
		stopped := make(chan error, 1)
		go func() { stopped <- j.Stop(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) while a record of the job was on its way to the Observer", err)
		default:
		}
		close(release)
		assert.NoError(t, <-stopped)
		assert.ElementsMatch(t, []string{"Skipped", "Canceled"}, seen())
	})
}

// A second Stop, beside the first, waits for the records the first passes
// to the Observer: those of the queued runs it dropped.
func TestASecondStopWaitsForTheFirstsRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j, release, seen := runAndQueue(t)
		first := make(chan error, 1)
		go func() { first <- j.Stop(context.Background()) }()
		synctest.Wait() // the first Stop passes the Skipped record
		second := make(chan error, 1)
		go func() { second <- j.Stop(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-second:
			t.Errorf("the second Stop returned (%v) while the first's record was on its way to the Observer", err)
		default:
		}
		close(release)
		assert.NoError(t, <-first)
		assert.NoError(t, <-second)
		assert.ElementsMatch(t, []string{"Skipped", "Canceled"}, seen())
	})
}

// runAndQueue starts a job with a run in flight until Stop and a second
// one queued behind it (OverlapBufferOne), whose Observer, once the
// queued run is Skipped, waits until release is closed. seen returns the
// statuses the Observer was passed.
func runAndQueue(t *testing.T) (j *schedule.Job, release chan struct{}, seen func() []string) {
	release = make(chan struct{})
	var mu sync.Mutex
	var got []string
	j = schedule.NewJob("j", schedule.Every(time.Hour), func(ctx context.Context, _ schedule.Run) error {
		<-ctx.Done()
		return nil
	}, schedule.WithOverlap(schedule.OverlapBufferOne), schedule.WithObserver(func(r schedule.Record) {
		if r.Status == schedule.Skipped {
			<-release
		}
		mu.Lock()
		got = append(got, r.Status.String())
		mu.Unlock()
	}))
	start(t, j)
	j.RunNow()
	j.RunNow()
	synctest.Wait()
	return j, release, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// A Backfill hands its next slot as soon as the run before it has ended,
// before that run's outcome has reached the Observer: the records still
// reach it in the order of the slots. (Under -race, it once failed one
// time in a few dozen: a runner that had ended overtaken by the next.)
func TestBackfillRecordsReachTheObserverInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var dues []time.Time
		j := schedule.NewJob("j", schedule.Every(time.Minute), func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(schedule.NewMemoryStore(1000)), schedule.WithObserver(func(r schedule.Record) {
				mu.Lock()
				defer mu.Unlock()
				dues = append(dues, r.Due)
			}))
		start(t, j)
		p, err := j.Backfill(context.Background(), at(-500*time.Minute), at(0))
		assert.NoError(t, err)
		assert.Equal(t, 500, p.Done)
		stop(t, j)
		assert.Len(t, dues, 500)
		assert.True(t, slices.IsSortedFunc(dues, func(a, b time.Time) int { return a.Compare(b) }), "records out of the slots' order")
	})
}

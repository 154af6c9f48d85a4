package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

func noop(context.Context, schedule.Run) error { return nil }

func ExampleJob_Start() {
	j := schedule.NewJob("backup", schedule.Every(time.Hour), noop)
	fmt.Println("before Start, next is zero:", j.Next().IsZero())
	if err := j.Start(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println("next within the hour:", time.Until(j.Next()) <= time.Hour)
	fmt.Println(errors.Is(j.Start(context.Background()), schedule.ErrStarted))
	_ = j.Stop(context.Background())
	// Output:
	// before Start, next is zero: true
	// next within the hour: true
	// true
}

// Stop cancels the runs in flight and waits for them to return.
func ExampleJob_Stop() {
	started := make(chan struct{})
	j := schedule.NewJob("import", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
		close(started)
		<-ctx.Done()
		return nil
	}, schedule.WithObserver(func(r schedule.Record) { fmt.Println(r.Status, r.Err) }))
	_ = j.Start(context.Background())
	j.RunNow()
	<-started
	fmt.Println("Stop:", j.Stop(context.Background()))
	fmt.Println(errors.Is(j.Start(context.Background()), schedule.ErrStopped))
	// Output:
	// Canceled schedule: job stopped
	// Stop: <nil>
	// true
}

// A paused job runs nothing, RunNow included, until Resume.
func ExampleJob_Resume() {
	done := make(chan struct{})
	j := schedule.NewJob("sync", schedule.Every(time.Hour), noop, schedule.WithObserver(func(r schedule.Record) {
		fmt.Printf("%v %v %q\n", r.Reason, r.Status, r.Err)
		if r.Status == schedule.Succeeded {
			close(done)
		}
	}))
	_ = j.Start(context.Background())
	j.Pause()
	j.RunNow()
	j.Resume()
	fmt.Println("next after Resume within the hour:", time.Until(j.Next()) <= time.Hour)
	j.RunNow()
	<-done
	_ = j.Stop(context.Background())
	// Output:
	// Manual Skipped "schedule: job paused"
	// next after Resume within the hour: true
	// Manual Succeeded ""
}

func ExampleJob_Next() {
	now := time.Now().Truncate(time.Second)
	j := schedule.NewJob("ping", schedule.At(now.Add(2*time.Hour), now.Add(time.Hour)), noop)
	fmt.Println("not started:", j.Next().IsZero())
	_ = j.Start(context.Background())
	fmt.Println("in an hour:", j.Next().Equal(now.Add(time.Hour)))
	j.Pause()
	fmt.Println("paused:", j.Next().IsZero())
	j.Resume()
	_ = j.Stop(context.Background())
	fmt.Println("stopped:", j.Next().IsZero())
	// Output:
	// not started: true
	// in an hour: true
	// paused: true
	// stopped: true
}

func ExampleJob_Name() {
	j := schedule.NewJob("nightly-report", schedule.Every(24*time.Hour), noop)
	fmt.Println(j.Name())
	// Output:
	// nightly-report
}

// Under OverlapAllow, runs go in parallel up to WithMaxParallel; one more
// is Skipped.
func ExampleWithMaxParallel() {
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	j := schedule.NewJob("resize", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
		<-release
		return nil
	}, schedule.WithOverlap(schedule.OverlapAllow), schedule.WithMaxParallel(2),
		schedule.WithObserver(func(r schedule.Record) {
			if r.Status == schedule.Skipped {
				fmt.Println("third:", r.Status, r.Err)
			} else {
				wg.Done()
			}
		}))
	_ = j.Start(context.Background())
	j.RunNow()
	j.RunNow()
	j.RunNow()
	close(release)
	wg.Wait()
	_ = j.Stop(context.Background())
	// Output:
	// third: Skipped schedule: a run is in flight
}

// A run that can start within the grace period after its slot is on time:
// Scheduled, not a catch-up. Here a job restarts half an hour after its
// latest slot, with a grace period of an hour.
func ExampleWithGrace() {
	store := schedule.NewMemoryStore(100)
	now := time.Now()
	hourly := schedule.EveryFrom(now.Add(30*time.Minute), time.Hour) // slots at half past now
	_ = store.Claim(context.Background(), schedule.Record{Job: "digest", Due: now.Add(-(2*time.Hour + 30*time.Minute)), Status: schedule.Succeeded})
	ran := make(chan schedule.Run, 1)
	j := schedule.NewJob("digest", hourly, func(ctx context.Context, r schedule.Run) error {
		ran <- r
		return nil
	}, schedule.WithStore(store), schedule.WithGrace(time.Hour),
		schedule.WithObserver(func(r schedule.Record) {
			if r.Status == schedule.Missed {
				fmt.Println("Missed:", now.Sub(r.Due).Round(time.Minute))
			}
		}))
	_ = j.Start(context.Background())
	r := <-ran
	_ = j.Stop(context.Background())
	fmt.Println(r.Reason, now.Sub(r.Due).Round(time.Minute))
	// Output:
	// Missed: 1h30m0s
	// Scheduled 30m0s
}

// Under MisfireRunAll, a restart runs the missed slots oldest first, up to
// the catch-up limit; the newest beyond it are Missed.
func ExampleWithCatchUpLimit() {
	store := schedule.NewMemoryStore(100)
	now := time.Now()
	hourly := schedule.EveryFrom(now.Add(30*time.Minute), time.Hour)
	_ = store.Claim(context.Background(), schedule.Record{Job: "bill", Due: now.Add(-(5*time.Hour + 30*time.Minute)), Status: schedule.Succeeded})
	var mu sync.Mutex
	var lines []string
	var wg sync.WaitGroup
	wg.Add(5)
	started := make(chan struct{})
	j := schedule.NewJob("bill", hourly, func(context.Context, schedule.Run) error {
		<-started // the Missed records reach the Observer during Start
		return nil
	}, schedule.WithStore(store),
		schedule.WithMisfire(schedule.MisfireRunAll), schedule.WithCatchUpLimit(2),
		schedule.WithObserver(func(r schedule.Record) {
			mu.Lock()
			lines = append(lines, fmt.Sprintf("%v ago: %v %v", now.Sub(r.Due).Round(time.Minute), r.Reason, r.Status))
			mu.Unlock()
			wg.Done()
		}))
	_ = j.Start(context.Background())
	close(started)
	wg.Wait()
	_ = j.Stop(context.Background())
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// 2h30m0s ago: CatchUp Missed
	// 1h30m0s ago: CatchUp Missed
	// 30m0s ago: CatchUp Missed
	// 4h30m0s ago: CatchUp Succeeded
	// 3h30m0s ago: CatchUp Succeeded
}

// The node name goes into every record, so that the history of a job run
// by several replicas says which ran each slot.
func ExampleWithNode() {
	store := schedule.NewMemoryStore(10)
	done := make(chan struct{})
	j := schedule.NewJob("cleanup", schedule.Every(time.Hour), noop, schedule.WithStore(store),
		schedule.WithNode("worker-1"), schedule.WithObserver(func(schedule.Record) { close(done) }))
	_ = j.Start(context.Background())
	j.RunNow()
	<-done
	_ = j.Stop(context.Background())
	h, _ := store.History(context.Background(), "cleanup", 1)
	fmt.Println(h[0].Node, h[0].Status)
	// Output:
	// worker-1 Succeeded
}

// The Observer gets the record of every run once it ends, and of every
// slot that did not run.
func ExampleWithObserver() {
	release := make(chan struct{})
	done := make(chan struct{})
	j := schedule.NewJob("export", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
		<-release
		return errors.New("disk full")
	}, schedule.WithObserver(func(r schedule.Record) {
		fmt.Printf("%v %v %q\n", r.Reason, r.Status, r.Err)
		if r.Status == schedule.Failed {
			close(done)
		}
	}))
	_ = j.Start(context.Background())
	j.RunNow()
	j.RunNow() // while the first is in flight: OverlapSkip, the default
	close(release)
	<-done
	_ = j.Stop(context.Background())
	// Output:
	// Manual Skipped "schedule: a run is in flight"
	// Manual Failed "disk full"
}

// Backfill runs the slots of a past range, oldest first, and a second
// Backfill of the range runs none again: each has its record.
func ExampleJob_Backfill() {
	to := time.Now().Truncate(time.Hour)
	j := schedule.NewJob("report", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
		if r.Reason == schedule.Backfill {
			fmt.Println("report for", r.Due.Sub(to))
		}
		return nil
	}, schedule.WithStore(schedule.NewMemoryStore(100)))
	if err := j.Start(context.Background()); err != nil {
		panic(err)
	}
	defer j.Stop(context.Background())
	p, err := j.Backfill(context.Background(), to.Add(-3*time.Hour), to)
	fmt.Printf("%d slots, %d done, %v\n", p.Slots, p.Done, err)
	p, err = j.Backfill(context.Background(), to.Add(-3*time.Hour), to)
	fmt.Printf("again: %d had a record, %v\n", p.HadRecord, err)
	// Output:
	// report for -3h0m0s
	// report for -2h0m0s
	// report for -1h0m0s
	// 3 slots, 3 done, <nil>
	// again: 3 had a record, <nil>
}

package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

var monday = time.Date(2024, 5, 6, 9, 7, 0, 0, time.UTC)

func ExampleEvery() {
	// The slots are multiples of the period since the Unix epoch: on every
	// replica and after every restart, the same quarter hours.
	for _, t := range schedule.Upcoming(schedule.Every(15*time.Minute), monday, 3) {
		fmt.Println(t.Format("15:04"))
	}
	// Output:
	// 09:15
	// 09:30
	// 09:45
}

func ExampleEveryFrom() {
	anchor := time.Date(2024, 5, 6, 8, 20, 0, 0, time.UTC)
	for _, t := range schedule.Upcoming(schedule.EveryFrom(anchor, 40*time.Minute), monday, 3) {
		fmt.Println(t.Format("15:04"))
	}
	// Output:
	// 09:40
	// 10:20
	// 11:00
}

func ExampleAt() {
	s := schedule.At(monday.Add(3*time.Hour), monday.Add(time.Hour), monday.Add(time.Hour))
	fmt.Println(len(schedule.Upcoming(s, monday, 10)), "times")
	fmt.Println(s.Next(monday).Format("15:04"))
	// Output:
	// 2 times
	// 10:07
}

func ExampleOnce() {
	s := schedule.Once(monday)
	fmt.Println(s.Next(monday.Add(-time.Second)).Format("15:04:05"))
	fmt.Println(s.Next(monday).IsZero())
	// Output:
	// 09:07:00
	// true
}

func ExampleBetween() {
	// Hourly, during the working day only.
	day := schedule.Between(schedule.Every(time.Hour), monday, monday.Add(3*time.Hour))
	for _, t := range schedule.Upcoming(day, monday.Add(-24*time.Hour), 10) {
		fmt.Println(t.Format("15:04"))
	}
	// Output:
	// 10:00
	// 11:00
	// 12:00
}

func ExampleUnion() {
	s := schedule.Union(schedule.Every(6*time.Hour), schedule.Once(monday))
	for _, t := range schedule.Upcoming(s, monday.Add(-time.Hour), 3) {
		fmt.Println(t.Format("15:04"))
	}
	// Output:
	// 09:07
	// 12:00
	// 18:00
}

func ExampleUpcoming() {
	fmt.Println(schedule.Upcoming(schedule.Every(time.Minute), monday, 2))
	// Output:
	// [2024-05-06 09:08:00 +0000 UTC 2024-05-06 09:09:00 +0000 UTC]
}

func ExampleNewJob() {
	done := make(chan schedule.Record, 1)
	j := schedule.NewJob("report", schedule.Once(time.Now().Add(50*time.Millisecond)),
		func(ctx context.Context, r schedule.Run) error {
			fmt.Println("running", r.Job, r.Reason)
			return nil
		},
		schedule.WithObserver(func(r schedule.Record) { done <- r }))
	if err := j.Start(context.Background()); err != nil {
		panic(err)
	}
	r := <-done
	fmt.Println(r.Status, "after its due time:", !r.Start.Before(r.Due))
	fmt.Println("ended by itself:", j.Next().IsZero())
	_ = j.Stop(context.Background())
	// Output:
	// running report Scheduled
	// Succeeded after its due time: true
	// ended by itself: true
}

func ExampleJob_RunNow() {
	done := make(chan struct{})
	j := schedule.NewJob("rebuild", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
		fmt.Println(r.Reason)
		close(done)
		return nil
	})
	_ = j.Start(context.Background())
	j.RunNow()
	<-done
	_ = j.Stop(context.Background())
	// Output:
	// Manual
}

func ExampleJob_Pause() {
	j := schedule.NewJob("sync", schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil })
	_ = j.Start(context.Background())
	fmt.Println("next:", j.Next().UTC().Format("04:05"))
	j.Pause()
	fmt.Println("paused, next is zero:", j.Next().IsZero())
	j.Resume()
	fmt.Println("resumed, next is zero:", j.Next().IsZero())
	_ = j.Stop(context.Background())
	// Output:
	// next: 00:00
	// paused, next is zero: true
	// resumed, next is zero: false
}

func ExampleJob_SetSchedule() {
	j := schedule.NewJob("sync", schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil })
	_ = j.Start(context.Background())
	at := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	j.SetSchedule(schedule.Once(at))
	fmt.Println(j.Next().Equal(at))
	_ = j.Stop(context.Background())
	fmt.Println(j.Next().IsZero())
	// Output:
	// true
	// true
}

// A job restarted after missing slots catches up under its Misfire
// policy, counted from the last record in its store.
func ExampleWithMisfire() {
	store := schedule.NewMemoryStore(100)
	now := time.Now()
	hourly := schedule.EveryFrom(now.Add(30*time.Minute), time.Hour) // slots at half past now
	// The last run was for the slot 5h30m ago: five slots since.
	_ = store.Claim(context.Background(), schedule.Record{Job: "digest", Due: now.Add(-(5*time.Hour + 30*time.Minute)), Status: schedule.Succeeded})

	var mu sync.Mutex
	missed := 0
	ran := make(chan schedule.Run, 1)
	j := schedule.NewJob("digest", hourly, func(ctx context.Context, r schedule.Run) error {
		ran <- r
		return nil
	}, schedule.WithStore(store), schedule.WithMisfire(schedule.MisfireRunOnce),
		schedule.WithObserver(func(r schedule.Record) {
			mu.Lock()
			defer mu.Unlock()
			if r.Status == schedule.Missed {
				missed++
			}
		}))
	_ = j.Start(context.Background())
	r := <-ran
	_ = j.Stop(context.Background())
	fmt.Println(r.Reason, "for the latest missed slot, 30 minutes ago:", r.Due.Equal(now.Add(-30*time.Minute).Round(0)))
	mu.Lock()
	fmt.Println(missed, "older slots Missed")
	mu.Unlock()
	// Output:
	// CatchUp for the latest missed slot, 30 minutes ago: true
	// 4 older slots Missed
}

// A slot that falls due while a run is in flight does not run under
// OverlapSkip, the default.
func ExampleWithOverlap() {
	start := time.Now()
	slots := schedule.At(start.Add(100*time.Millisecond), start.Add(300*time.Millisecond), start.Add(600*time.Millisecond))
	done := make(chan struct{})
	var mu sync.Mutex
	var lines []string
	j := schedule.NewJob("export", slots, func(ctx context.Context, r schedule.Run) error {
		time.Sleep(350 * time.Millisecond) // overstays the next slot
		return nil
	}, schedule.WithOverlap(schedule.OverlapSkip), schedule.WithObserver(func(r schedule.Record) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf("slot %dms: %v", r.Due.Sub(start).Milliseconds()/100*100, r.Status))
		if len(lines) == 3 {
			close(done)
		}
	}))
	_ = j.Start(context.Background())
	<-done
	_ = j.Stop(context.Background())
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// slot 300ms: Skipped
	// slot 100ms: Succeeded
	// slot 600ms: Succeeded
}

// Two replicas of a job sharing a store run each slot once.
func ExampleWithStore() {
	store := schedule.NewMemoryStore(10)
	slot := time.Now().Add(50 * time.Millisecond)
	var mu sync.Mutex
	runs := 0
	var jobs []*schedule.Job
	for _, node := range []string{"a", "b"} {
		j := schedule.NewJob("invoice", schedule.Once(slot), func(ctx context.Context, r schedule.Run) error {
			mu.Lock()
			runs++
			mu.Unlock()
			return nil
		}, schedule.WithStore(store), schedule.WithNode(node))
		_ = j.Start(context.Background())
		jobs = append(jobs, j)
	}
	time.Sleep(200 * time.Millisecond)
	for _, j := range jobs {
		_ = j.Stop(context.Background())
	}
	h, _ := store.History(context.Background(), "invoice", 10)
	fmt.Println(runs, "run,", len(h), "record:", h[0].Status)
	// Output:
	// 1 run, 1 record: Succeeded
}

func ExampleNewMemoryStore() {
	store := schedule.NewMemoryStore(2)
	ctx := context.Background()
	r := schedule.Record{Job: "j", Due: monday, Status: schedule.Running, Attempt: 1}
	fmt.Println(store.Claim(ctx, r))
	fmt.Println(errors.Is(store.Claim(ctx, r), schedule.ErrClaimed))
	r.Status = schedule.Succeeded
	_ = store.Finish(ctx, r)
	last, _ := store.Last(ctx, "j")
	fmt.Println(last.Status)
	_, err := store.Last(ctx, "other")
	fmt.Println(err)
	// Output:
	// <nil>
	// true
	// Succeeded
	// schedule: no record
}

// A run that overstays its timeout has its context cancelled and is
// Failed.
func ExampleWithTimeout() {
	done := make(chan schedule.Record, 1)
	j := schedule.NewJob("slow", schedule.Every(time.Hour), func(ctx context.Context, r schedule.Run) error {
		<-ctx.Done()
		return ctx.Err()
	}, schedule.WithTimeout(20*time.Millisecond), schedule.WithObserver(func(r schedule.Record) { done <- r }))
	_ = j.Start(context.Background())
	j.RunNow()
	r := <-done
	_ = j.Stop(context.Background())
	fmt.Println(r.Status)
	fmt.Println(r.Err)
	// Output:
	// Failed
	// schedule: run timed out after 20ms: context deadline exceeded
}

// A failed run is tried again within its slot, with the next Attempt:
// each attempt reaches the Observer, and the store keeps the last one's
// outcome.
func ExampleWithRetry() {
	store := schedule.NewMemoryStore(10)
	done := make(chan struct{})
	j := schedule.NewJob("report", schedule.Every(24*time.Hour), func(ctx context.Context, r schedule.Run) error {
		if r.Attempt < 3 {
			return errors.New("mail server down")
		}
		return nil
	}, schedule.WithRetry(5, 10*time.Millisecond), schedule.WithStore(store), schedule.WithObserver(func(r schedule.Record) {
		if r.Status == schedule.Failed {
			fmt.Println("attempt", r.Attempt, "failed:", r.Err)
			return
		}
		fmt.Println("attempt", r.Attempt, r.Status)
		close(done)
	}))
	_ = j.Start(context.Background())
	j.RunNow()
	<-done
	_ = j.Stop(context.Background())
	last, _ := store.Last(context.Background(), "report")
	fmt.Println("recorded: attempt", last.Attempt, last.Status)
	// Output:
	// attempt 1 failed: mail server down
	// attempt 2 failed: mail server down
	// attempt 3 Succeeded
	// recorded: attempt 3 Succeeded
}

// Many jobs share one timing wheel, which holds an idle job's timer in 40
// bytes. One more timer on the wheel watches the wall clock for all of them.
func ExampleWithScheduler() {
	w := wheel.New()
	defer w.Stop()
	var jobs []*schedule.Job
	for i := range 1000 {
		j := schedule.NewJob(fmt.Sprint("tenant-", i), schedule.Every(time.Duration(1+i%60)*time.Minute),
			func(context.Context, schedule.Run) error { return nil }, schedule.WithScheduler(w))
		_ = j.Start(context.Background())
		jobs = append(jobs, j)
	}
	fmt.Println(w.Len(), "timers on the wheel")
	for _, j := range jobs {
		_ = j.Stop(context.Background())
	}
	fmt.Println(w.Len(), "after Stop")
	// Output:
	// 1001 timers on the wheel
	// 0 after Stop
}

package cron_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// Tasks lists what a Table runs, for an admin page: each task's definition
// in force, its next run, its latest record and its runs in flight.
func ExampleTable_Tasks() {
	report := func(ctx context.Context, shop string, r schedule.Run) error { return nil }
	tab := cron.NewTable(map[string]cron.Handler{"report": report}, cron.WithLocation(time.UTC))
	defer tab.Stop(context.Background())

	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := tab.Apply(context.Background(), []cron.Task{
		{Name: "shop-2 daily", Handler: "report", BusinessID: "shop-2", Spec: "0 9 * * *", Start: start, Permanent: true},
		{Name: "shop-1 weekly", Handler: "report", BusinessID: "shop-1", Spec: "0 8 * * MON", Start: start, Permanent: true},
		{Name: "shop-3 daily", Handler: "report", BusinessID: "shop-3", Spec: "30 18 * * *", Start: start, Permanent: true,
			Paused: true, Timeout: cron.Duration(5 * time.Minute)},
	})
	if err != nil {
		fmt.Println(err)
	}
	if err := tab.Pause("shop-2 daily"); err != nil {
		fmt.Println(err)
	}
	fmt.Println(tab.Resume("no such task"))

	for _, s := range tab.Tasks() {
		next, last := "none: paused", "none"
		if !s.Next.IsZero() {
			next = s.Next.Format(time.RFC3339)
		}
		if !s.Last.Due.IsZero() {
			last = s.Last.Status.String()
		}
		fmt.Printf("%-13s  %-11s  next %-20s  overlap %s, timeout %v, %d running, last run %s\n",
			s.Task.Name, s.Task.Spec, next, s.Task.Overlap, s.Task.Timeout, s.Running, last)
	}
	// Output:
	// cron: unknown task "no such task"
	// shop-1 weekly  0 8 * * MON  next 2030-01-07T08:00:00Z  overlap skip, timeout 0s, 0 running, last run none
	// shop-2 daily   0 9 * * *    next none: paused          overlap skip, timeout 0s, 0 running, last run none
	// shop-3 daily   30 18 * * *  next none: paused          overlap skip, timeout 5m0s, 0 running, last run none
}

// DecodeTasks reads definitions from JSON, and refuses a typo that
// encoding/json would let pass; Validate then checks that each can run.
func ExampleDecodeTasks() {
	_, err := cron.DecodeTasks(strings.NewReader(`[
		{"name": "shop-1 daily", "handler": "report", "spec": "0 9 * * *", "permanent": true, "enabled": true}
	]`))
	fmt.Println(err)

	tasks, err := cron.DecodeTasks(strings.NewReader(`[
		{"name": "shop-1 daily", "handler": "report", "spec": "0 9 * * *", "permanent": true,
		 "overlap": "buffer-one", "timeout": "90s", "retry": {"attempts": 3, "backoff": "10s"}},
		{"name": "shop-2 leap", "handler": "report", "spec": "0 9 30 2 *", "permanent": true}
	]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tasks {
		fmt.Printf("%s: overlap %q, timeout %v, retry %+v; valid: %v\n", t.Name, t.Overlap, t.Timeout, t.Retry, t.Validate())
	}
	// Output:
	// cron: task "shop-1 daily" at index 0: enabled: unknown field
	// shop-1 daily: overlap "buffer-one", timeout 1m30s, retry {Attempts:3 Backoff:10s}; valid: <nil>
	// shop-2 leap: overlap "", timeout 0s, retry {Attempts:0 Backoff:0s}; valid: cron: task "shop-2 leap": spec: no time in the next 100 years
}

package cron_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A job at 02:30 every night in New York runs when the clocks jump on
// the night they skip 02:30, and once on the night they repeat 01:00 to
// 02:00; a job every 30 minutes follows real time.
func ExampleParse() {
	nightly, err := cron.Parse("CRON_TZ=America/New_York 30 2 * * *", nil)
	if err != nil {
		panic(err)
	}
	halfHourly, err := cron.Parse("CRON_TZ=America/New_York */30 * * * *", nil)
	if err != nil {
		panic(err)
	}
	from := time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC)
	for _, t := range schedule.Upcoming(nightly, from, 3) {
		fmt.Println(t.Format(time.DateTime + " MST"))
	}
	for _, t := range schedule.Upcoming(halfHourly, time.Date(2026, 3, 8, 6, 0, 0, 0, time.UTC), 3) {
		fmt.Println(t.Format(time.DateTime + " MST"))
	}
	// Output:
	// 2026-03-07 02:30:00 EST
	// 2026-03-08 03:00:00 EDT
	// 2026-03-09 02:30:00 EDT
	// 2026-03-08 01:30:00 EST
	// 2026-03-08 03:00:00 EDT
	// 2026-03-08 03:30:00 EDT
}

// Bad input gets an error that names the field and quotes it.
func ExampleParseError() {
	_, err := cron.Parse("0 9 * * mon-fir", time.UTC)
	fmt.Println(err)
	var pe *cron.ParseError
	if errors.As(err, &pe) {
		fmt.Printf("field %s, text %q\n", pe.Field, pe.Text)
	}
	// Output:
	// cron: day of week "mon-fir": unknown name "fir"
	// field day of week, text "mon-fir"
}

// A Table runs the tasks users define, many of them on one handler that
// tells them apart by their business id.
func ExampleTable() {
	report := func(ctx context.Context, shop string, r schedule.Run) error {
		fmt.Println("report for", shop)
		return nil
	}
	tab := cron.NewTable(map[string]cron.Handler{"report": report}, cron.WithLocation(time.UTC))
	defer tab.Stop(context.Background())

	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	changes, err := tab.Apply(context.Background(), []cron.Task{
		{Name: "shop-1 weekly", Handler: "report", BusinessID: "shop-1", Spec: "0 0 8 ? * MON",
			Start: start, Permanent: true},
		{Name: "shop-2 daily", Handler: "report", BusinessID: "shop-2", Spec: "0 0 9 * * ?",
			Start: start, End: start.AddDate(0, 1, 0)},
		{Name: "shop-3", Handler: "report", BusinessID: "shop-3", Spec: "0 0 25 * * ?",
			Permanent: true},
	})
	fmt.Println(changes.Added)
	fmt.Println(err)
	next, _ := tab.Next("shop-1 weekly")
	fmt.Println(next)
	// Output:
	// [shop-1 weekly shop-2 daily]
	// cron: task "shop-3": spec: cron: hour "25": value 25 out of range 0-23
	// 2030-01-07 08:00:00 +0000 UTC
}

package cron_test

import (
	"fmt"

	"github.com/circulation-go/circulation/cron"
)

// Describe says in words what a spec does, with the rules that surprise:
// when both day fields are restricted either one matching is enough, and
// a job at a fixed time of day runs once when the clocks skip or repeat
// its time. Its errors are Parse's.
func ExampleDescribe() {
	for _, spec := range []string{
		"*/5 * * * *",
		"0 */15 9-17 * * MON-FRI",
		"TZ=UTC 0 0 13 * fri",
		"CRON_TZ=Europe/Paris 30 2 * * *",
		"@every 90m",
		"0 0 31 4 *",
		"0 9 * * mon-fir",
	} {
		d, err := cron.Describe(spec)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(d)
	}
	// Output:
	// Every 5 minutes
	// Every 15 minutes from 09:00 through 17:45, Monday through Friday
	// At 00:00 in UTC on day 13 of the month, or on Friday
	// At 02:30 in Europe/Paris; if the clocks skip or repeat its time, it runs once (at the jump if skipped)
	// Every 1h30m0s
	// At 00:00 on April 31; never runs, as its months have no such day
	// cron: day of week "mon-fir": unknown name "fir"
}

package cron_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
)

// runs returns the first n times of spec in zone after from, in RFC 3339
// with the zone's offset.
func runs(t *testing.T, zone, spec, from string, n int) []string {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	require.NoError(t, err)
	s, err := cron.Parse(spec, loc)
	require.NoError(t, err)
	at, err := time.Parse(time.RFC3339, from)
	require.NoError(t, err)
	var out []string
	for range n {
		next := s.Next(at)
		if next.IsZero() {
			out = append(out, "none")
			break
		}
		require.True(t, next.After(at), "Next(%v) = %v", at, next)
		require.Equal(t, loc, next.Location())
		out = append(out, next.Format(time.RFC3339))
		at = next
	}
	return out
}

// The rules of ISC cron (cron(8)) for the times that daylight-saving
// changes skip or repeat: a job at a fixed time of day (no * in its minute
// and hour fields) runs once a day, when the clocks jump if its time is
// skipped and at the first occurrence if its time is repeated; any other
// job follows real time. Zones with one-hour, half-hour and two-hour
// shifts, in the northern and southern springs, with changes at midnight,
// and a day skipped whole.
func TestDaylightSaving(t *testing.T) {
	for _, c := range []struct {
		name, zone, spec, from string
		want                   []string
	}{
		// America/New_York, 2026: clocks go 02:00 EST -> 03:00 EDT on
		// March 8 and 02:00 EDT -> 01:00 EST on November 1.
		{"skipped time runs when the clocks jump", "America/New_York", "30 2 * * *", "2026-03-07T00:00:00-05:00",
			[]string{"2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"repeated time runs at its first occurrence", "America/New_York", "30 1 * * *", "2026-10-31T00:00:00-04:00",
			[]string{"2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"wildcard hour runs in both repeated hours", "America/New_York", "30 * * * *", "2026-11-01T00:00:00-04:00",
			[]string{"2026-11-01T00:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-01T02:30:00-05:00"}},
		{"wildcard step skips the skipped hour", "America/New_York", "*/30 * * * *", "2026-03-08T01:00:00-05:00",
			[]string{"2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00"}},
		{"hourly keeps the repeated hour", "America/New_York", "0 * * * *", "2026-11-01T00:00:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"}},
		{"@hourly is a wildcard job", "America/New_York", "@hourly", "2026-03-08T00:30:00-05:00",
			[]string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"}},
		{"two skipped times run once", "America/New_York", "0 0,30 2 * * *", "2026-03-08T00:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"a skipped time and the jump run once", "America/New_York", "0 2,3 * * *", "2026-03-08T00:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"two repeated times run once each", "America/New_York", "15,45 1 * * *", "2026-11-01T00:00:00-04:00",
			[]string{"2026-11-01T01:15:00-04:00", "2026-11-01T01:45:00-04:00", "2026-11-02T01:15:00-05:00"}},
		{"from inside the repeated hour, its second run is skipped", "America/New_York", "15,45 1 * * *", "2026-11-01T01:10:00-05:00",
			[]string{"2026-11-02T01:15:00-05:00"}},
		{"from between the two occurrences", "America/New_York", "30 1 * * *", "2026-11-01T01:40:00-04:00",
			[]string{"2026-11-02T01:30:00-05:00"}},
		{"from the jump itself", "America/New_York", "30 2 * * *", "2026-03-08T03:00:00-04:00",
			[]string{"2026-03-09T02:30:00-04:00"}},
		{"wildcard minute of a fixed hour follows real time", "America/New_York", "*/20 1 * * *", "2026-11-01T00:00:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:20:00-04:00", "2026-11-01T01:40:00-04:00",
				"2026-11-01T01:00:00-05:00", "2026-11-01T01:20:00-05:00", "2026-11-01T01:40:00-05:00", "2026-11-02T01:00:00-05:00"}},
		{"seconds of a skipped minute run once", "America/New_York", "*/20 30 2 * * *", "2026-03-08T00:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00", "2026-03-09T02:30:20-04:00"}},
		{"weekly on the day of the change", "America/New_York", "30 2 * * sun", "2026-03-01T03:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-15T02:30:00-04:00"}},

		// Europe/London, 2026: 01:00 GMT -> 02:00 BST on March 29,
		// 02:00 BST -> 01:00 GMT on October 25.
		{"London skipped", "Europe/London", "30 1 * * *", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"}},
		{"London repeated", "Europe/London", "30 1 * * *", "2026-10-24T12:00:00+01:00",
			[]string{"2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00Z"}},
		{"London wildcard repeated", "Europe/London", "30 * * * *", "2026-10-25T00:00:00+01:00",
			[]string{"2026-10-25T00:30:00+01:00", "2026-10-25T01:30:00+01:00", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z"}},

		// Australia/Lord_Howe shifts by 30 minutes, 2026: 02:00 +10:30 ->
		// 02:30 +11 on October 4, 02:00 +11 -> 01:30 +10:30 on April 5.
		{"half-hour gap: skipped time runs at the jump", "Australia/Lord_Howe", "15 2 * * *", "2026-10-03T12:00:00+10:30",
			[]string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"half-hour gap: a time after it is not moved", "Australia/Lord_Howe", "45 2 * * *", "2026-10-03T12:00:00+10:30",
			[]string{"2026-10-04T02:45:00+11:00", "2026-10-05T02:45:00+11:00"}},
		{"half-hour gap: wildcard", "Australia/Lord_Howe", "*/15 * * * *", "2026-10-04T01:40:00+10:30",
			[]string{"2026-10-04T01:45:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-04T02:45:00+11:00"}},
		{"half-hour overlap: repeated time runs once", "Australia/Lord_Howe", "45 1 * * *", "2026-04-04T12:00:00+11:00",
			[]string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
		{"half-hour overlap: time outside it is not repeated", "Australia/Lord_Howe", "15 1 * * *", "2026-04-04T12:00:00+11:00",
			[]string{"2026-04-05T01:15:00+11:00", "2026-04-06T01:15:00+10:30"}},
		{"half-hour overlap: wildcard", "Australia/Lord_Howe", "*/20 * * * *", "2026-04-05T01:30:00+11:00",
			[]string{"2026-04-05T01:40:00+11:00", "2026-04-05T01:40:00+10:30", "2026-04-05T02:00:00+10:30"}},

		// Australia/Sydney, the southern spring, 2026: 02:00 +10 -> 03:00
		// +11 on October 4, 03:00 +11 -> 02:00 +10 on April 5.
		{"southern spring: skipped", "Australia/Sydney", "30 2 * * *", "2026-10-03T12:00:00+10:00",
			[]string{"2026-10-04T03:00:00+11:00", "2026-10-05T02:30:00+11:00"}},
		{"southern autumn: repeated", "Australia/Sydney", "30 2 * * *", "2026-04-04T12:00:00+11:00",
			[]string{"2026-04-05T02:30:00+11:00", "2026-04-06T02:30:00+10:00"}},
		{"southern autumn: wildcard", "Australia/Sydney", "0 */1 * * *", "2026-04-05T01:30:00+11:00",
			[]string{"2026-04-05T02:00:00+11:00", "2026-04-05T02:00:00+10:00", "2026-04-05T03:00:00+10:00"}},

		// America/Santiago changes at midnight, 2026: 24:00 -04 -> 01:00
		// -03 on September 6, 24:00 -03 -> 23:00 -04 on April 4.
		{"midnight skipped: @daily runs at 01:00", "America/Santiago", "@daily", "2026-09-05T12:00:00-04:00",
			[]string{"2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00"}},
		{"midnight skipped: Sunday's 00:30 runs at 01:00, not Saturday's", "America/Santiago", "30 0 * * 0", "2026-09-05T12:00:00-04:00",
			[]string{"2026-09-06T01:00:00-03:00", "2026-09-13T00:30:00-03:00"}},
		{"midnight repeated hour", "America/Santiago", "30 23 * * *", "2026-04-04T12:00:00-03:00",
			[]string{"2026-04-04T23:30:00-03:00", "2026-04-05T23:30:00-04:00"}},
		{"midnight repeated hour, wildcard", "America/Santiago", "30 * * * *", "2026-04-04T22:00:00-03:00",
			[]string{"2026-04-04T22:30:00-03:00", "2026-04-04T23:30:00-03:00", "2026-04-04T23:30:00-04:00", "2026-04-05T00:30:00-04:00"}},

		// Antarctica/Troll shifts by two hours, 2026: 01:00 +00 -> 03:00
		// +02 on March 29, 03:00 +02 -> 01:00 +00 on October 25.
		{"two-hour gap: skipped time runs at the jump", "Antarctica/Troll", "30 1 * * *", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T01:30:00+02:00"}},
		{"two-hour overlap: repeated time runs once", "Antarctica/Troll", "30 2 * * *", "2026-10-24T12:00:00+02:00",
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00Z"}},
		{"two-hour overlap: wildcard runs in both", "Antarctica/Troll", "30 * * * *", "2026-10-25T00:00:00+02:00",
			[]string{"2026-10-25T00:30:00+02:00", "2026-10-25T01:30:00+02:00", "2026-10-25T02:30:00+02:00",
				"2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z", "2026-10-25T03:30:00Z"}},

		// Pacific/Apia skipped December 30, 2011: 23:59:59 -10 on the 29th
		// -> 00:00 +14 on the 31st.
		{"skipped day: its time runs at the jump", "Pacific/Apia", "0 12 * * *", "2011-12-29T00:00:00-10:00",
			[]string{"2011-12-29T12:00:00-10:00", "2011-12-31T00:00:00+14:00", "2011-12-31T12:00:00+14:00"}},
		{"skipped day: a weekly job of that day runs at the jump", "Pacific/Apia", "0 12 * * fri", "2011-12-20T00:00:00-10:00",
			[]string{"2011-12-23T12:00:00-10:00", "2011-12-31T00:00:00+14:00", "2012-01-06T12:00:00+14:00"}},
		{"skipped day: wildcard", "Pacific/Apia", "0 */12 * * *", "2011-12-29T06:00:00-10:00",
			[]string{"2011-12-29T12:00:00-10:00", "2011-12-31T00:00:00+14:00", "2011-12-31T12:00:00+14:00"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, runs(t, c.zone, c.spec, c.from, len(c.want)))
		})
	}
}

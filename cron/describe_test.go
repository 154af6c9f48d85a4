package cron_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
)

// The last clause of a job at fixed times of day whose zone may change its
// clocks: dstNote for one time of day, dstNoteMany for several.
const (
	dstNote     = "; if the clocks skip or repeat its time, it runs once (at the jump if skipped)"
	dstNoteMany = "; if the clocks skip or repeat one of its times, it runs once (at the jump if skipped)"
)

// describeTests are specs that Parse accepts, and their descriptions.
var describeTests = []struct{ spec, want string }{
	{"* * * * *", "Every minute"},
	{"* * * * * *", "Every second"},
	{"? ? ? ? ?", "Every minute"},
	{"*/5 * * * *", "Every 5 minutes"},
	{"*/15 * * * * *", "Every 15 seconds"},
	{"*/30 * * * *", "Every 30 minutes"},
	{"0 */5 * * * ?", "Every 5 minutes"},
	{"30 * * * *", "At minute 30 past every hour"},
	{"0 * * * *", "Every hour"},
	{"0 0 * * * *", "Every hour"},
	{"0,30 * * * *", "At minutes 0 and 30 past every hour"},
	{"0-30 * * * *", "At minutes 0 through 30 past every hour"},
	{"10-50/10 * * * *", "Every 10 minutes from minute 10 through 50"},
	{"5/20 * * * *", "At minutes 5, 25 and 45 past every hour"},
	{"*/7 * * * *", "Every 7 minutes from minute 0 through 56"},
	{"*/45 * * * *", "At minutes 0 and 45 past every hour"},
	{"*/90 * * * *", `Every hour; in the minute "*/90", the step 90 is longer than the 60 values of 0-59 it steps through: only 0 would match`},
	{"10-20/30 9 * * *", `At 09:10` + dstNote + `; in the minute "10-20/30", the step 30 is longer than the 11 values of 10-20 it steps through: only 10 would match`},
	{"0 9 * * 1-5", "At 09:00, Monday through Friday" + dstNote},
	{"0 9 * * MON-FRI", "At 09:00, Monday through Friday" + dstNote},
	{"  0\t9 * * mon-fri ", "At 09:00, Monday through Friday" + dstNote},
	{"0 0 9 ? * MON", "At 09:00, only on Monday" + dstNote},
	{"0 0 8 ? * MON-FRI", "At 08:00, Monday through Friday" + dstNote},
	{"0 9,17 * * *", "At 09:00 and 17:00" + dstNoteMany},
	{"0,30 9,17 * * *", "At 09:00, 09:30, 17:00 and 17:30" + dstNoteMany},
	{"30 9,12,17 * * *", "At 09:30, 12:30 and 17:30" + dstNoteMany},
	{"0 */2 * * *", "Every 2 hours"},
	{"15 */2 * * *", "Every 2 hours from 00:15 through 22:15"},
	{"0 */5 * * *", "Every 5 hours from 00:00 through 20:00"},
	{"0 9-17 * * *", "Every hour from 09:00 through 17:00" + dstNoteMany},
	{"0 9-17/2 * * *", "Every 2 hours from 09:00 through 17:00" + dstNoteMany},
	{"0 8,10-12 * * *", "At 08:00 and every hour from 10:00 through 12:00" + dstNoteMany},
	{"0 9-12,14-17 * * *", "Every hour from 09:00 through 12:00 and from 14:00 through 17:00" + dstNoteMany},
	{"0 0-23 * * *", "Every hour" + dstNoteMany},
	{"0 0/2 * * *", "Every 2 hours" + dstNoteMany},
	{"* 9 * * *", "Every minute from 09:00 through 09:59"},
	{"*/15 9-17 * * 1-5", "Every 15 minutes from 09:00 through 17:45, Monday through Friday"},
	{"10-40/10 9 * * *", "At 09:10, 09:20, 09:30 and 09:40" + dstNoteMany},
	{"0-10,30 9 * * *", "Every minute from 09:00 through 09:10 and at 09:30" + dstNoteMany},
	{"*/5 */2 * * *", "Every 5 minutes past every 2nd hour"},
	{"0,30 9,12,17 * * *", "At minutes 0 and 30 past hours 9, 12 and 17" + dstNoteMany},
	{"*/5 9,17 * * *", "Every 5 minutes past hours 9 and 17"},
	{"30 */5 * * * *", "Every 5 minutes, at second 30"},
	{"0 30 9 * * *", "At 09:30" + dstNote},
	{"15 30 9 * * *", "At 09:30:15" + dstNote},
	{"30 0 * * * *", "At second 30 of minute 0 past every hour"},
	{"*/10 * * * * *", "Every 10 seconds"},
	{"*/10 * 9 * * *", "Every 10 seconds from 09:00:00 through 09:59:50"},
	{"* 30 9 * * *", "Every second from 09:30:00 through 09:30:59" + dstNoteMany},
	{"*/10 30 * * * *", "Every 10 seconds of minute 30 past every hour"},
	{"* */5 * * * *", "Every second of every 5th minute"},
	{"0,30 * * * * *", "At seconds 0 and 30 past every minute"},
	{"0,30 */5 9 * * *", "At seconds 0 and 30 of every 5th minute past hour 9"},
	{"5-50/10 30 9 * * *", "Every 10 seconds from 09:30:05 through 09:30:45" + dstNoteMany},
	{"*/20 30 2 * * *", "At 02:30:00, 02:30:20 and 02:30:40" + dstNoteMany},
	{"0,30 0 9 * * *", "At 09:00:00 and 09:00:30" + dstNoteMany},
	{"0 0 1 * *", "At 00:00 on day 1 of the month" + dstNote},
	{"0 0 1,15 * *", "At 00:00 on days 1 and 15 of the month" + dstNote},
	{"0 0 1-7 * *", "At 00:00 on days 1 through 7 of the month" + dstNote},
	{"0 0 */2 * *", "At 00:00, every 2 days from day 1 through 31 of the month" + dstNote},
	{"0 0 1-15/2 * *", "At 00:00, every 2 days from day 1 through 15 of the month" + dstNote},
	{"0 0 */15 * *", "At 00:00 on days 1, 16 and 31 of the month" + dstNote},
	{"0 0 1-31/40 * *", "At 00:00 on day 1 of the month" + dstNote + `; in the day of month "1-31/40", the step 40 is longer than the 31 values of 1-31 it steps through: only 1 would match`},
	{"0 0 1 1 *", "At 00:00 on January 1" + dstNote},
	{"0 0 1 */3 *", "At 00:00 on day 1 of January, April, July and October" + dstNote},
	{"0 0 1 jan,jul *", "At 00:00 on day 1 of January and July" + dstNote},
	{"0 0 * nov-dec,jan-feb *", "At 00:00 in November through February" + dstNote},
	{"0 0 * * 7", "At 00:00, only on Sunday" + dstNote},
	{"0 0 * * 0", "At 00:00, only on Sunday" + dstNote},
	{"0 0 * * 5-7", "At 00:00, Friday through Sunday" + dstNote},
	{"0 0 * * 0-2", "At 00:00, Sunday through Tuesday" + dstNote},
	{"0 0 * * SAT,SUN", "At 00:00, only on Saturday and Sunday" + dstNote},
	{"0 0 * * */2", "At 00:00, only on Tuesday, Thursday, Saturday and Sunday" + dstNote},
	{"0 0 * * 1,3,5", "At 00:00, only on Monday, Wednesday and Friday" + dstNote},
	{"0 0 * * 1-3,5", "At 00:00, Monday through Wednesday and Friday" + dstNote},
	{"0 0 * * 7/2", "At 00:00, only on Sunday" + dstNote + `; in the day of week "7/2", the step 2 has no value past 7 to step to: only 7 would match`},
	{"0 0 13 * 5", "At 00:00 on day 13 of the month, or on Friday" + dstNote},
	{"0 0 13 * fri", "At 00:00 on day 13 of the month, or on Friday" + dstNote},
	{"0 0 13 1 5", "At 00:00 on day 13 of the month, or on Friday, in January" + dstNote},
	{"59 23 31 12 fri", "At 23:59 on day 31 of the month, or on Friday, in December" + dstNote},
	{"0 0 1 * 0-6", "At 00:00" + dstNote},
	{"0 0 1-31 * 1", "At 00:00" + dstNote},
	{"0 0 */2 * fri", "At 00:00, every 2 days from day 1 through 31 of the month, if it is Friday" + dstNote},
	{"0 0 13 * */2", "At 00:00 on day 13 of the month, if it is Tuesday, Thursday, Saturday or Sunday" + dstNote},
	{"0 0 30 2 *", "At 00:00 on February 30; never runs, as its months have no such day"},
	{"0 0 31 2,4,6,9,11 *", "At 00:00 on day 31 of February, April, June, September and November; never runs, as its months have no such day"},
	{"0 0 30 2 mon", "At 00:00 on day 30 of the month, or on Monday, in February" + dstNote},
	{"0 0 29 2 *", "At 00:00 on February 29" + dstNote},
	{"@yearly", "At 00:00 on January 1" + dstNote},
	{"@annually", "At 00:00 on January 1" + dstNote},
	{"@monthly", "At 00:00 on day 1 of the month" + dstNote},
	{"@weekly", "At 00:00, only on Sunday" + dstNote},
	{"@daily", "At 00:00" + dstNote},
	{"@midnight", "At 00:00" + dstNote},
	{"@hourly", "Every hour"},
	{"@Daily", "At 00:00" + dstNote},
	{"@every 1h30m", "Every 1h30m0s"},
	{"@every 90m", "Every 1h30m0s"},
	{"@every 10s", "Every 10s"},
	{"TZ=Asia/Tokyo @every 10s", "Every 10s"},
	{"CRON_TZ=Europe/Paris 30 2 * * *", "At 02:30 in Europe/Paris" + dstNote},
	{"CRON_TZ=Europe/Paris 0 30 2 * * ?", "At 02:30 in Europe/Paris" + dstNote},
	{"TZ=UTC 30 2 * * *", "At 02:30 in UTC"},
	{"TZ=UTC @daily", "At 00:00 in UTC"},
	{"CRON_TZ=Asia/Tokyo 0 9 * * *", "At 09:00 in Asia/Tokyo"},
	{"CRON_TZ=Asia/Kolkata 0 9 * * *", "At 09:00 in Asia/Kolkata"},
	// A zone's clocks skip or repeat only some times of day: New York's
	// from 02:00 to 03:00 in spring and from 01:00 to 02:00 in the fall,
	// Santiago's around midnight.
	{"CRON_TZ=America/New_York 0 9 * * 1-5", "At 09:00 in America/New_York, Monday through Friday"},
	{"CRON_TZ=America/New_York @daily", "At 00:00 in America/New_York"},
	{"CRON_TZ=America/New_York 30 1 * * *", "At 01:30 in America/New_York" + dstNote},
	{"CRON_TZ=America/New_York 59 59 2 * * *", "At 02:59:59 in America/New_York" + dstNote},
	{"CRON_TZ=America/New_York 0 3 * * *", "At 03:00 in America/New_York"},
	{"CRON_TZ=America/New_York 0 0,2 * * *", "At 00:00 and 02:00 in America/New_York" + dstNoteMany},
	{"CRON_TZ=America/Santiago 0 0 * * *", "At 00:00 in America/Santiago" + dstNote},
	{"CRON_TZ=America/Santiago 30 23 * * *", "At 23:30 in America/Santiago" + dstNote},
	{"CRON_TZ=America/Santiago 0 12 * * *", "At 12:00 in America/Santiago"},
	{"CRON_TZ=America/New_York */30 * * * *", "Every 30 minutes in America/New_York"},
	{"CRON_TZ=Australia/Lord_Howe 15 2 * * *", "At 02:15 in Australia/Lord_Howe" + dstNote},
	{"CRON_TZ=Local 0 9 * * *", "At 09:00 in Local" + dstNote},
	{"TZ=Europe/Paris 0 0 1 1 *", "At 00:00 in Europe/Paris on January 1"},
	{"TZ=Europe/Paris 0 0 * 7 *", "At 00:00 in Europe/Paris, in July"},
	{"* */3 * * * *", "Every second of every 3rd minute"},
	{"*/30 */11 * * * *", "Every 30 seconds of every 11th minute from minute 0 through 55"},
	{"0 8-18/2 * * *", "Every 2 hours from 08:00 through 18:00" + dstNoteMany},
	{"0 0 1-15/2 * 1", "At 00:00, every 2 days from day 1 through 15 of the month, or on Monday" + dstNote},
	{"0 0 */2 3 fri", "At 00:00, every 2 days from day 1 through 31 of March, if it is Friday" + dstNote},
	{"*/3 * */17 1-1 */3,1/3,1/3", "Every 3 minutes on days 1 and 18 of January, if it is Saturday through Monday, Wednesday or Thursday"},
	{"43/17 */12,27,23-32 1-3/6 5-21 1 4-4,3", "At 01:00:43, 01:12:43, every minute from 01:23:43 through 01:32:43, at 01:36:43 and 01:48:43 on days 5 through 21 of the month, or on Wednesday and Thursday, in January; in the second \"43/17\", the step 17 is as long as the 17 values of 43-59 it steps through: only 43 would match"},
	{"25/15,0,1-22 */7 * 2/10,1 4-7/3", "At minutes 0 through 22, 25, 40 and 55 past every 7th hour from hour 0 through 21, only on Thursday and Sunday, in December through February"},
	{"* 5-17,1/13 11/7,17-28 */8 */2", "Every minute past hours 1 and 5 through 17 on days 11 and 17 through 28 of January and September, if it is Tuesday, Thursday, Saturday or Sunday"},
	{"0-59/59 0-23/23 1-31/30 1-12/11 0-7/7", "At 00:00, 00:59, 23:00 and 23:59 on days 1 and 31 of the month, or on Sunday, in December and January" + dstNoteMany},
}

func TestDescribe(t *testing.T) {
	assert.GreaterOrEqual(t, len(describeTests), 60, "Describe is tested on 60 specs at least")
	for _, c := range describeTests {
		got, err := cron.Describe(c.spec)
		require.NoError(t, err, c.spec)
		assert.Equal(t, c.want, got, c.spec)
	}
}

// TestDescribeTableParses checks that Parse accepts every spec of
// describeTests, in UTC and in the zone of a caller with daylight saving.
func TestDescribeTableParses(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	for _, c := range describeTests {
		for _, loc := range []*time.Location{time.UTC, ny} {
			s, err := cron.Parse(c.spec, loc)
			require.NoError(t, err, c.spec)
			require.NotNil(t, s, c.spec)
		}
	}
}

// describeErrors are specs that Parse rejects.
var describeErrors = []string{
	"", "   ", "* * * *", "* * * * * * *", "60 * * * *", "0 24 * * *", "0 0 0 * *",
	"0 0 32 * *", "0 0 * 13 *", "0 0 * * 8", "0 0 * * fri-mon", "0 0 * nov-feb *",
	"*/0 * * * *", "*/x * * * *", "1,,2 * * * *", "-5 * * * *", "0 0 * * monday",
	"0 0 L * *", "0 0 15W * *", "0 0 ? * 5#3", "0 0 ? * 5L", "@weekly 1", "@fortnightly",
	"@every", "@every 0s", "@every 1ms", "@every 1 h", "TZ= 0 0 * * *",
	"CRON_TZ=Mars/Olympus 0 0 * * *", "TZ=UTC", "TZ=UTC TZ=UTC 0 0 * * *",
	"cron_tz=UTC 0 0 * * *", strings.Repeat("* ", 513),
}

// TestDescribeErrors checks that Describe returns Parse's error, unchanged.
func TestDescribeErrors(t *testing.T) {
	for _, spec := range describeErrors {
		_, want := cron.Parse(spec, time.UTC)
		require.Error(t, want, spec)
		got, err := cron.Describe(spec)
		assert.Empty(t, got, spec)
		assert.Equal(t, want, err, spec)
		var pe *cron.ParseError
		assert.True(t, errors.As(err, &pe), "%q: %T, not a *ParseError", spec, err)
	}
}

// FuzzDescribe checks that Describe never panics, that it fails exactly
// when Parse does, with Parse's error, and that a description is a
// sentence.
func FuzzDescribe(f *testing.F) {
	for _, c := range describeTests {
		f.Add(c.spec)
	}
	for _, spec := range describeErrors {
		f.Add(spec)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := cron.Describe(spec)
		_, want := cron.Parse(spec, time.UTC)
		if want != nil {
			if err == nil || err.Error() != want.Error() {
				t.Fatalf("Describe(%q): error %v, want Parse's %v", spec, err, want)
			}
			return
		}
		if err != nil {
			t.Fatalf("Describe(%q): %v; Parse accepts it", spec, err)
		}
		if r, _ := utf8.DecodeRuneInString(got); !unicode.IsUpper(r) {
			t.Fatalf("Describe(%q) = %q, not a sentence", spec, got)
		}
	})
}

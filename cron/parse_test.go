package cron_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
)

// sameRuns fails unless a and b, parsed in UTC, give the same 200 times
// from a Monday.
func sameRuns(t *testing.T, a, b string) {
	t.Helper()
	sa, err := cron.Parse(a, time.UTC)
	require.NoError(t, err, a)
	sb, err := cron.Parse(b, time.UTC)
	require.NoError(t, err, b)
	ta := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	tb := ta
	for i := range 200 {
		ta, tb = sa.Next(ta), sb.Next(tb)
		require.Equal(t, tb, ta, "%q and %q, run %d", a, b, i)
		if ta.IsZero() {
			return
		}
	}
}

func TestSyntax(t *testing.T) {
	for _, c := range [][2]string{
		{"0 0 * * *", "0 0 0 * * *"},
		{"? ? ? ? ?", "* * * * *"},
		{"0 0 ? * MON", "0 0 * * 1"},
		{"0 0 * jan-mar sun", "0 0 * 1-3 0"},
		{"0 0 * JAN,Mar sat", "0 0 * 1,3 6"},
		{"0 0 * * 7", "0 0 * * 0"},
		{"0 0 * * 5-7", "0 0 * * 0,5,6"},
		{"0 0 * * */2", "0 0 * * 0,2,4,6"},
		{"0 0 * * 1/2", "0 0 * * 1,3,5"},
		{"0 0 * * 7/2", "0 0 * * 0"},
		{"0 0 * * 7/1", "0 0 * * 0"},
		{"0 0 * * 7-7/3", "0 0 * * 0"},
		{"0 0 * * 6/1", "0 0 * * 6"},
		{"0 0 * * 5,7/2", "0 0 * * 0,5"},
		{"5/20 * * * *", "5,25,45 * * * *"},
		{"10-40/15 * * * *", "10,25,40 * * * *"},
		{"*/25 * * * * *", "0,25,50 * * * * *"},
		{"0 0 */10 * *", "0 0 1,11,21,31 * *"},
		{"0 0 0 1-31/40 * *", "0 0 0 1 * *"},
		{"*/9223372036854775807 * * * *", "0 * * * *"},
		{"5/9223372036854775807 * * * * *", "5 * * * * *"},
		{"@yearly", "0 0 1 1 *"},
		{"@annually", "0 0 1 1 *"},
		{"@monthly", "0 0 1 * *"},
		{"@weekly", "0 0 * * 0"},
		{"@daily", "0 0 * * *"},
		{"@midnight", "0 0 * * *"},
		{"@hourly", "0 * * * *"},
		{"@Daily", "0 0 * * *"},
		{"  0\t0 * *   *  ", "0 0 * * *"},
		// Both day fields restricted: either matches (crontab(5)).
		{"0 0 13 * fri", "0 0 13 * *|0 0 * * 5"},
		{"0 0 13 * 7/2", "0 0 13 * *|0 0 * * 0"},
		// One starts with *: both must, and * matches every day.
		{"0 0 * * fri", "0 0 ? * 5"},
		{"0 0 */2 * fri", "0 0 1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31 * *&"},
	} {
		if alt, ok := strings.CutSuffix(c[1], "&"); ok {
			checkAnd(t, c[0], alt)
			continue
		}
		if a, b, ok := strings.Cut(c[1], "|"); ok {
			checkOr(t, c[0], a, b)
			continue
		}
		sameRuns(t, c[0], c[1])
	}
}

// checkOr checks that spec runs at the union of a's and b's times.
func checkOr(t *testing.T, spec, a, b string) {
	t.Helper()
	s, sa, sb := mustParse(t, spec), mustParse(t, a), mustParse(t, b)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	na, nb := sa.Next(at), sb.Next(at)
	for range 100 {
		want := na
		if nb.Before(na) {
			want = nb
		}
		got := s.Next(at)
		require.Equal(t, want, got, spec)
		at = got
		if !na.After(at) {
			na = sa.Next(at)
		}
		if !nb.After(at) {
			nb = sb.Next(at)
		}
	}
}

// checkAnd checks that every time of spec is one of restricted's that
// falls on a Friday, and that there are such times.
func checkAnd(t *testing.T, spec, restricted string) {
	t.Helper()
	s, r := mustParse(t, spec), mustParse(t, restricted)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 50 {
		want := r.Next(at)
		for want.Weekday() != time.Friday {
			want = r.Next(want)
		}
		at = s.Next(at)
		require.Equal(t, want, at, spec)
	}
}

func mustParse(t *testing.T, spec string) interface{ Next(time.Time) time.Time } {
	t.Helper()
	s, err := cron.Parse(spec, time.UTC)
	require.NoError(t, err, spec)
	return s
}

func TestZonePrefix(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	from := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for spec, want := range map[string]time.Time{
		"CRON_TZ=Asia/Tokyo 0 9 * * *":    time.Date(2026, 6, 2, 9, 0, 0, 0, tokyo),
		"TZ=Asia/Tokyo 0 9 * * *":         time.Date(2026, 6, 2, 9, 0, 0, 0, tokyo),
		"CRON_TZ=UTC 0 9 * * *":           time.Date(2026, 6, 2, 9, 0, 0, 0, time.UTC),
		"TZ=UTC @daily":                   time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC),
		"CRON_TZ=Asia/Tokyo 0 0 9 * * ?":  time.Date(2026, 6, 2, 9, 0, 0, 0, tokyo),
		"0 9 * * *":                       time.Date(2026, 6, 2, 9, 0, 0, 0, time.FixedZone("", 2*3600)),
		"TZ=Europe/Paris  30 11 * * *":    time.Date(2026, 6, 2, 11, 30, 0, 0, time.FixedZone("CEST", 2*3600)),
		"CRON_TZ=America/New_York @daily": time.Date(2026, 6, 2, 4, 0, 0, 0, time.UTC),
	} {
		s, err := cron.Parse(spec, time.FixedZone("", 2*3600))
		require.NoError(t, err, spec)
		got := s.Next(from)
		assert.True(t, want.Equal(got), "%s: got %v, want %v", spec, got, want)
	}
	s, err := cron.Parse("0 9 * * *", nil)
	require.NoError(t, err)
	assert.Equal(t, time.Local, s.Next(from).Location(), "a nil location is time.Local")
}

func TestEvery(t *testing.T) {
	s, err := cron.Parse("@every 1h30m", time.UTC)
	require.NoError(t, err)
	from := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	assert.Equal(t, from.Add(90*time.Minute), s.Next(from))
	s, err = cron.Parse("TZ=Asia/Tokyo @every 10s", time.UTC)
	require.NoError(t, err)
	assert.Equal(t, from.Add(10*time.Second), s.Next(from))
}

// Specs that no time matches are not errors: Next returns the zero Time,
// at once.
func TestNever(t *testing.T) {
	for _, spec := range []string{
		"0 0 30 2 *", "0 0 31 2,4,6,9,11 *", "0 0 0 30,31 feb ?", "0 0 31 4 *",
	} {
		s, err := cron.Parse(spec, time.UTC)
		require.NoError(t, err, spec)
		assert.Zero(t, s.Next(time.Now()), spec)
	}
	// Rare is not never: February 29 comes every 4 years, and skips 2100.
	s, err := cron.Parse("0 0 29 2 *", time.UTC)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2104, 2, 29, 0, 0, 0, 0, time.UTC), s.Next(time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC)))
	// With both day fields restricted, either matches: February 30 never
	// comes, but Mondays in February do.
	s, err = cron.Parse("0 0 30 2 mon", time.UTC)
	require.NoError(t, err)
	assert.Equal(t, time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC), s.Next(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)))
}

// TestLongestWait walks 29 February on a Sunday, the date and day of the
// week that wait longest for each other, over the 400-year Gregorian
// cycle: Next finds each, up to 40 years apart across a century year that
// is not a leap year, well within its 100-year horizon.
func TestLongestWait(t *testing.T) {
	s, err := cron.Parse("0 0 29 2 */7", time.UTC)
	require.NoError(t, err)
	var longest time.Duration
	n := 0
	for at := time.Date(2000, 3, 1, 0, 0, 0, 0, time.UTC); at.Year() < 2400; n++ {
		next := s.Next(at)
		require.False(t, next.IsZero(), "none after %v", at)
		require.Equal(t, time.Sunday, next.Weekday())
		if n > 0 {
			longest = max(longest, next.Sub(at))
		}
		if at.Year() == 2088 {
			assert.Equal(t, time.Date(2128, 2, 29, 0, 0, 0, 0, time.UTC), next, "the wait across 2100")
		}
		at = next
	}
	assert.Equal(t, 40*365+9, int(longest.Hours()/24), "40 years, with 9 leap days (not 2100), in days")
}

// Bad input gets a *ParseError naming the field and quoting its text.
func TestParseErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"":                             `cron: spec "": empty`,
		"   ":                          `cron: spec "   ": empty`,
		"* * * *":                      `cron: spec "* * * *": has 4 fields; want 5 (minute hour day-of-month month day-of-week) or 6 (second first)`,
		"* * * * * * *":                `cron: spec "* * * * * * *": has 7 fields; want 5 (minute hour day-of-month month day-of-week) or 6 (second first)`,
		"60 * * * *":                   `cron: minute "60": value 60 out of range 0-59`,
		"0 24 * * *":                   `cron: hour "24": value 24 out of range 0-23`,
		"0 0 0 * * *  ":                "",
		"60 0 0 * * *":                 `cron: second "60": value 60 out of range 0-59`,
		"0 0 0 * * 8":                  `cron: day of week "8": value 8 out of range 0-7`,
		"0 0 32 * *":                   `cron: day of month "32": value 32 out of range 1-31`,
		"0 0 0 * *":                    `cron: day of month "0": value 0 out of range 1-31`,
		"0 0 * 13 *":                   `cron: month "13": value 13 out of range 1-12`,
		"0 0 * 0 *":                    `cron: month "0": value 0 out of range 1-12`,
		"0 0 1,5-2 * *":                `cron: day of month "1,5-2": reversed range 5-2`,
		"0 0 * * fri-mon":              `cron: day of week "fri-mon": reversed range fri-mon`,
		"*/0 * * * *":                  `cron: minute "*/0": zero step`,
		"*/x * * * *":                  `cron: minute "*/x": step "x" is not a number`,
		"*/-1 * * * *":                 `cron: minute "*/-1": step "-1" is not a number`,
		"1/2/3 * * * *":                `cron: minute "1/2/3": step "2/3" is not a number`,
		"0 0 * foo *":                  `cron: month "foo": unknown name "foo"`,
		"0 0 * * monday":               `cron: day of week "monday": unknown name "monday"`,
		"0 0 L * *":                    `cron: day of month "L": "L" is not a number`,
		"0 0 * * 5#3":                  `cron: day of week "5#3": "5#3" is not a number`,
		"1,,2 * * * *":                 `cron: minute "1,,2": empty list item`,
		"-5 * * * *":                   `cron: minute "-5": missing value`,
		"5- * * * *":                   `cron: minute "5-": missing value`,
		"0 00000000001 * * *":          `cron: hour "00000000001": "00000000001" is not a number`,
		"0 99999999999999999999 * * *": `cron: hour "99999999999999999999": "99999999999999999999" is not a number`,
		"@weekly 1":                    `cron: descriptor "@weekly 1": takes no fields`,
		"@fortnightly":                 `cron: descriptor "@fortnightly": unknown; want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every`,
		"@every":                       `cron: @every "": want one duration, such as 1h30m`,
		"@every 0s":                    `cron: @every "0s": not positive`,
		"@every -1m":                   `cron: @every "-1m": not positive`,
		"@every 5":                     `cron: @every "5": not a duration, such as 1h30m`,
		"@every 1ns":                   `cron: @every "1ns": shorter than a second`,
		"@every 999ms":                 `cron: @every "999ms": shorter than a second`,
		"@every 1 h":                   `cron: @every "1 h": want one duration, such as 1h30m`,
		"TZ= 0 0 * * *":                `cron: zone "TZ=": empty zone name`,
		"CRON_TZ= @daily":              `cron: zone "CRON_TZ=": empty zone name`,
		"TZ=Mars/Olympus 0 0 * * *":    `cron: zone "Mars/Olympus": unknown zone`,
		"TZ=../../etc/passwd @daily":   `cron: zone "../../etc/passwd": unknown zone`,
		"TZ=UTC":                       `cron: spec "TZ=UTC": no fields after the zone`,
		strings.Repeat(" ", 1025):      `cron: spec "` + strings.Repeat(" ", 64) + `...": longer than 1024 bytes (1025)`,
	} {
		_, err := cron.Parse(spec, time.UTC)
		if want == "" {
			assert.NoError(t, err, spec)
			continue
		}
		require.Error(t, err, spec)
		assert.Equal(t, want, err.Error(), spec)
		var pe *cron.ParseError
		require.True(t, errors.As(err, &pe), spec)
		assert.Contains(t, want, `"`+pe.Text+`"`)
	}
	for _, spec := range []string{"@every 1s", "@every 1500ms", "@every 2562047h47m16.854775807s"} {
		_, err := cron.Parse(spec, time.UTC)
		assert.NoError(t, err, spec)
	}
	_, err := cron.Parse(strings.Repeat("1,", 511)+"1 * * * *", time.UTC)
	assert.Error(t, err, "1031 bytes")
	_, err = cron.Parse(strings.Repeat("1,", 505)+"1 * * * *", time.UTC)
	assert.NoError(t, err, "1019 bytes")
}

// ParseStrict refuses what users seldom mean, naming the field, and reads
// everything else as Parse does; Parse still reads the odd specs as ISC
// cron does.
func TestParseStrict(t *testing.T) {
	for spec, want := range map[string]string{
		"*/70 * * * *":       `cron: minute "*/70": step 70 is longer than the 60 values of 0-59 it steps through: only 0 would match`,
		"0 */90 * * * *":     `cron: minute "*/90": step 90 is longer than the 60 values of 0-59 it steps through: only 0 would match`,
		"0 0 */25 * * *":     `cron: hour "*/25": step 25 is longer than the 24 values of 0-23 it steps through: only 0 would match`,
		"0 0 */32 * *":       `cron: day of month "*/32": step 32 is longer than the 31 values of 1-31 it steps through: only 1 would match`,
		"0 0 1 */13 *":       `cron: month "*/13": step 13 is longer than the 12 values of 1-12 it steps through: only 1 would match`,
		"0 0 * * */8":        `cron: day of week "*/8": step 8 is longer than the 7 values of 0-6 it steps through: only 0 would match`,
		"10-20/12 * * * *":   `cron: minute "10-20/12": step 12 is longer than the 11 values of 10-20 it steps through: only 10 would match`,
		"0,50/15 * * * *":    `cron: minute "0,50/15": step 15 is longer than the 10 values of 50-59 it steps through: only 50 would match`,
		"0 0 * * 7/2":        `cron: day of week "7/2": step 2 has no value past 7 to step to: only 7 would match`,
		"10-20/11 * * * *":   `cron: minute "10-20/11": step 11 is as long as the 11 values of 10-20 it steps through: only 10 would match`,
		"50/10 * * * *":      `cron: minute "50/10": step 10 is as long as the 10 values of 50-59 it steps through: only 50 would match`,
		"0 9 * * MON-FRI/5":  `cron: day of week "MON-FRI/5": step 5 is as long as the 5 values of 1-5 it steps through: only 1 would match`,
		"0 0 * * 0-7/8":      `cron: day of week "0-7/8": step 8 is longer than the 7 values of 0-7 it steps through: only 0 would match`,
		"*/99999999 * * * *": `cron: minute "*/99999999": step 99999999 is longer than the 60 values of 0-59 it steps through: only 0 would match`,
	} {
		_, err := cron.ParseStrict(spec, time.UTC)
		require.Error(t, err, spec)
		assert.Equal(t, want, err.Error(), spec)
		var pe *cron.ParseError
		require.True(t, errors.As(err, &pe), spec)
		_, err = cron.Parse(spec, time.UTC)
		assert.NoError(t, err, "Parse reads %q as ISC cron does", spec)
	}
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, spec := range []string{"*/60 * * * *", "0 */24 * * *", "10-20/10 * * * *", "50/9 * * * *", "0 0 * * */7", "0 0 * * 0-7/6", "0 0 * * 0-7/7", "0/60 * * * *", "0-59/60 * * * *",
		"0 0/24 * * *", "0 0 1/31 * *", "0 0 1 1/12 *", "0 0 * * 0/7", "0 0 * * SUN/7", "0 0 1 jan/12 *",
		"*/7 5-50/3 1,2,3 * */2 1-5", "0 0 29 2 *", "0 0 30 2 mon", "0 0 30 2 *", "@hourly", "@every 90m", "CRON_TZ=Europe/Paris 0 */2 * * *"} {
		strict, err := cron.ParseStrict(spec, time.UTC)
		require.NoError(t, err, spec)
		lax, err := cron.Parse(spec, time.UTC)
		require.NoError(t, err, spec)
		at := from
		for range 5 {
			require.Equal(t, lax.Next(at), strict.Next(at), spec)
			at = lax.Next(at)
		}
	}
}

// The text an error quotes is cut to 64 bytes at a character boundary, so
// that a UI shows the user's text, not a broken character.
func TestParseErrorTextIsValidUTF8(t *testing.T) {
	field := "x" + strings.Repeat("é", 40)
	_, err := cron.Parse("0 0 * * "+field, time.UTC)
	var pe *cron.ParseError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.True(t, utf8.ValidString(pe.Text), "%q", pe.Text)
	assert.Equal(t, field[:63]+"...", pe.Text)
	assert.True(t, utf8.ValidString(err.Error()))
}

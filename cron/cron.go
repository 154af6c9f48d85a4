// Package cron parses cron expressions into schedules that are right
// across daylight-saving changes.
//
// Parse reads the five fields of crontab(5) (minute hour day-of-month month
// day-of-week), or six with seconds first as Spring and Quartz write them,
// and returns a [schedule.Schedule]:
//
//	s, err := cron.Parse("CRON_TZ=Europe/Paris 0 30 2 * * ?", nil)
//	next := s.Next(time.Now())
//
// Local times that a daylight-saving change skips or repeats follow the
// rules of ISC cron (cron(8)). A job at a fixed time of day, one with
// neither * nor a */n step in its minute and hour fields, runs once a day
// whatever the clocks do: at a time the clocks skip it runs when they jump,
// and at a time they repeat it runs at the first occurrence only. Any other
// job follows real time: it runs at every occurrence of its times, twice
// in a repeated hour and not at all in a skipped one.
//
// The schedules are immutable and safe for concurrent use.
//
// A Table runs tasks that users define, each a Task with a spec, a window,
// run-once, overlap, missed-run, timeout and retry policies and a named
// Handler, as schedule.Jobs, and applies changed definitions while they
// run. It refuses a definition that cannot run (Task.Validate), lists its
// tasks with their next run and last record (Table.Tasks), runs, pauses
// and resumes one on demand, and may follow a Source of definitions that
// every replica reads (Table.Follow). DecodeTasks reads definitions from
// JSON, refusing a field that Task does not have.
//
// See DESIGN.md for how the rules were chosen and what other parsers do.
package cron

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/circulation-go/circulation/schedule"
)

// MaxSpecLen is the length, in bytes, of the longest spec Parse accepts.
const MaxSpecLen = 1024

// A ParseError reports a spec that Parse rejects: the field at fault, its
// text, and why.
type ParseError struct {
	// Field names the part of the spec at fault: "spec", "zone",
	// "descriptor", "@every", "second", "minute", "hour", "day of month",
	// "month" or "day of week".
	Field string
	// Text is the offending text of the field; past 64 bytes, its first 64
	// at most, cut before a character, and "...".
	Text string
	// Reason says what is wrong with it.
	Reason string
}

func (e *ParseError) Error() string {
	return "cron: " + e.Field + " " + strconv.Quote(e.Text) + ": " + e.Reason
}

func parseError(field, text, reason string) *ParseError {
	return &ParseError{Field: field, Text: clip(text), Reason: reason}
}

// clip returns s, or past 64 bytes, its first 64 at most, cut before a
// character, and "...": what an error quotes of a user's text.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// Parse parses a cron spec whose times of day are read in loc; a nil loc
// means time.Local. A "CRON_TZ=<zone> " or "TZ=<zone> " prefix overrides
// loc with the named IANA zone.
//
// The spec has five fields (minute hour day-of-month month day-of-week) or
// six (second first). A field is *, or a comma-separated list of values
// and ranges (a-b), each optionally with a step (*/n, a-b/n, or a/n for
// a through the field's last value: Saturday, 6, in the day of the week,
// where 7/n is Sunday). Months and days of the week may be given by their
// English three-letter names in any case; Sunday is 0 or 7.
// ? means * in any field. When both day fields are restricted (neither
// starts with * or ?), a day matches if either matches, as crontab(5) says.
//
// The descriptors @yearly (or @annually), @monthly, @weekly, @daily (or
// @midnight) and @hourly stand for the usual fields, and "@every <d>" for
// schedule.Every(d), with d in time.ParseDuration's syntax and at least a
// second, the resolution of the fields.
//
// A spec that no time matches, such as "0 0 30 2 *", is not an error: its
// Schedule's Next returns the zero Time (Task.Validate refuses it). Any other spec Parse cannot read
// gets a *ParseError naming the field; Parse never panics.
func Parse(spec string, loc *time.Location) (schedule.Schedule, error) {
	return parse(spec, loc, false)
}

// ParseStrict is Parse for specs that users type. It refuses, with a
// *ParseError naming the field, a step that only the first of the values
// it steps through would match, which Parse reads as ISC cron does,
// although its author seldom meant what it does: a step longer than its
// values, such as "*/70 * * * *" and "0 */90 * * * *", which run every
// hour, at minute 0, or, in a range written out, as long as them, such
// as "10-20/11" or "MON-FRI/5", 10 alone and Monday alone. A step as long
// as the whole field, "*/60" or "0/60" in the minutes, is hourly, and is
// accepted.
//
// Task.Validate, and so a store of definitions and the admin page, reads
// a task's spec with ParseStrict; a Table loads it with Parse, so that a
// definition saved before runs as it did.
func ParseStrict(spec string, loc *time.Location) (schedule.Schedule, error) {
	return parse(spec, loc, true)
}

func parse(spec string, loc *time.Location, strict bool) (schedule.Schedule, error) {
	if len(spec) > MaxSpecLen {
		return nil, parseError("spec", spec, "longer than "+strconv.Itoa(MaxSpecLen)+" bytes ("+strconv.Itoa(len(spec))+")")
	}
	if loc == nil {
		loc = time.Local
	}
	f := strings.Fields(spec)
	if len(f) == 0 {
		return nil, parseError("spec", spec, "empty")
	}
	if zone, ok := zonePrefix(f[0]); ok {
		if zone == "" {
			return nil, parseError("zone", f[0], "empty zone name")
		}
		l, err := loadZone(zone)
		if err != nil {
			return nil, parseError("zone", zone, "unknown zone")
		}
		loc, f = l, f[1:]
		if len(f) == 0 {
			return nil, parseError("spec", spec, "no fields after the zone")
		}
	}
	if strings.HasPrefix(f[0], "@") {
		return parseDescriptor(f, loc)
	}
	return parseFields(f, loc, strict)
}

func zonePrefix(s string) (string, bool) {
	for _, p := range [...]string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(s, p) {
			return s[len(p):], true
		}
	}
	return "", false
}

var descriptors = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@midnight": "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
}

func parseDescriptor(f []string, loc *time.Location) (schedule.Schedule, error) {
	name := strings.ToLower(f[0])
	if name == "@every" {
		if len(f) != 2 {
			return nil, parseError("@every", strings.Join(f[1:], " "), "want one duration, such as 1h30m")
		}
		d, err := time.ParseDuration(f[1])
		if err != nil {
			return nil, parseError("@every", f[1], "not a duration, such as 1h30m")
		}
		switch {
		case d <= 0:
			return nil, parseError("@every", f[1], "not positive")
		case d < time.Second:
			return nil, parseError("@every", f[1], "shorter than a second")
		}
		return schedule.Every(d), nil
	}
	fields, ok := descriptors[name]
	if !ok {
		return nil, parseError("descriptor", f[0], "unknown; want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every")
	}
	if len(f) != 1 {
		return nil, parseError("descriptor", strings.Join(f, " "), "takes no fields")
	}
	return parseFields(strings.Fields(fields), loc, false)
}

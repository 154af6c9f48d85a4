package schedule

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Calendar says which times a schedule leaves out: public holidays, a
// shutdown week, the last business day. Its implementations must be safe
// for concurrent use.
type Calendar interface {
	// Excluded reports whether t is left out and, if it is, the end of the
	// span that leaves it out: the first instant after t that the span
	// does not hold. The end must be after t.
	Excluded(t time.Time) (end time.Time, ok bool)
}

// Except returns the times of s that c does not exclude. An excluded slot
// is not a slot: a Job neither runs it nor reports it Missed, and catches
// up none of them after a restart; Next, and so a Job's Next and every
// preview, passes over them. Quartz's Calendar; Temporal's exclusion
// calendars.
//
// Next skips an excluded span at once, not slot by slot, and gives up,
// returning the zero Time, after 100,000 spans in a row: a Calendar that
// excludes every time makes a schedule with no next time, not a Next that
// never returns. It panics on a nil s or c.
func Except(s Schedule, c Calendar) Schedule {
	if s == nil || c == nil {
		panic("schedule: Except with a nil Schedule or Calendar")
	}
	return &except{s: s, c: c}
}

// maxExcepted bounds the excluded spans Except's Next passes over in one
// call.
const maxExcepted = 100_000

type except struct {
	s Schedule
	c Calendar
}

func (e *except) Next(t time.Time) time.Time {
	for range maxExcepted {
		n := e.s.Next(t)
		if n.IsZero() || !n.After(t) {
			return time.Time{}
		}
		end, ok := e.c.Excluded(n)
		if !ok {
			return n
		}
		if !end.After(n) {
			return time.Time{} // a Calendar that breaks its contract ends the schedule
		}
		// The first time of s at or after the end of the span.
		t = end.Add(-time.Nanosecond)
		if !t.After(n) {
			t = n
		}
	}
	return time.Time{}
}

// Days is a Calendar that excludes whole days of its zone: each from its
// 00:00 to the next day's, whatever the length daylight saving gives it
// (23 or 25 hours), so that a day off is a day off where the job's users
// live. Make it with ParseDays; the zero Days excludes nothing, in UTC.
type Days struct {
	loc   *time.Location
	spans []daySpan // sorted, not overlapping, not adjacent
}

// A daySpan is the days [from, to], as days since 1970-01-01 in the
// proleptic Gregorian calendar.
type daySpan struct{ from, to int64 }

// MaxDays bounds the dates and ranges ParseDays takes.
const MaxDays = 10_000

// ParseDays returns the Days of loc (nil means UTC) that the list names:
// dates in ISO 8601, "2026-12-25", and ranges of them, both ends
// included, "2026-12-24..2026-12-31". An item it cannot read, a date that
// does not exist ("2026-02-30"), a reversed range, or more than MaxDays
// items is an error that quotes the item.
func ParseDays(loc *time.Location, items ...string) (*Days, error) {
	if loc == nil {
		loc = time.UTC
	}
	if len(items) > MaxDays {
		return nil, errors.New("schedule: " + strconv.Itoa(len(items)) + " days and ranges, more than " + strconv.Itoa(MaxDays))
	}
	d := &Days{loc: loc}
	for _, item := range items {
		from, to, isRange := strings.Cut(strings.TrimSpace(item), "..")
		a, err := parseDay(from)
		if err != nil {
			return nil, dayError(item, err.Error())
		}
		b := a
		if isRange {
			if b, err = parseDay(to); err != nil {
				return nil, dayError(item, err.Error())
			}
			if b < a {
				return nil, dayError(item, "the range ends before it starts")
			}
		}
		d.spans = append(d.spans, daySpan{a, b})
	}
	slices.SortFunc(d.spans, func(x, y daySpan) int {
		switch {
		case x.from < y.from:
			return -1
		case x.from > y.from:
			return 1
		}
		return 0
	})
	merged := d.spans[:0]
	for _, s := range d.spans {
		if n := len(merged); n > 0 && s.from <= merged[n-1].to+1 {
			merged[n-1].to = max(merged[n-1].to, s.to)
			continue
		}
		merged = append(merged, s)
	}
	d.spans = merged
	return d, nil
}

func dayError(item, reason string) error {
	if len(item) > 64 {
		item = strings.ToValidUTF8(item[:64], "") + "..."
	}
	return errors.New("schedule: day " + strconv.Quote(item) + ": " + reason)
}

// parseDay reads a date in ISO 8601, YYYY-MM-DD, as days since 1970-01-01.
func parseDay(s string) (int64, error) {
	s = strings.TrimSpace(s)
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		if len(s) == 10 && s[4] == '-' && s[7] == '-' && strings.Trim(s[:4]+s[5:7]+s[8:], "0123456789") == "" {
			return 0, errors.New("there is no such date")
		}
		return 0, errors.New("want a date such as 2026-12-25, or a range such as 2026-12-24..2026-12-31")
	}
	return epochDay(t), nil
}

// epochDay returns the days from 1970-01-01 to t's date, in t's location,
// negative before it.
func epochDay(t time.Time) int64 {
	y, m, d := t.Date()
	u := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()
	if u < 0 {
		return -((-u + 86399) / 86400)
	}
	return u / 86400
}

// startOfDay returns the first instant of the day n days after
// 1970-01-01 in loc: its 00:00, or, where the zone skips midnight, the
// jump, and where the clocks go back across midnight, the first of its
// two midnights.
func startOfDay(n int64, loc *time.Location) time.Time {
	y, m, d := time.Unix(n*86400, 0).UTC().Date()
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if epochDay(t.In(loc)) < n {
		// The time package took the skipped midnight in the offset
		// before the jump, an instant of the day before: the day
		// begins where that offset ends.
		if _, end := t.In(loc).ZoneBounds(); !end.IsZero() {
			t = end
		}
		return t
	}
	// Where midnight comes twice, the time package may take the second:
	// the first is midnight in the offset before the change.
	if start, _ := t.In(loc).ZoneBounds(); !start.IsZero() {
		_, prev := start.Add(-time.Second).In(loc).Zone()
		wall := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		if first := wall.Add(-time.Duration(prev) * time.Second); first.Before(start) && epochDay(first.In(loc)) == n {
			t = first
		}
	}
	return t
}

// Location returns the zone in which d's days begin and end.
func (d *Days) Location() *time.Location {
	if d.loc == nil {
		return time.UTC
	}
	return d.loc
}

// Excluded reports whether t falls on one of d's days in d's zone, and if
// so, the start of the first day after its span.
func (d *Days) Excluded(t time.Time) (time.Time, bool) {
	loc := d.Location()
	n := epochDay(t.In(loc))
	i, found := slices.BinarySearchFunc(d.spans, n, func(s daySpan, n int64) int {
		switch {
		case s.to < n:
			return -1
		case s.from > n:
			return 1
		}
		return 0
	})
	if !found {
		return time.Time{}, false
	}
	end := startOfDay(d.spans[i].to+1, loc)
	if !end.After(t) {
		// The clocks went back across midnight, into a day of the span
		// again: it ends at the next midnight of the offset t is in.
		in := t.In(loc)
		y, m, day := in.Date()
		_, off := in.Zone()
		end = time.Date(y, m, day+1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(off) * time.Second)
		if !end.After(t) {
			end = t.Add(time.Nanosecond)
		}
	}
	return end, true
}

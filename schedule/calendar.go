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
// returning the zero Time, after 100,000 spans in a row (two centuries of
// excluded weekends): a Calendar that excludes every time makes a
// schedule with no next time, not a Next that never returns. It panics
// on a nil s or c.
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
// live. Make it with ParseDays.
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
	t, err := time.Parse(time.DateOnly, strings.TrimSpace(s))
	if err != nil {
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
// jump.
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
	}
	return t
}

// Location returns the zone in which d's days begin and end.
func (d *Days) Location() *time.Location { return d.loc }

// Excluded reports whether t falls on one of d's days in d's zone, and if
// so, the start of the first day after its span.
func (d *Days) Excluded(t time.Time) (time.Time, bool) {
	n := epochDay(t.In(d.loc))
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
	return startOfDay(d.spans[i].to+1, d.loc), true
}

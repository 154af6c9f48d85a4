package cron

import (
	"math/bits"
	"time"
)

// A spec is a parsed cron spec: the set of local times its fields match,
// and how those times map to instants when the clocks change.
type spec struct {
	second, minute uint64 // bit i: second or minute i
	hour           uint32 // bit i: hour i
	dom            uint32 // bit i: day of the month i, 1 to 31
	month          uint16 // bit i: month i, 1 to 12
	dow            uint8  // bit i: day of the week i, 0 (Sunday) to 6

	// dayOr is set when both day fields are restricted: a day matches if
	// either field matches it. Otherwise both must.
	dayOr bool
	// pinned is set when neither the minute nor the hour field starts with
	// * or ?: the job runs at fixed times of day, once for each, even when
	// the clocks skip or repeat them.
	pinned bool
	// never is set when no day matches: the day of the month is restricted
	// to days that none of the months has.
	never bool
	loc   *time.Location
}

const (
	// horizon bounds the search of Next: it looks for a matching time up
	// to this many seconds (a little over 100 years) past t. A spec that
	// matches at all matches again within 40 years: 29 February on a
	// given day of the week waits longest, across a century year that is
	// not a leap year (DESIGN.md, Bounds).
	horizon = 100 * 366 * 86400
	// maxUnix bounds the instants Next handles, a million years either
	// side of 1970, so that no arithmetic on them overflows.
	maxUnix = 1_000_000 * 366 * 86400
	// maxPeriods bounds the zone periods Next walks through, in case a
	// location reports periods that do not advance.
	maxPeriods = 1000
)

// Next returns the first time strictly after t that the spec matches, in
// the spec's location, or the zero Time if there is none within 100
// years of t. Times are whole seconds.
func (s *spec) Next(t time.Time) time.Time {
	if s.never {
		return time.Time{}
	}
	u := t.Unix() + 1 // the first whole second after t
	if u > maxUnix || u < -maxUnix {
		return time.Time{}
	}
	limit := u + horizon // in local wall seconds, a day's slack on u is fine
	for range maxPeriods {
		// The period of the zone containing u: its offset, off, holds for
		// the instants [start, end), whose local wall times (the local
		// time, read as if it were UTC, in seconds) are [start+off,
		// end+off).
		z := zoneAt(s.loc, u)
		lo := u + int64(z.off)
		hi := limit
		if z.hasEnd {
			hi = min(hi, z.end+int64(z.off))
		}
		if s.pinned && z.hasStart {
			// The clocks went back at start: the wall times up to where
			// the previous period ended came before, and a pinned job ran
			// at their first occurrence.
			_, prev := time.Unix(z.start-1, 0).In(s.loc).Zone()
			lo = max(lo, z.start+int64(prev))
		}
		if lo < hi {
			if w, ok := s.nextWall(lo, hi); ok {
				return time.Unix(w-int64(z.off), 0).In(s.loc)
			}
		}
		if !z.hasEnd || z.end+int64(z.off) >= limit {
			return time.Time{}
		}
		if s.pinned {
			// The clocks go forward at end, skipping the wall times up to
			// where the next period begins: a pinned job due then runs
			// when they jump.
			_, next := time.Unix(z.end, 0).In(s.loc).Zone()
			if gap := z.end + int64(next); gap > hi {
				if _, ok := s.nextWall(hi, gap); ok {
					return time.Unix(z.end, 0).In(s.loc)
				}
			}
		}
		u = z.end
	}
	return time.Time{}
}

// A period is a span of instants [start, end) over which a location's
// offset from UTC is off. It may be one of several consecutive spans with
// the same offset.
type period struct {
	off              int
	start, end       int64
	hasStart, hasEnd bool // false for a span open on that side
}

// zoneAt returns the period of loc that holds the instant u.
func zoneAt(loc *time.Location, u int64) period {
	in := time.Unix(u, 0).In(loc)
	_, off := in.Zone()
	start, end := in.ZoneBounds()
	p := period{off: off, start: start.Unix(), end: end.Unix(), hasStart: !start.IsZero(), hasEnd: !end.IsZero()}
	if p.hasEnd && p.end <= u {
		// Past a zone's last listed transition, Go derives the periods
		// from its rule, and cuts them at year ends; in a leap year it
		// cuts a day early, at December 31 UTC, and reports that end for
		// the instants of that last day. The span that follows starts at
		// the true year end: take it from the day after.
		s, _ := time.Unix(u+86400, 0).In(loc).ZoneBounds()
		if !s.IsZero() && s.Unix() > u {
			p.end = s.Unix()
		} else {
			p.end = u + 1
		}
	}
	return p
}

// nextWall returns the first wall time in [lo, hi) that the fields match.
// Wall times are local times read as if they were UTC, in seconds since
// 1970.
func (s *spec) nextWall(lo, hi int64) (int64, bool) {
	days := floorDiv(lo, 86400)
	sod := int(lo - days*86400)
	y, mo, d := civil(days)
	h, mi, sec := sod/3600, sod/60%60, sod%60
	for days*86400 < hi {
		if s.month&(1<<mo) == 0 {
			next := nextBit(uint64(s.month), mo)
			if next > 12 {
				y, next = y+1, nextBit(uint64(s.month), 1)
			}
			mo, d, h, mi, sec = next, 1, 0, 0, 0
			days = daysOf(y, mo, d)
			continue
		}
		if d > monthDays(y, mo) {
			mo, d, h, mi, sec = mo+1, 1, 0, 0, 0
			if mo > 12 {
				y, mo = y+1, 1
			}
			continue
		}
		if !s.dayMatches(d, days) {
			d, days, h, mi, sec = d+1, days+1, 0, 0, 0
			continue
		}
		nh := nextBit(uint64(s.hour), h)
		if nh >= 24 {
			d, days, h, mi, sec = d+1, days+1, 0, 0, 0
			continue
		}
		if nh != h {
			h, mi, sec = nh, 0, 0
		}
		nm := nextBit(s.minute, mi)
		if nm >= 60 {
			h, mi, sec = h+1, 0, 0
			continue
		}
		if nm != mi {
			mi, sec = nm, 0
		}
		ns := nextBit(s.second, sec)
		if ns >= 60 {
			mi, sec = mi+1, 0
			continue
		}
		w := days*86400 + int64(h*3600+mi*60+ns)
		return w, w < hi
	}
	return 0, false
}

// dayMatches reports whether the day fields match day d of its month,
// which is days days after 1970-01-01.
func (s *spec) dayMatches(d int, days int64) bool {
	dom := s.dom&(1<<d) != 0
	dow := s.dow&(1<<((days%7+11)%7)) != 0 // 1970-01-01 was a Thursday
	if s.dayOr {
		return dom || dow
	}
	return dom && dow
}

// satisfiable reports whether some day matches. Every month has every day
// of the week, and a day-of-month field that starts with * has the 1st, so
// only a restricted day of the month can rule out every day: when the day
// of the week is not also restricted, and none of its days is in any of
// the months.
func (s *spec) satisfiable() bool {
	if s.dayOr {
		return true
	}
	for mo := 1; mo <= 12; mo++ {
		if s.month&(1<<mo) != 0 && s.dom&(1<<(monthDays(2000, mo)+1)-1) != 0 {
			return true
		}
	}
	return false
}

// nextBit returns the lowest set bit of b at or above from, or 64.
func nextBit(b uint64, from int) int {
	return bits.TrailingZeros64(b &^ (1<<from - 1))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

func monthDays(y int64, mo int) int {
	switch mo {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysOf returns the days from 1970-01-01 to y-mo-d in the proleptic
// Gregorian calendar (Howard Hinnant's days_from_civil).
func daysOf(y int64, mo, d int) int64 {
	if mo <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	doy := int64((153*((mo+9)%12)+2)/5 + d - 1)
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civil is the inverse of daysOf.
func civil(days int64) (y int64, mo, d int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	mo = int(mp + 3)
	if mo > 12 {
		mo -= 12
	}
	y = yoe + era*400
	if mo <= 2 {
		y++
	}
	return y, mo, d
}

package cron

import (
	"errors"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// Describe returns spec in plain English, for a person to check what they
// typed: "At 09:00, Monday through Friday" for "0 9 * * 1-5", "Every 5
// minutes" for "*/5 * * * *", "Every 1h30m0s" for "@every 90m".
//
// It reads every spec that Parse reads, and says what Parse's schedule
// does with it. Times of day are in 24-hour HH:MM, or HH:MM:SS when a
// second is not 0; a CRON_TZ or TZ prefix reads "in <zone>". When both
// day fields are restricted, it says that a day matching either runs:
// "At 00:00 on day 13 of the month, or on Friday". A job at fixed times
// of day (see the package doc) gets a last clause on what it does when
// the clocks skip or repeat its times, unless its zone is named and its
// clocks skip or repeat none of them in the years ahead (a spec without a
// zone runs in its caller's, which may change): "CRON_TZ=America/New_York
// 30 2 * * *" gets it, "CRON_TZ=America/New_York 0 9 * * *" does not. A spec that no day matches says that it never
// runs. The times of "@every <d>" do not depend on a zone, and its
// description names none.
//
// The wording is for people: it may change between versions, and it is
// not meant to be parsed. A spec gets the same description whenever
// Describe is called, given the same tz database.
//
// A spec that ParseStrict refuses, such as "*/70 * * * *", is described
// as Parse reads it ("Every hour"), with the reason it does less than it
// seems to.
//
// For a spec that Parse rejects, Describe returns the error of
// Parse(spec, time.UTC) unchanged: a *ParseError. Describe never panics,
// and is safe for concurrent use.
func Describe(spec string) (string, error) {
	s, err := Parse(spec, time.UTC)
	if err != nil {
		return "", err
	}
	d := describe(s, strings.Fields(spec))
	var pe *ParseError
	if _, err := ParseStrict(spec, time.UTC); errors.As(err, &pe) {
		// A spec that ParseStrict refuses, read as Parse reads it: say
		// why it does less than it seems to.
		d += "; in the " + pe.Field + " " + strconv.Quote(pe.Text) + ", the " + pe.Reason
	}
	return d, nil
}

// describe describes s, which Parse returned for a spec of the fields f.
func describe(s schedule.Schedule, f []string) string {
	zone, hasZone := zonePrefix(f[0]) // Parse checked that a field follows
	if hasZone {
		f = f[1:]
	}
	sp, ok := s.(*spec)
	if !ok {
		// Parse returns a *spec for every form but "@every <d>", whose
		// one duration it has checked. Its times do not depend on the
		// zone.
		d, _ := time.ParseDuration(f[len(f)-1])
		return "Every " + d.String()
	}
	if strings.HasPrefix(f[0], "@") {
		f = strings.Fields(descriptors[strings.ToLower(f[0])])
	}
	if len(f) == 5 {
		f = append([]string{"0"}, f...)
	}
	text := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	sec := set{&seconds, sp.second, text(0)}
	minute := set{&minutes, sp.minute, text(1)}
	hour := set{&hours, uint64(sp.hour), text(2)}
	dom := set{&doms, uint64(sp.dom), text(3)}
	month := set{&months, uint64(sp.month), text(4)}
	dow := set{&dows, uint64(sp.dow), text(5)}

	d := describeTime(sec, minute, hour)
	if hasZone {
		d += " in " + zone
	}
	days, monthSaid := describeDays(dom, month, dow, sp.dayOr)
	d += days
	if !month.full() && !monthSaid {
		if days != "" || hasZone {
			d += ","
		}
		d += " in " + enumerate(calendarNames(month), "and")
	}
	switch {
	case sp.never:
		d += "; never runs, as its months have no such day"
	case sp.pinned && (!hasZone || zone == "Local" || atAJump(sec, minute, hour, clockJumps(sp.loc))):
		// The zone is the caller's, or one whose clocks skip or repeat
		// one of the times.
		times := "one of its times"
		if sec.count()*minute.count()*hour.count() == 1 {
			times = "its time"
		}
		d += "; if the clocks skip or repeat " + times + ", it runs once (at the jump if skipped)"
	}
	return strings.ToUpper(d[:1]) + d[1:]
}

// A set is the values a field of a spec matches, and the field's text.
type set struct {
	fd   *field
	bits uint64 // bit i: value i
	text string
}

func (s set) count() int { return bits.OnesCount64(s.bits) }
func (s set) first() int { return bits.TrailingZeros64(s.bits) }
func (s set) last() int  { return 63 - bits.LeadingZeros64(s.bits) }

// full reports whether s has every value of its field.
func (s set) full() bool {
	all := uint64(1)<<(s.fd.last()+1) - 1
	return s.bits == all&^(1<<s.fd.min-1)
}

// run reports whether s is a run of consecutive values.
func (s set) run() bool { return s.last()-s.first()+1 == s.count() }

// step returns n for a field written as one item with a step n, such as
// */5 or 10-50/10, whose values are worth calling "every n": those that
// step through the whole field, or four values at least. Otherwise, and
// for a step that leaves one value, it returns 0: the field reads better
// as a list.
func (s set) step() int {
	if s.count() < 2 || !strings.Contains(s.text, "/") || strings.Contains(s.text, ",") {
		return 0
	}
	n := bits.TrailingZeros64(s.bits&^(1<<s.first())) - s.first()
	if !s.whole(n) && s.count() < 4 {
		return 0
	}
	return n
}

// whole reports whether stepping by n from the field's first value gives
// s: the field's values every n, from its first to its last, with no
// shorter step where the field wraps around.
func (s set) whole(n int) bool {
	return s.first() == s.fd.min && s.last()+n == s.fd.max+1
}

// uniform reports whether s has the field's values every n, n ≥ 1, from
// its first to its last.
func (s set) uniform() bool {
	n := s.step()
	return s.full() || n > 0 && s.whole(n)
}

// list reports whether s reads as a list of values and ranges: neither
// full nor a step.
func (s set) list() bool { return !s.full() && s.step() == 0 }

func (s set) values() []int {
	var v []int
	for b := s.bits; b != 0; b &= b - 1 {
		v = append(v, bits.TrailingZeros64(b))
	}
	return v
}

// describeTime describes the times of day of the fields sec, min and
// hour, in lower case.
func describeTime(sec, minute, hour set) string {
	withSec := sec.bits != 1
	clock := func(h, m, s int) string {
		c := pad2(h) + ":" + pad2(m)
		if withSec {
			c += ":" + pad2(s)
		}
		return c
	}
	switch {
	case sec.count() == 1 && minute.count() == 1:
		return describeHours(hour, minute.first(), sec.first(), clock)
	case sec.count()*minute.count()*hour.count() <= 4:
		var times []string
		for _, h := range hour.values() {
			for _, m := range minute.values() {
				for _, s := range sec.values() {
					times = append(times, clock(h, m, s))
				}
			}
		}
		return "at " + enumerate(times, "and")
	case sec.count() == 1:
		return describeMinutes(minute, hour, sec.first(), clock)
	}
	return describeSeconds(sec, minute, hour, clock)
}

// describeHours describes the times of a spec with one minute, m, and one
// second, s.
func describeHours(hour set, m, s int, clock func(h, m, s int) string) string {
	switch {
	case hour.full() && m == 0 && s == 0:
		return "every hour"
	case hour.full() && s == 0:
		return "at minute " + strconv.Itoa(m) + " past every hour"
	case hour.full():
		return "at second " + strconv.Itoa(s) + " of minute " + strconv.Itoa(m) + " past every hour"
	}
	if n := hour.step(); n > 0 && hour.whole(n) && m == 0 && s == 0 {
		return "every " + strconv.Itoa(n) + " hours"
	}
	return timed(hour, "hour", func(h int) string { return clock(h, m, s) })
}

// describeMinutes describes the times of a spec with one second, s, and
// several minutes.
func describeMinutes(minute, hour set, s int, clock func(h, m, s int) string) string {
	if hour.count() == 1 {
		h := hour.first()
		return timed(minute, "minute", func(m int) string { return clock(h, m, s) })
	}
	if !hour.full() && hour.run() && minute.uniform() {
		return "every " + plural(max(minute.step(), 1), "minute") + " from " +
			clock(hour.first(), minute.first(), s) + " through " + clock(hour.last(), minute.last(), s)
	}
	d := lead(minute, "minute")
	switch {
	case !hour.full():
		d += " past " + noun(hour, "hour")
	case minute.list():
		d += " past every hour"
	}
	if s != 0 {
		d += ", at second " + strconv.Itoa(s)
	}
	return d
}

// describeSeconds describes the times of a spec with several seconds.
func describeSeconds(sec, minute, hour set, clock func(h, m, s int) string) string {
	if minute.count() == 1 && hour.count() == 1 {
		h, m := hour.first(), minute.first()
		return timed(sec, "second", func(s int) string { return clock(h, m, s) })
	}
	if minute.full() && hour.full() {
		if sec.list() {
			return lead(sec, "second") + " past every minute"
		}
		return lead(sec, "second")
	}
	if sec.uniform() && hour.run() && (minute.full() || hour.count() == 1 && minute.run()) {
		return "every " + plural(max(sec.step(), 1), "second") + " from " +
			clock(hour.first(), minute.first(), sec.first()) + " through " + clock(hour.last(), minute.last(), sec.last())
	}
	d := lead(sec, "second")
	if minute.full() {
		if sec.list() {
			d += " past every minute"
		}
		return d + " of " + noun(hour, "hour")
	}
	d += " of " + noun(minute, "minute")
	switch {
	case !hour.full():
		d += " past " + noun(hour, "hour")
	case minute.list():
		d += " past every hour"
	}
	return d
}

// lead describes s to begin a description: "every minute", "every 5
// minutes", "every 10 minutes from minute 10 through 50", "at minutes 0
// and 30".
func lead(s set, unit string) string {
	if s.list() {
		return "at " + numbers(s, unit)
	}
	return everyN(s, unit, plural)
}

// noun describes s to qualify a finer field: "every hour", "every 2nd
// hour", "every 2nd hour from hour 8 through 18", "hours 9 and 17".
func noun(s set, unit string) string {
	if s.list() {
		return numbers(s, unit)
	}
	return everyN(s, unit, ordinal)
}

// everyN describes s, full or a step, as "every" and how many units, with
// the range of a step that is not the whole field.
func everyN(s set, unit string, units func(n int, unit string) string) string {
	n := max(s.step(), 1)
	d := "every " + units(n, unit)
	if !s.full() && !s.whole(n) {
		d += " from " + unit + " " + strconv.Itoa(s.first()) + " through " + strconv.Itoa(s.last())
	}
	return d
}

// numbers lists the values of s after the unit: "minute 5", "minutes 0
// and 30", "hours 9 through 17".
func numbers(s set, unit string) string {
	if s.count() > 1 {
		unit += "s"
	}
	var items []string
	for _, r := range consecutive(s.values()) {
		if r[1]-r[0] >= 2 {
			items = append(items, strconv.Itoa(r[0])+" through "+strconv.Itoa(r[1]))
			continue
		}
		for v := r[0]; v <= r[1]; v++ {
			items = append(items, strconv.Itoa(v))
		}
	}
	return unit + " " + enumerate(items, "and")
}

// timed describes the values of s as times of day, each given by at:
// "every 10 minutes from 09:10 through 09:50", "at 08:00 and every hour
// from 10:00 through 12:00".
func timed(s set, unit string, at func(int) string) string {
	if n := s.step(); n > 0 || s.full() {
		return "every " + plural(max(n, 1), unit) + " from " + at(s.first()) + " through " + at(s.last())
	}
	var items []string
	prev := "" // "at" after a single time, "from" after a range
	for _, r := range consecutive(s.values()) {
		if r[1]-r[0] >= 2 {
			item := "from " + at(r[0]) + " through " + at(r[1])
			if prev != "from" {
				item = "every " + unit + " " + item
			}
			items, prev = append(items, item), "from"
			continue
		}
		for v := r[0]; v <= r[1]; v++ {
			item := at(v)
			if prev != "at" {
				item = "at " + item
			}
			items, prev = append(items, item), "at"
		}
	}
	return enumerate(items, "and")
}

// describeDays describes the days of the fields, in lower case, to follow
// the times: "" for every day, " on day 1 of the month", ", Monday through
// Friday", " on day 13 of the month, or on Friday". It reports whether it
// named the months, as in " on day 1 of January and July"; otherwise the
// caller does.
func describeDays(dom, month, dow set, dayOr bool) (d string, monthSaid bool) {
	allDom, allDow := dom.full(), dow.full()
	if dayOr && (allDom || allDow) {
		// A day matches if either field matches, and one matches every
		// day.
		allDom, allDow = true, true
	}
	if !allDom {
		of := " of the month"
		if !dayOr && !month.full() {
			of, monthSaid = " of "+enumerate(calendarNames(month), "and"), true
		}
		switch {
		case !dayOr && dom.count() == 1 && month.count() == 1:
			d = " on " + time.Month(month.first()).String() + " " + strconv.Itoa(dom.first())
		case !dom.list():
			d = ", " + lead(dom, "day") + of // a step: its range, as months vary
		default:
			d = " on " + numbers(dom, "day") + of
		}
	}
	if !allDow {
		days := calendarNames(dow)
		switch {
		case dayOr:
			d += ", or on " + enumerate(days, "and")
		case !allDom:
			d += ", if it is " + enumerate(days, "or")
		case slices.ContainsFunc(days, func(day string) bool { return strings.Contains(day, " through ") }):
			d += ", " + enumerate(days, "and")
		default:
			d += ", only on " + enumerate(days, "and")
		}
	}
	return d, monthSaid
}

// calendarNames lists the months or days of the week of s by name, runs
// of three or more as "March through May". The days of the week start on
// Monday, and both kinds wrap around: "Saturday and Sunday", "November
// through February".
func calendarNames(s set) []string {
	var order []int // the field's values in the order they are named
	name := func(v int) string { return time.Month(v).String() }
	if s.fd == &dows {
		order = []int{1, 2, 3, 4, 5, 6, 0}
		name = func(v int) string { return time.Weekday(v).String() }
	} else {
		for v := s.fd.min; v <= s.fd.max; v++ {
			order = append(order, v)
		}
	}
	var in []int // positions in order of the values of s
	for i, v := range order {
		if s.bits&(1<<v) != 0 {
			in = append(in, i)
		}
	}
	r := consecutive(in)
	if n := len(r); n > 1 && r[0][0] == 0 && r[n-1][1] == len(order)-1 {
		// The last run goes on into the first, past the end of the
		// order: say it first, as one.
		wrap := [2]int{r[n-1][0], r[0][1] + len(order)}
		r = append([][2]int{wrap}, r[1:n-1]...)
	}
	var items []string
	at := func(i int) string { return name(order[i%len(order)]) }
	for _, x := range r {
		if x[1]-x[0] >= 2 {
			items = append(items, at(x[0])+" through "+at(x[1]))
			continue
		}
		for i := x[0]; i <= x[1]; i++ {
			items = append(items, at(i))
		}
	}
	return items
}

// clockJumps returns the times of day that loc's clocks skip or repeat
// from 2026 on, over its next 20 periods of one offset (ten years of
// daylight saving, or fewer where the time package cuts the periods at
// year ends, as it does past a zone's listed transitions), as far as the
// time package knows: ranges [from, to)
// of seconds since midnight, a range across midnight cut in two.
// Describe's answer for a zone must not depend on when it is called.
func clockJumps(loc *time.Location) [][2]int {
	var jumps [][2]int
	u := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for range 20 {
		p := zoneAt(loc, u)
		if !p.hasEnd {
			break
		}
		if _, off := time.Unix(p.end, 0).In(loc).Zone(); off != p.off {
			// The wall clock just before the change and just after it.
			a, b := p.end+int64(p.off), p.end+int64(off)
			if b < a {
				a, b = b, a
			}
			if b-a >= 86400 {
				return [][2]int{{0, 86400}}
			}
			from := int(a - floorDiv(a, 86400)*86400)
			to := from + int(b-a)
			if to <= 86400 {
				jumps = append(jumps, [2]int{from, to})
			} else {
				jumps = append(jumps, [2]int{from, 86400}, [2]int{0, to - 86400})
			}
		}
		u = p.end
	}
	return jumps
}

// atAJump reports whether a time of day of the fields sec, minute and hour
// is in one of jumps.
func atAJump(sec, minute, hour set, jumps [][2]int) bool {
	for _, j := range jumps {
		for h := hour.first(); h <= hour.last(); h++ {
			if hour.bits&(1<<h) == 0 || (h+1)*3600 <= j[0] || h*3600 >= j[1] {
				continue
			}
			for m := minute.first(); m <= minute.last(); m++ {
				if minute.bits&(1<<m) == 0 {
					continue
				}
				for s := sec.first(); s <= sec.last(); s++ {
					if t := h*3600 + m*60 + s; sec.bits&(1<<s) != 0 && t >= j[0] && t < j[1] {
						return true
					}
				}
			}
		}
	}
	return false
}

package cron

import (
	"strconv"
	"strings"
	"time"
)

// A field describes one of the six fields of a spec.
type field struct {
	name     string
	min, max int
	names    []string // names[i] stands for min+i; nil if the field has none
}

var (
	seconds = field{name: "second", min: 0, max: 59}
	minutes = field{name: "minute", min: 0, max: 59}
	hours   = field{name: "hour", min: 0, max: 23}
	doms    = field{name: "day of month", min: 1, max: 31}
	months  = field{name: "month", min: 1, max: 12, names: []string{
		"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}}
	dows = field{name: "day of week", min: 0, max: 7, names: []string{
		"sun", "mon", "tue", "wed", "thu", "fri", "sat"}}
)

// parseFields parses five or six fields into a spec; strict refuses what
// ParseStrict does.
func parseFields(f []string, loc *time.Location, strict bool) (*spec, error) {
	switch len(f) {
	case 5:
		f = append([]string{"0"}, f...)
	case 6:
	default:
		return nil, parseError("spec", strings.Join(f, " "), "has "+strconv.Itoa(len(f))+" fields; want 5 (minute hour day-of-month month day-of-week) or 6 (second first)")
	}
	var s spec
	var err error
	var minStar, hourStar, domStar, dowStar bool
	if s.second, _, err = seconds.parse(strict, f[0]); err != nil {
		return nil, err
	}
	if s.minute, minStar, err = minutes.parse(strict, f[1]); err != nil {
		return nil, err
	}
	var b uint64
	if b, hourStar, err = hours.parse(strict, f[2]); err != nil {
		return nil, err
	}
	s.hour = uint32(b)
	if b, domStar, err = doms.parse(strict, f[3]); err != nil {
		return nil, err
	}
	s.dom = uint32(b)
	if b, _, err = months.parse(strict, f[4]); err != nil {
		return nil, err
	}
	s.month = uint16(b)
	if b, dowStar, err = dows.parse(strict, f[5]); err != nil {
		return nil, err
	}
	if b&(1<<7) != 0 { // 7 is Sunday too
		b |= 1
	}
	s.dow = uint8(b & 0x7f)
	s.dayOr = !domStar && !dowStar
	s.pinned = !minStar && !hourStar
	s.loc = loc
	s.never = !s.satisfiable()
	return &s, nil
}

// parse parses the text of the field into a bit set, bit i for the value
// i. star reports whether the text starts with * or ?, as crontab(5) tells
// a field that is not restricted.
func (fd *field) parse(strict bool, text string) (bits uint64, star bool, err error) {
	star = text[0] == '*' || text[0] == '?'
	for item := range strings.SplitSeq(text, ",") {
		b, err := fd.parseItem(strict, text, item)
		if err != nil {
			return 0, false, err
		}
		bits |= b
	}
	return bits, star, nil
}

// parseItem parses one item of a list: *, a value or a range, each with an
// optional step. strict refuses a step that only the first of the values
// it steps through would match (strictStep).
func (fd *field) parseItem(strict bool, text, item string) (uint64, error) {
	if item == "" {
		return 0, fd.error(text, "empty list item")
	}
	rng, stepText, hasStep := strings.Cut(item, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		switch {
		case err != nil || n < 0 || strings.HasPrefix(stepText, "+"):
			return 0, fd.error(text, "step "+strconv.Quote(stepText)+" is not a number")
		case n == 0:
			return 0, fd.error(text, "zero step")
		}
		step = n
	}
	var lo, hi int
	switch {
	case rng == "*" || rng == "?":
		lo, hi = fd.min, fd.last()
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		var err error
		if lo, err = fd.value(text, a); err != nil {
			return 0, err
		}
		if hi, err = fd.value(text, b); err != nil {
			return 0, err
		}
		if lo > hi {
			return 0, fd.error(text, "reversed range "+rng)
		}
	default:
		var err error
		if lo, err = fd.value(text, rng); err != nil {
			return 0, err
		}
		hi = lo
		if hasStep { // a/n is a through the last value, every n
			hi = max(fd.last(), lo) // 7/n in the day of the week: 7, Sunday
		}
	}
	if strict {
		if err := fd.strictStep(text, rng, lo, hi, step); err != nil {
			return 0, err
		}
	}
	step = min(step, fd.max+1) // a longer step has the same values: the first
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << v
	}
	return bits, nil
}

// strictStep refuses, for ParseStrict, a step that only the first value
// of lo-hi would match: one longer than its values, or, in a range or
// start written out that is not the whole field, as long as them. "*/60"
// and "0/60" in the minutes are every hour, as their author means;
// "10-20/11" is 10 alone. A day of the week range through 7 counts Sunday
// once.
func (fd *field) strictStep(text, rng string, lo, hi, step int) error {
	values := hi - lo + 1
	if fd == &dows && lo == 0 && hi == 7 {
		values = 7
	}
	star := rng == "*" || rng == "?" || (lo == fd.min && (hi == fd.last() || hi == fd.max))
	switch {
	case values == 1 && step > 1:
		return fd.error(text, "step "+strconv.Itoa(step)+" has no value past "+strconv.Itoa(lo)+" to step to: only "+strconv.Itoa(lo)+" would match")
	case step > values:
		return fd.error(text, "step "+strconv.Itoa(step)+" is longer than the "+strconv.Itoa(values)+
			" values of "+strconv.Itoa(lo)+"-"+strconv.Itoa(hi)+" it steps through: only "+strconv.Itoa(lo)+" would match")
	case step == values && values > 1 && !star:
		return fd.error(text, "step "+strconv.Itoa(step)+" is as long as the "+strconv.Itoa(values)+
			" values of "+strconv.Itoa(lo)+"-"+strconv.Itoa(hi)+" it steps through: only "+strconv.Itoa(lo)+" would match")
	}
	return nil
}

// value parses a number or name of the field.
func (fd *field) value(text, v string) (int, error) {
	if v == "" {
		return 0, fd.error(text, "missing value")
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.Atoi(v)
		if err != nil || len(v) > 4 {
			return 0, fd.error(text, strconv.Quote(v)+" is not a number")
		}
		if n < fd.min || n > fd.max {
			return 0, fd.error(text, "value "+v+" out of range "+strconv.Itoa(fd.min)+"-"+strconv.Itoa(fd.max))
		}
		return n, nil
	}
	lower := strings.ToLower(v)
	for i, name := range fd.names {
		if lower == name {
			return fd.min + i, nil
		}
	}
	if fd.names == nil {
		return 0, fd.error(text, strconv.Quote(v)+" is not a number")
	}
	return 0, fd.error(text, "unknown name "+strconv.Quote(v))
}

// last is the field's last value for * and a/n: 6 for the day of the
// week, whose 7 only repeats Sunday.
func (fd *field) last() int {
	if fd == &dows {
		return 6
	}
	return fd.max
}

func (fd *field) error(text, reason string) error {
	return parseError(fd.name, text, reason)
}

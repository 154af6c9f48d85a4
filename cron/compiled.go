package cron

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

var misfires = map[string]schedule.Misfire{
	"":         schedule.MisfireRunOnce,
	"run-once": schedule.MisfireRunOnce,
	"skip":     schedule.MisfireSkip,
	"run-all":  schedule.MisfireRunAll,
}

// compiled is a validated task, held compactly, since a Table holds one a
// task and may hold a million: its definition but for its name, which the
// Table holds it by, with its times as Unix seconds and nanoseconds and its
// policies parsed, in 112 bytes where a Task takes 148. Its spec is read
// again, from the Table's specs, when a Schedule is made of it
// (scheduleOf).
type compiled struct {
	handler, businessID, spec, zone string
	startSec, endSec                int64 // the zero Time's, for no start or end
	seen                            int64 // when the Table first loaded the task, in Unix ns: a Once task's anchor
	startNsec, endNsec              int32
	permanent, once                 bool
	misfire                         schedule.Misfire
	overlap                         schedule.Overlap
}

// start and end return the task's window; zero Times for an open side.
func (c *compiled) start() time.Time { return instant(c.startSec, c.startNsec) }
func (c *compiled) end() time.Time   { return instant(c.endSec, c.endNsec) }

var zeroSec = time.Time{}.Unix()

func instant(sec int64, nsec int32) time.Time {
	if sec == zeroSec && nsec == 0 {
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// withSeen returns c with the anchor seen: c itself if it has it, or if
// mine says c is this Apply's own, not yet published; a copy otherwise.
func (c *compiled) withSeen(seen int64, mine bool) *compiled {
	switch {
	case c.seen == seen:
		return c
	case mine:
		c.seen = seen
		return c
	}
	d := *c
	d.seen = seen
	return &d
}

// same reports whether d, an enabled definition, is the one c holds.
func (c *compiled) same(d Task) bool {
	m, ok := misfires[d.Misfire]
	return ok && m == c.misfire && (d.Overlap == (c.overlap == schedule.OverlapAllow)) &&
		c.handler == d.Handler && c.businessID == d.BusinessID && c.spec == d.Spec && c.zone == d.Zone &&
		c.start().Equal(d.Start) && c.end().Equal(d.End) && c.permanent == d.Permanent && c.once == d.Once
}

// sameTimes reports whether a and b have the same times.
func (c *compiled) sameTimes(b *compiled) bool {
	return c.spec == b.spec && c.zone == b.zone && c.startSec == b.startSec && c.startNsec == b.startNsec &&
		c.endSec == b.endSec && c.endNsec == b.endNsec && c.permanent == b.permanent && c.once == b.once
}

// compile validates d for t: its handler among t's, its spec read in t's
// location unless it names a zone, its name one t's store can hold. A zone
// is loaded once for every task (zone), and a spec read once for every
// task of the Table with the same spec and location (t.specs).
func (t *Table) compile(d Task) (*compiled, error) {
	c, err := compile(d, t.handlers, t.loc, t.parse)
	if err != nil {
		return nil, err
	}
	if jc, ok := t.store.(schedule.JobChecker); ok {
		if err := jc.CheckJob(d.Name); err != nil {
			return nil, &TaskError{Task: d.Name, Field: "name", Err: err}
		}
	}
	return c, nil
}

// compile validates t against the handlers, reading its spec with parse in
// loc unless it names a zone.
func compile(t Task, handlers map[string]Handler, loc *time.Location, parse func(string, *time.Location) (schedule.Schedule, error)) (*compiled, error) {
	fail := func(field string, err error) (*compiled, error) {
		return nil, &TaskError{Task: t.Name, Field: field, Err: err}
	}
	switch {
	case t.Name == "":
		return fail("name", errors.New("empty"))
	case len(t.Name) > MaxNameLen:
		return fail("name", errors.New("longer than "+strconv.Itoa(MaxNameLen)+" bytes"))
	case t.Handler == "":
		return fail("handler", errors.New("empty"))
	case handlers[t.Handler] == nil:
		return fail("handler", errors.New("no handler "+strconv.Quote(clip(t.Handler))))
	}
	if t.Zone != "" {
		l, err := zone(t.Zone)
		if err != nil {
			return fail("zone", errors.New("unknown zone "+strconv.Quote(clip(t.Zone))))
		}
		loc = l
	}
	if _, err := parse(t.Spec, loc); err != nil {
		return fail("spec", err)
	}
	switch {
	case !t.Permanent && t.End.IsZero():
		return fail("end", errors.New("required unless permanent"))
	case t.Permanent && !t.End.IsZero():
		return fail("end", errors.New("set on a permanent task"))
	case !t.End.IsZero() && !t.Start.IsZero() && t.End.Before(t.Start):
		return fail("end", errors.New("before start"))
	}
	m, ok := misfires[t.Misfire]
	if !ok {
		return fail("misfire", errors.New("unknown policy "+strconv.Quote(clip(t.Misfire))+"; want run-once, skip or run-all"))
	}
	c := &compiled{handler: t.Handler, businessID: t.BusinessID, spec: t.Spec, zone: t.Zone,
		startSec: t.Start.Unix(), startNsec: int32(t.Start.Nanosecond()), endSec: t.End.Unix(), endNsec: int32(t.End.Nanosecond()),
		permanent: t.Permanent, once: t.Once, misfire: m, overlap: schedule.OverlapSkip}
	if t.Overlap {
		c.overlap = schedule.OverlapAllow
	}
	return c, nil
}

// specKey is a spec read in a location.
type specKey struct {
	spec string
	loc  *time.Location
}

// maxSpecs bounds the specs a Table keeps read: past it, a spec is read
// for each task.
const maxSpecs = 100_000

// parse is Parse, for the Table: a spec read before in the same location
// is not read again.
func (t *Table) parse(spec string, loc *time.Location) (schedule.Schedule, error) {
	k := specKey{spec, loc}
	if s, ok := t.specs.Load(k); ok {
		return s.(schedule.Schedule), nil
	}
	s, err := Parse(spec, loc)
	if err != nil {
		return nil, err
	}
	if t.nspecs.Add(1) <= maxSpecs {
		t.specs.Store(k, s)
	}
	return s, nil
}

// zones holds the locations loaded, by name: a zone is loaded once for all
// the tasks, not once each (time.LoadLocation reads and parses the zone's
// file, about 4.7 KB of heap each time).
var zones sync.Map

// zone is time.LoadLocation, once per name.
func zone(name string) (*time.Location, error) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	l2, _ := zones.LoadOrStore(name, l)
	return l2.(*time.Location), nil
}

// scheduleOf returns the Schedule of c, a task t compiled; a Once task
// without a Start runs at the first time of its spec after c.seen. The spec
// is read again, from t's specs: the tasks of one spec share it.
func (t *Table) scheduleOf(c *compiled) schedule.Schedule {
	loc := t.loc
	if c.zone != "" {
		loc, _ = zone(c.zone) // compile loaded it
	}
	s, _ := t.parse(c.spec, loc) // compile read it
	start, end := c.start(), c.end()
	if c.once {
		from := time.Unix(0, c.seen)
		if !start.IsZero() {
			from = start.Add(-1)
		}
		if at := s.Next(from); !at.IsZero() {
			s = schedule.Once(at)
		} else {
			s = schedule.At()
		}
	}
	if start.IsZero() && end.IsZero() {
		return s // shared by every task of the same spec
	}
	return schedule.Between(s, start, end)
}

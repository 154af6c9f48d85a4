package cron

import (
	"errors"
	"math"
	"path"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/circulation-go/circulation/schedule"
)

// misfireNames are the names of the Misfire policies in a Task.
var misfireNames = map[schedule.Misfire]string{
	schedule.MisfireRunOnce: "run-once",
	schedule.MisfireSkip:    "skip",
	schedule.MisfireRunAll:  "run-all",
}

var overlaps = map[string]schedule.Overlap{
	"":           schedule.OverlapSkip,
	"skip":       schedule.OverlapSkip,
	"buffer-one": schedule.OverlapBufferOne,
	"replace":    schedule.OverlapReplace,
	"allow":      schedule.OverlapAllow,
	"buffer-all": schedule.OverlapBufferAll,
}

// overlapNames are the names of the Overlap policies in a Task.
var overlapNames = map[schedule.Overlap]string{
	schedule.OverlapSkip:      "skip",
	schedule.OverlapBufferOne: "buffer-one",
	schedule.OverlapReplace:   "replace",
	schedule.OverlapAllow:     "allow",
	schedule.OverlapBufferAll: "buffer-all",
}

var misfires = map[string]schedule.Misfire{
	"":         schedule.MisfireRunOnce,
	"run-once": schedule.MisfireRunOnce,
	"skip":     schedule.MisfireSkip,
	"run-all":  schedule.MisfireRunAll,
}

// compiled is a validated task, held compactly, since a Table holds one a
// task and may hold a million: its definition but for its name, which the
// Table holds it by, with its times as Unix seconds and nanoseconds and its
// policies parsed, in 160 bytes where a Task takes 320. Its spec is read
// again, from the Table's specs, when a Schedule is made of it
// (scheduleOf).
type compiled struct {
	handler, businessID, spec, zone string
	startSec, endSec                int64 // the zero Time's, for no start or end
	// seen is the task's Created, or, if it has none, when the Table
	// first loaded it, in Unix ns: a Once task's anchor, and the time
	// since which a task that has no record owes its slots (since).
	seen               int64
	timeout, backoff   int64 // time.Durations
	maxRuns            int64 // the slots counted from the anchor (limited); 0 for no limit
	startNsec, endNsec int32
	attempts           int32
	window             uint32 // the catch-up window, in seconds; 0 for none
	jitter             uint32 // in seconds; 0 for none
	permanent, once    bool
	paused             bool // the definition's Paused; the Table's entry says whether the task is paused
	created            bool // seen is the definition's Created: no slot before it is owed, whatever the records say
	misfire            schedule.Misfire
	overlap            schedule.Overlap
	pauseOn            uint8          // PauseOnFailures
	note               *pauseDef      // PauseNote and PausedUntil; nil for neither
	cals               *taskCalendars // the calendars the task passes over, resolved by its Table; nil for none
}

// pauseOf returns the pause of d, nil for a task not paused, or paused
// with neither a note nor an end.
func pauseOf(d Task) *pauseDef {
	if !d.Paused || d.PauseNote == "" && d.PausedUntil.IsZero() {
		return nil
	}
	return &pauseDef{note: d.PauseNote, until: d.PausedUntil.UTC()}
}

// A pauseDef is the note and the end of a task's pause, as its definition
// gives them.
type pauseDef struct {
	note  string
	until time.Time
}

// pauseOptions returns the options of the pause of c, as its definition
// gives it: its note and its end, none if it gives none.
func (c *compiled) pauseOptions() []schedule.PauseOption {
	var p pauseDef
	if c.note != nil {
		p = *c.note
	}
	return []schedule.PauseOption{schedule.Because(p.note), schedule.ResumeAt(p.until)}
}

// samePause reports whether c gives a pause the note and end of p.
func (c *compiled) samePause(p *pauseDef) bool {
	if c.note == nil || p == nil {
		return c.note == p
	}
	return c.note.note == p.note && c.note.until.Equal(p.until)
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

// task returns the definition of c, the task name, with its defaults
// spelled out: the policies by name, the times in UTC, Created as the time
// the Table took for it.
func (c *compiled) task(name string) Task {
	t := Task{Name: name, Handler: c.handler, BusinessID: c.businessID, Spec: c.spec, Zone: c.zone,
		Start: c.start(), End: c.end(), Permanent: c.permanent, Once: c.once, Paused: c.paused,
		Overlap: overlapNames[c.overlap], Misfire: misfireNames[c.misfire], Timeout: Duration(c.timeout),
		Retry: Retry{Attempts: int(c.attempts), Backoff: Duration(c.backoff)}, CatchUpWindow: Duration(c.window) * Duration(time.Second),
		MaxRuns: int(c.maxRuns), Jitter: Duration(c.jitter) * Duration(time.Second), Created: time.Unix(0, c.seen).UTC(),
		PauseOnFailures: int(c.pauseOn), Calendars: c.cals.names()}
	if c.note != nil {
		t.PauseNote, t.PausedUntil = c.note.note, c.note.until
	}
	return t
}

// floor returns the time before which the task owes no slot whatever its
// records say, the zero Time if none: since, if the definition has a
// Created. A task deleted and defined again has records of its former
// definition; its new one owes nothing from before it was made.
func (c *compiled) floor() time.Time {
	if !c.created {
		return time.Time{}
	}
	return c.since()
}

// since returns the time since which the task has been scheduled: a job
// of it that finds no record in the store owes the slots after it, by its
// misfire policy. It is seen; for a Once task, or one with MaxRuns, whose
// Start is earlier, the instant before its Start, so that a task meant to
// run once, or n times, runs even if its times passed before the Table
// first loaded it.
func (c *compiled) since() time.Time {
	s := time.Unix(0, c.seen)
	if start := c.start(); c.limited() && !start.IsZero() && !start.After(s) {
		s = start.Add(-1)
	}
	return s
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

// same reports whether d is the definition c holds. A zero Created is
// the one c holds: the Table keeps the time it first loaded the task.
func (c *compiled) same(d Task) bool {
	m, ok := misfires[d.Misfire]
	o, ok2 := overlaps[d.Overlap]
	return ok && ok2 && m == c.misfire && o == c.overlap &&
		c.handler == d.Handler && c.businessID == d.BusinessID && c.spec == d.Spec && c.zone == d.Zone &&
		c.start().Equal(d.Start) && c.end().Equal(d.End) && c.permanent == d.Permanent && c.once == d.Once &&
		c.paused == d.Paused && c.timeout == int64(d.Timeout) && int(c.attempts) == d.Retry.Attempts && c.backoff == int64(d.Retry.Backoff) &&
		time.Duration(c.window)*time.Second == time.Duration(d.CatchUpWindow) &&
		c.maxRuns == int64(d.MaxRuns) && time.Duration(c.jitter)*time.Second == time.Duration(d.Jitter) &&
		int(c.pauseOn) == d.PauseOnFailures && c.samePause(pauseOf(d)) &&
		(d.Created.IsZero() || (inNanos(d.Created) && c.seen == d.Created.UnixNano()))
}

// sameTimes reports whether a and b have the same times.
func (c *compiled) sameTimes(b *compiled) bool {
	return c.spec == b.spec && c.zone == b.zone && c.startSec == b.startSec && c.startNsec == b.startNsec &&
		c.endSec == b.endSec && c.endNsec == b.endNsec && c.permanent == b.permanent && c.once == b.once &&
		c.maxRuns == b.maxRuns && (!c.limited() || c.seen == b.seen) && // a Once task's one time, and the slots counted, depend on seen
		c.cals.same(b.cals)
}

// limited reports whether c runs a count of slots from its anchor: Once
// (one) or MaxRuns.
func (c *compiled) limited() bool { return c.once || c.maxRuns > 0 }

// anchor returns the time after which c's slots are counted, if limited:
// the instant before its Start, or seen.
func (c *compiled) anchor() time.Time {
	if start := c.start(); !start.IsZero() {
		return start.Add(-1)
	}
	return time.Unix(0, c.seen)
}

// A policy is what a task's job is made with and keeps for its life: a
// task whose policy changes gets a new job. The jobs of one Apply with the
// same policy share their settings (schedule.Preset).
type policy struct {
	overlap          schedule.Overlap
	misfire          schedule.Misfire
	pauseOn          uint8
	attempts         int32 // 0 for no retry, else 2 or more
	window, jitter   uint32
	timeout, backoff int64
}

// policy returns c's, with the retries that make no difference left out:
// an Attempts below 2, and its Backoff, mean no retry.
func (c *compiled) policy() policy {
	p := policy{overlap: c.overlap, misfire: c.misfire, timeout: c.timeout, window: c.window, jitter: c.jitter, pauseOn: c.pauseOn}
	if c.attempts >= 2 {
		p.attempts, p.backoff = c.attempts, c.backoff
	}
	return p
}

// options returns the job options of p; paused is told of a job that
// pauses itself (PauseOnFailures).
func (p policy) options(paused func(*schedule.Job, schedule.PauseNote)) []schedule.Option {
	opts := []schedule.Option{schedule.WithOverlap(p.overlap), schedule.WithMisfire(p.misfire)}
	if p.timeout > 0 {
		opts = append(opts, schedule.WithTimeout(time.Duration(p.timeout)))
	}
	if p.attempts >= 2 {
		opts = append(opts, schedule.WithRetry(int(p.attempts), time.Duration(p.backoff)))
	}
	if p.window > 0 {
		opts = append(opts, schedule.WithCatchUpWindow(time.Duration(p.window)*time.Second))
	}
	if p.jitter > 0 {
		opts = append(opts, schedule.WithJitter(time.Duration(p.jitter)*time.Second))
	}
	if p.pauseOn > 0 {
		opts = append(opts, schedule.WithPauseOnFailures(int(p.pauseOn), paused))
	}
	return opts
}

// aheadYears is how far ahead a task must have a time to run at.
const aheadYears = 100

// maxWindow is the longest CatchUpWindow, 100 years of 365.25 days: it
// fits a compiled task's seconds.
const maxWindow = Duration(aheadYears * 36525 * 24 * 36 * time.Second)

// inNanos reports whether t is within the years that Unix nanoseconds
// hold, 1678 to 2262.
func inNanos(t time.Time) bool { return !t.Before(minNanos) && !t.After(maxNanos) }

var (
	minNanos = time.Unix(0, math.MinInt64)
	maxNanos = time.Unix(0, math.MaxInt64)
)

// compile validates d for t: its handler among t's, its spec read in t's
// location unless it names a zone, its name one t's store can hold, and
// some time to run at by now. A zone is loaded once for every task (zone),
// and a spec read once for every task of the Table with the same spec and
// location (t.specs). seen is when t first loaded the task, if it did, or
// 0: the anchor of a Once task without Created. A task with MaxRuns must
// have a Start or a Created: counted from when each Table loaded it, the
// replicas and the restarts would each run MaxRuns slots. Its calendars
// must be in cals.
func (t *Table) compile(d Task, now time.Time, seen int64, cals calendarSet) (*compiled, error) {
	c, err := compile(d, t.handlers, t.loc, t.parse, now, seen)
	if err != nil {
		return nil, err
	}
	if d.MaxRuns > 0 && d.Start.IsZero() && d.Created.IsZero() {
		return nil, &TaskError{Task: d.Name, Field: "maxRuns", Err: errors.New("needs start or created, so that every replica counts from the same time")}
	}
	if c.cals, err = cals.resolve(d.Name, d.Calendars); err != nil {
		return nil, err
	}
	if jc, ok := t.store.(schedule.JobChecker); ok {
		if err := jc.CheckJob(d.Name); err != nil {
			return nil, &TaskError{Task: d.Name, Field: "name", Err: err}
		}
	}
	return c, nil
}

// compile validates d against the handlers, unless they are nil, reading
// its spec with parse in loc unless it names a zone. A task must have a
// time to run at: the first time of its spec in its window after now, no
// more than 100 years ahead; a Once task, its one time, the first at or
// after its Start, or else after its Created, or seen, or now, which may
// have passed (its job owes it, by its misfire policy). The compiled task
// has seen as its anchor, or Created if set.
func compile(d Task, handlers map[string]Handler, loc *time.Location, parse func(string, *time.Location) (schedule.Schedule, error), now time.Time, seen int64) (*compiled, error) {
	fail := func(field string, err error) (*compiled, error) {
		return nil, &TaskError{Task: d.Name, Field: field, Err: err}
	}
	switch {
	case d.Name == "":
		return fail("name", errors.New("empty"))
	case len(d.Name) > MaxNameLen:
		return fail("name", errors.New("longer than "+strconv.Itoa(MaxNameLen)+" bytes"))
	case d.Handler == "":
		return fail("handler", errors.New("empty"))
	case handlers != nil && handlers[d.Handler] == nil:
		return fail("handler", errors.New("no handler "+strconv.Quote(clip(d.Handler))))
	}
	if d.Zone != "" {
		l, err := loadZone(d.Zone)
		if err != nil {
			return fail("zone", errors.New("unknown zone "+strconv.Quote(clip(d.Zone))))
		}
		loc = l
	}
	s, err := parse(d.Spec, loc)
	if err != nil {
		return fail("spec", err)
	}
	switch {
	case !d.Permanent && !d.Once && d.MaxRuns == 0 && d.End.IsZero():
		return fail("end", errors.New("required unless permanent, once or maxRuns"))
	case d.Permanent && !d.End.IsZero():
		return fail("end", errors.New("set on a permanent task"))
	case !d.End.IsZero() && !d.Start.IsZero() && d.End.Before(d.Start):
		return fail("end", errors.New("before start"))
	case !d.End.IsZero() && d.End.Before(now):
		return fail("end", errors.New(d.End.UTC().Format(time.RFC3339)+" has passed"))
	case d.Start.After(now.AddDate(aheadYears, 0, 0)):
		return fail("start", errors.New(d.Start.UTC().Format(time.RFC3339)+" is more than "+strconv.Itoa(aheadYears)+" years ahead"))
	}
	m, ok := misfires[d.Misfire]
	if !ok {
		return fail("misfire", errors.New("unknown policy "+strconv.Quote(clip(d.Misfire))+"; want run-once, skip or run-all"))
	}
	o, ok := overlaps[d.Overlap]
	if !ok {
		return fail("overlap", errors.New("unknown policy "+strconv.Quote(clip(d.Overlap))+"; want skip, buffer-one, buffer-all, replace or allow"))
	}
	switch {
	case d.Timeout < 0:
		return fail("timeout", errors.New("negative: "+d.Timeout.String()))
	case d.Retry.Attempts < 0:
		return fail("retry.attempts", errors.New("negative: "+strconv.Itoa(d.Retry.Attempts)))
	case d.Retry.Attempts > math.MaxInt32:
		return fail("retry.attempts", errors.New("too many: "+strconv.Itoa(d.Retry.Attempts)))
	case d.Retry.Backoff < 0:
		return fail("retry.backoff", errors.New("negative: "+d.Retry.Backoff.String()))
	case d.CatchUpWindow < 0:
		return fail("catchUpWindow", errors.New("negative: "+d.CatchUpWindow.String()))
	case d.CatchUpWindow%Duration(time.Second) != 0:
		return fail("catchUpWindow", errors.New(d.CatchUpWindow.String()+" is not a whole number of seconds"))
	case d.CatchUpWindow > maxWindow:
		return fail("catchUpWindow", errors.New(d.CatchUpWindow.String()+" is longer than 100 years"))
	case d.Jitter < 0:
		return fail("jitter", errors.New("negative: "+d.Jitter.String()))
	case d.Jitter%Duration(time.Second) != 0:
		return fail("jitter", errors.New(d.Jitter.String()+" is not a whole number of seconds"))
	case d.Jitter > maxWindow:
		return fail("jitter", errors.New(d.Jitter.String()+" is longer than 100 years"))
	case d.MaxRuns < 0:
		return fail("maxRuns", errors.New("negative: "+strconv.Itoa(d.MaxRuns)))
	case d.MaxRuns > MaxMaxRuns:
		return fail("maxRuns", errors.New(strconv.Itoa(d.MaxRuns)+" is more than "+strconv.Itoa(MaxMaxRuns)))
	case d.Once && d.MaxRuns > 1:
		return fail("maxRuns", errors.New(strconv.Itoa(d.MaxRuns)+" on a once task, which runs once"))
	case d.PauseOnFailures < 0 || d.PauseOnFailures > schedule.MaxPauseOnFailures:
		return fail("pauseOnFailures", errors.New(strconv.Itoa(d.PauseOnFailures)+" is not from 0 to "+strconv.Itoa(schedule.MaxPauseOnFailures)))
	case len(d.PauseNote) > MaxPauseNoteLen:
		return fail("pauseNote", errors.New("longer than "+strconv.Itoa(MaxPauseNoteLen)+" bytes"))
	case !utf8.ValidString(d.PauseNote):
		return fail("pauseNote", errors.New("not UTF-8"))
	case !d.Created.IsZero() && !inNanos(d.Created):
		return fail("created", errors.New(d.Created.UTC().Format(time.RFC3339)+" is out of range: want a time from 1678 to 2262"))
	}
	if err := checkTaskCalendars(d); err != nil {
		return nil, err
	}
	c := &compiled{handler: d.Handler, businessID: d.BusinessID, spec: d.Spec, zone: d.Zone,
		startSec: d.Start.Unix(), startNsec: int32(d.Start.Nanosecond()), endSec: d.End.Unix(), endNsec: int32(d.End.Nanosecond()),
		permanent: d.Permanent, once: d.Once, paused: d.Paused, misfire: m, overlap: o,
		timeout: int64(d.Timeout), attempts: int32(d.Retry.Attempts), backoff: int64(d.Retry.Backoff), seen: seen,
		window: uint32(d.CatchUpWindow / Duration(time.Second)), jitter: uint32(d.Jitter / Duration(time.Second)),
		maxRuns: int64(d.MaxRuns), pauseOn: uint8(d.PauseOnFailures), note: pauseOf(d)}
	switch {
	case !d.Created.IsZero():
		c.seen, c.created = d.Created.UnixNano(), true
	case seen == 0:
		c.seen = now.UnixNano()
	}
	if err := c.runs(s, now); err != nil {
		return fail("spec", err)
	}
	return c, nil
}

// runs returns an error if c, whose spec has the Schedule s, has no time
// to run at: see compile.
func (c *compiled) runs(s schedule.Schedule, now time.Time) error {
	start, end := c.start(), c.end()
	window := func() string {
		switch {
		case start.IsZero():
			return "before its end, " + end.UTC().Format(time.RFC3339)
		case end.IsZero():
			return "after its start, " + start.UTC().Format(time.RFC3339)
		}
		return "between its start and end, " + start.UTC().Format(time.RFC3339) + " and " + end.UTC().Format(time.RFC3339)
	}
	if c.limited() {
		from := c.anchor()
		at := s.Next(from)
		switch {
		case at.IsZero() || at.After(later(from, now).AddDate(aheadYears, 0, 0)):
			return errors.New("no time in the " + strconv.Itoa(aheadYears) + " years after " + from.UTC().Format(time.RFC3339))
		case !end.IsZero() && at.After(end) && c.once:
			return errors.New("its one time, " + at.UTC().Format(time.RFC3339) + ", is after its end, " + end.UTC().Format(time.RFC3339))
		case !end.IsZero() && at.After(end):
			return errors.New("its first time, " + at.UTC().Format(time.RFC3339) + ", is after its end, " + end.UTC().Format(time.RFC3339))
		}
		return nil
	}
	from := now
	if !start.IsZero() && start.After(now) {
		from = start.Add(-1)
	}
	at := s.Next(from)
	switch {
	case at.IsZero() && start.IsZero() && end.IsZero():
		return errors.New("no time in the next " + strconv.Itoa(aheadYears) + " years")
	case at.IsZero() || (!end.IsZero() && at.After(end)):
		return errors.New("no time " + window())
	case at.After(now.AddDate(aheadYears, 0, 0)):
		return errors.New("no time in the next " + strconv.Itoa(aheadYears) + " years")
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
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
// the tasks and specs, not once each (time.LoadLocation reads and parses
// the zone's file each time; BenchmarkZone). It keeps the names in clean
// form only (path.Clean), which only the tz database's few hundred are,
// and maxZones at most: time.LoadLocation also loads "Europe/./Paris", and
// specs come from users.
var (
	zones  sync.Map
	nzones atomic.Int64 // zones kept
)

// maxZones bounds the locations zones keeps.
const maxZones = 1000

// loadZone is time.LoadLocation, once per name that zones keeps.
func loadZone(name string) (*time.Location, error) {
	if l, ok := zones.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil || path.Clean(name) != name || nzones.Load() >= maxZones {
		return l, err
	}
	if l2, loaded := zones.LoadOrStore(name, l); loaded {
		return l2.(*time.Location), nil
	}
	nzones.Add(1)
	return l, nil
}

// scheduleOf returns the Schedule of c, a task t compiled, passing over
// the days of its calendars (a calendar without a zone in the zone of the
// spec), and so counting none of them as a slot; a Once task
// without a Start runs at the first time of its spec after c.seen, and a
// task with MaxRuns at the first MaxRuns in its window after its anchor,
// counted as a Once task's one time is (schedule.First). The spec
// is read again, from t's specs: the tasks of one spec share it.
func (t *Table) scheduleOf(c *compiled) schedule.Schedule {
	loc := t.loc
	if c.zone != "" {
		loc, _ = loadZone(c.zone) // compile loaded it
	}
	s, _ := t.parse(c.spec, loc) // compile read it
	s = c.cals.except(s, taskZone(c.spec, loc))
	start, end := c.start(), c.end()
	if c.once {
		if at := s.Next(c.anchor()); !at.IsZero() {
			s = schedule.Once(at)
		} else {
			s = schedule.At()
		}
	}
	if !start.IsZero() || !end.IsZero() {
		s = schedule.Between(s, start, end)
	}
	if c.maxRuns > 0 {
		s = schedule.First(s, c.anchor(), int(c.maxRuns))
	}
	return s // without a window, a count or calendars, shared by every task of the same spec
}

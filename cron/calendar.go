package cron

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/circulation-go/circulation/schedule"
)

// A Calendar is a named list of days that the tasks naming it
// (Task.Calendars) pass over: public holidays, a shutdown week. A slot of
// such a task on one of its days is not a slot: the task neither runs it
// nor reports it Missed, and catches none of them up; its next run, and
// every preview of its times, passes over them (schedule.Except). A
// Table knows the calendars given to SetCalendars, or, while it follows a
// Source, those of the Source (CalendarSource), such as the calendars
// table of schedule/sqlstore, which its admin page edits.
//
// Its JSON form uses the names in the tags:
//
//	{"name": "fr-holidays", "zone": "Europe/Paris",
//	 "days": ["2026-12-25", "2026-12-24..2026-12-31"], "note": "office closed"}
type Calendar struct {
	// Name identifies the calendar among a Table's, and tasks name it by
	// it. It must be UTF-8 text of 1 to MaxNameLen bytes with no comma, no
	// control character, and no space at either end.
	Name string `json:"name"`
	// Zone is the IANA zone whose whole days Days are: each from its
	// 00:00 to the next day's. Empty means the zone of each task that
	// names the calendar, the one its spec is read in (its CRON_TZ, its
	// Zone, or the Table's location), so that one list of dates is a
	// day off wherever each task runs.
	Zone string `json:"zone,omitempty"`
	// Days are the days, as schedule.ParseDays reads them: dates in ISO
	// 8601, "2026-12-25", and ranges of them, both ends included,
	// "2026-12-24..2026-12-31"; schedule.MaxDays of them at most. None
	// excludes nothing.
	Days []string `json:"days"`
	// Note says what the days are, for people: MaxNoteLen bytes at most.
	Note string `json:"note,omitempty"`
}

// MaxCalendars is the number of calendars a task may name.
const MaxCalendars = 16

// MaxNoteLen is the length, in bytes, of the longest Calendar.Note.
const MaxNoteLen = 1000

// ErrUnknownCalendar is wrapped by the errors of a store of definitions
// for the name of a calendar it does not hold.
var ErrUnknownCalendar = errors.New("cron: unknown calendar")

// A CalendarError reports a calendar that a Table cannot load: the
// calendar, its field at fault (named as in JSON: "zone", "days"), and
// why. Its message quotes at most 64 bytes of each text.
type CalendarError struct {
	Calendar string
	Field    string
	Err      error
}

func (e *CalendarError) Error() string {
	return "cron: calendar " + strconv.Quote(clip(e.Calendar)) + ": " + e.Field + ": " + e.Err.Error()
}

func (e *CalendarError) Unwrap() error { return e.Err }

// Validate reports whether c is a calendar that a Table can load: a store
// of definitions calls it before it saves one. It returns a
// *CalendarError naming the first field at fault, or nil: a Name that is
// not one (see Name), a Zone that is not an IANA zone, Days that
// schedule.ParseDays does not read (the error quotes the day), a Note
// longer than MaxNoteLen or not UTF-8.
func (c Calendar) Validate() error {
	_, err := newCalendar(c)
	return err
}

// DaysIn returns the days of c as a schedule.Calendar: c's Days in its
// Zone, or in loc if it has none (nil means UTC). It returns c.Validate's
// error if c is not valid.
func (c Calendar) DaysIn(loc *time.Location) (*schedule.Days, error) {
	k, err := newCalendar(c)
	if err != nil {
		return nil, err
	}
	return k.in(loc), nil
}

// A CalendarSource is a Source that holds calendars too, which the tasks
// of its definitions name. A Table that follows it loads its calendars
// with its tasks, and the Source's Version must change when a calendar
// does, as when a task does. A Table that follows a Source that is not a
// CalendarSource knows no calendar, as if the Source held none.
type CalendarSource interface {
	Source
	// Calendars returns every calendar and the version of the set of
	// definitions, as Tasks returns the tasks: the calendars reflect
	// every change the version counts, and maybe later ones.
	Calendars(ctx context.Context) ([]Calendar, int64, error)
}

// checkCalendarName returns why name cannot name a calendar, or nil.
func checkCalendarName(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case len(name) > MaxNameLen:
		return errors.New("longer than " + strconv.Itoa(MaxNameLen) + " bytes")
	case !utf8.ValidString(name):
		return errors.New("not UTF-8")
	case strings.TrimSpace(name) != name:
		return errors.New(strconv.Quote(clip(name)) + " has a space at an end")
	case strings.ContainsFunc(name, func(r rune) bool { return r == ',' || unicode.IsControl(r) }):
		return errors.New(strconv.Quote(clip(name)) + " has a comma or a control character")
	}
	return nil
}

// checkTaskCalendars returns a *TaskError if the Calendars of d are not
// names of calendars, repeat one, or are more than MaxCalendars.
func checkTaskCalendars(d Task) error {
	if len(d.Calendars) > MaxCalendars {
		return &TaskError{Task: d.Name, Field: "calendars", Err: errors.New(strconv.Itoa(len(d.Calendars)) + " calendars, more than " + strconv.Itoa(MaxCalendars))}
	}
	for i, name := range d.Calendars {
		if err := checkCalendarName(name); err != nil {
			return &TaskError{Task: d.Name, Field: "calendars", Err: err}
		}
		if slices.Contains(d.Calendars[:i], name) {
			return &TaskError{Task: d.Name, Field: "calendars", Err: errors.New(strconv.Quote(clip(name)) + " named twice")}
		}
	}
	return nil
}

// A calendar is a Calendar a Table holds, checked, with its days read in
// each zone a task asked for. It is never modified once made but for its
// days, which mu guards: a changed definition is a new calendar.
type calendar struct {
	def  Calendar               // its Note is note's
	note atomic.Pointer[string] // def's Note, and a later one: a note does not change the days
	loc  *time.Location         // its Zone's; nil for the task's
	utc  *schedule.Days         // its days in loc, or in UTC without a Zone

	mu   sync.Mutex
	days map[*time.Location]*schedule.Days // in the zones of the tasks, for a calendar without a Zone
}

// maxCalendarZones bounds the zones a calendar keeps its days in; past
// it, they are read again at each call.
const maxCalendarZones = 1000

// newCalendar checks c and returns it as a Table holds it.
func newCalendar(c Calendar) (*calendar, error) {
	fail := func(field string, err error) (*calendar, error) {
		return nil, &CalendarError{Calendar: c.Name, Field: field, Err: err}
	}
	if err := checkCalendarName(c.Name); err != nil {
		return fail("name", err)
	}
	k := &calendar{def: c}
	k.def.Days = slices.Clone(c.Days)
	if c.Zone != "" {
		l, err := loadZone(c.Zone)
		if err != nil {
			return fail("zone", errors.New("unknown zone "+strconv.Quote(clip(c.Zone))))
		}
		k.loc = l
	}
	if err := checkNote(c.Note); err != nil {
		return fail("note", err)
	}
	k.note.Store(&k.def.Note)
	d, err := schedule.ParseDays(k.loc, c.Days...)
	if err != nil {
		return fail("days", err)
	}
	k.utc = d
	return k, nil
}

// in returns k's days, in its zone or else loc.
func (k *calendar) in(loc *time.Location) *schedule.Days {
	if loc == nil {
		loc = time.UTC
	}
	if k.loc != nil || loc == time.UTC {
		return k.utc
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if d := k.days[loc]; d != nil {
		return d
	}
	d, _ := schedule.ParseDays(loc, k.def.Days...) // newCalendar read them
	if len(k.days) < maxCalendarZones {
		if k.days == nil {
			k.days = map[*time.Location]*schedule.Days{}
		}
		k.days[loc] = d
	}
	return d
}

// checkNote checks a calendar's Note.
func checkNote(note string) error {
	switch {
	case len(note) > MaxNoteLen:
		return errors.New("longer than " + strconv.Itoa(MaxNoteLen) + " bytes")
	case !utf8.ValidString(note):
		return errors.New("not UTF-8")
	}
	return nil
}

// sameDays reports whether k holds c's days: c but for its Note, which
// changes no task's times.
func (k *calendar) sameDays(c Calendar) bool {
	return k.def.Name == c.Name && k.def.Zone == c.Zone && slices.Equal(k.def.Days, c.Days)
}

// A calendarSet is the calendars a Table knows, by name. It is never
// modified once in force: a change makes a new one.
type calendarSet map[string]*calendar

// with returns the set of cals, keeping the calendars of s whose
// definition is unchanged, so that the tasks naming them keep their
// times. A calendar that is not valid gets a *CalendarError, and s's
// calendar of its name, if any, stays; so does the first of two of one
// name.
func (s calendarSet) with(cals []Calendar) (calendarSet, []error) {
	out := make(calendarSet, len(cals))
	var errs []error
	for _, c := range cals {
		if out[c.Name] != nil {
			errs = append(errs, &CalendarError{Calendar: c.Name, Field: "name", Err: errors.New("defined twice")})
			continue
		}
		if k := s[c.Name]; k != nil && k.sameDays(c) {
			// The tasks naming it keep their times, whatever its note.
			if err := checkNote(c.Note); err != nil {
				errs = append(errs, &CalendarError{Calendar: c.Name, Field: "note", Err: err})
			} else if *k.note.Load() != c.Note {
				note := c.Note
				k.note.Store(&note)
			}
			out[c.Name] = k
			continue
		}
		k, err := newCalendar(c)
		if err != nil {
			errs = append(errs, err)
			if k := s[c.Name]; k != nil {
				out[c.Name] = k
			}
			continue
		}
		out[c.Name] = k
	}
	return out, errs
}

// taskCalendars are the calendars a task names, as its Table resolved
// them: a slot on a day of any is not a slot.
type taskCalendars struct {
	list []*calendar
}

// resolve returns the calendars of names in s, nil for none, or a
// *TaskError for the task naming one that s lacks.
func (s calendarSet) resolve(task string, names []string) (*taskCalendars, error) {
	if len(names) == 0 {
		return nil, nil
	}
	tc := &taskCalendars{list: make([]*calendar, len(names))}
	for i, name := range names {
		k := s[name]
		if k == nil {
			return nil, &TaskError{Task: task, Field: "calendars", Err: errors.New("no calendar " + strconv.Quote(clip(name)))}
		}
		tc.list[i] = k
	}
	return tc, nil
}

// resolves reports whether names resolve, in s, to the calendars of tc.
func (s calendarSet) resolves(tc *taskCalendars, names []string) bool {
	if tc == nil {
		return len(names) == 0
	}
	if len(tc.list) != len(names) {
		return false
	}
	for i, k := range tc.list {
		if k.def.Name != names[i] || s[names[i]] != k {
			return false
		}
	}
	return true
}

// names returns the names of the calendars of tc, nil for none.
func (tc *taskCalendars) names() []string {
	if tc == nil {
		return nil
	}
	names := make([]string, len(tc.list))
	for i, k := range tc.list {
		names[i] = k.def.Name
	}
	return names
}

// same reports whether tc and b are the same calendars, in order.
func (tc *taskCalendars) same(b *taskCalendars) bool {
	if tc == nil || b == nil {
		return tc == b
	}
	return slices.Equal(tc.list, b.list)
}

// except returns s without the days of tc, those of a calendar without a
// zone in loc; s itself if tc is nil.
func (tc *taskCalendars) except(s schedule.Schedule, loc *time.Location) schedule.Schedule {
	if tc == nil {
		return s
	}
	if len(tc.list) == 1 {
		return schedule.Except(s, tc.list[0].in(loc))
	}
	u := make(union, len(tc.list))
	for i, k := range tc.list {
		u[i] = k.in(loc)
	}
	return schedule.Except(s, u)
}

// A union excludes the times any of its calendars excludes.
type union []schedule.Calendar

// maxUnionSteps bounds the spans Excluded walks through, from calendar to
// calendar, to find the end of a union's span.
const maxUnionSteps = 10_000

func (u union) Excluded(t time.Time) (time.Time, bool) {
	end := t
	for range maxUnionSteps {
		moved := false
		for _, c := range u {
			if e, ok := c.Excluded(end); ok && e.After(end) {
				end, moved = e, true
			}
		}
		if !moved {
			break
		}
	}
	return end, end.After(t)
}

// taskZone returns the zone in which spec is read: its CRON_TZ or TZ
// prefix's, else loc.
func taskZone(spec string, loc *time.Location) *time.Location {
	if f := strings.Fields(spec); len(f) > 0 {
		if zone, ok := zonePrefix(f[0]); ok {
			if l, err := loadZone(zone); err == nil {
				return l
			}
		}
	}
	return loc
}

// SetCalendars makes cals the calendars t knows, in place of those it
// knew, and returns the tasks whose times changed: those naming a
// calendar whose definition changed take its days at once, as a change of
// their spec does (see Apply). A calendar that is not valid (see
// Calendar.Validate) gets a *CalendarError, joined with the others in the
// returned error, and the calendar of its name that t knew, if any, stays.
//
// A task naming a calendar that cals lacks keeps the days it had, and
// Tasks reports it refused (TaskState.Refused, a *TaskError naming the
// field "calendars"), as a definition naming a calendar t does not know
// is refused by Apply: a task never runs on a day its calendars meant to
// exclude for want of the calendar. Give SetCalendars the calendars
// before the Apply of the tasks that name them.
//
// While t follows a Source, the Source's calendars replace cals at its
// next change. SetCalendars returns ErrTableStopped after Stop. It is
// safe for concurrent use with the Table's other methods; concurrent
// calls take effect one after the other.
func (t *Table) SetCalendars(cals ...Calendar) (Changes, error) {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return Changes{}, ErrTableStopped
	}
	set, errs := t.cals.with(cals)
	t.cals = set
	var ch Changes
	var moves []*entry
	var refused map[string]refusal
	for name, e := range t.tasks {
		c := e.c.Load()
		if c.cals == nil {
			continue
		}
		names := c.cals.names()
		if set.resolves(c.cals, names) {
			continue
		}
		tc, err := set.resolve(name, names)
		if err != nil {
			if refused == nil {
				refused = cloneRefusals(t.refused)
			}
			refused[name] = refusal{c.task(name), err}
			errs = append(errs, err)
			continue
		}
		if r, ok := t.refused[name]; ok && isCalendarRefusal(r.err) && c.same(r.task) {
			// Its calendars are back: the refusal they made of the
			// definition in force is over.
			if refused == nil {
				refused = cloneRefusals(t.refused)
			}
			delete(refused, name)
		}
		d := *c
		d.cals = tc
		e.c.Store(&d)
		moves = append(moves, e)
		ch.Changed = append(ch.Changed, name)
	}
	var fresh []refusal
	if refused != nil {
		fresh = t.refuseLocked(refused)
	}
	t.mu.Unlock()
	t.logRefused(fresh)
	slices.Sort(ch.Changed)
	var panicked any
	for _, e := range moves {
		func() {
			defer func() {
				if v := recover(); v != nil && panicked == nil {
					panicked = v
				}
			}()
			t.reschedule(e)
		}()
	}
	if panicked != nil {
		panic(panicked)
	}
	return ch, errors.Join(errs...)
}

// cloneRefusals returns a copy of m, never nil.
func cloneRefusals(m map[string]refusal) map[string]refusal {
	out := make(map[string]refusal, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Calendars returns the calendars t knows, sorted by name: those of the
// latest SetCalendars, or of the Source t follows.
func (t *Table) Calendars() []Calendar {
	t.mu.Lock()
	set := t.cals
	t.mu.Unlock()
	cals := make([]Calendar, 0, len(set))
	for _, k := range set {
		c := k.def
		c.Days, c.Note = slices.Clone(c.Days), *k.note.Load()
		cals = append(cals, c)
	}
	slices.SortFunc(cals, func(a, b Calendar) int { return strings.Compare(a.Name, b.Name) })
	return cals
}

// Schedule returns the times of the task name as its job runs them, and
// whether t runs that task: its spec in its zone, within its Start and
// End, passing over the days of its calendars, its one time for a Once
// task and its first MaxRuns for one with MaxRuns; what a page shows as
// its next runs (schedule.Upcoming). It does not say whether the task is
// paused.
func (t *Table) Schedule(name string) (schedule.Schedule, bool) {
	t.mu.Lock()
	e, ok := t.tasks[name]
	t.mu.Unlock()
	if !ok {
		return nil, false
	}
	return t.scheduleOf(e.c.Load()), true
}

// sameSet reports whether a and b are the same set: the one in force, or
// a copy of it.
func sameSet(a, b calendarSet) bool {
	if len(a) != len(b) {
		return false
	}
	for name, k := range a {
		if b[name] != k {
			return false
		}
	}
	return true
}

// isCalendarRefusal reports whether err is a task's refusal for a
// calendar its Table does not know.
func isCalendarRefusal(err error) bool {
	var te *TaskError
	return errors.As(err, &te) && te.Field == "calendars"
}

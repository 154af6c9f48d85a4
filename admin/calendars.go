package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// Calendars is a store of calendars, with a version each, that the page
// lists and edits: the calendar methods of *sqlstore.Definitions, which is
// one. A write names the version it read, and must fail, without writing,
// if the calendar is at another one. CreateCalendar and UpdateCalendar
// refuse a calendar that cannot be loaded with a *cron.CalendarError;
// UpdateCalendar, DeleteCalendar and GetCalendar return an error wrapping
// cron.ErrUnknownCalendar for a name they do not hold. Its methods must be
// safe for concurrent use.
type Calendars interface {
	// Calendars returns every calendar, sorted by name, and the version
	// of the definitions.
	Calendars(ctx context.Context) ([]cron.Calendar, int64, error)
	// GetCalendar returns the calendar name and its version.
	GetCalendar(ctx context.Context, name string) (cron.Calendar, int64, error)
	// CreateCalendar saves c, a new calendar, and returns its version.
	CreateCalendar(ctx context.Context, c cron.Calendar) (int64, error)
	// UpdateCalendar replaces the calendar c.Name, at version, with c,
	// and returns its new version.
	UpdateCalendar(ctx context.Context, c cron.Calendar, version int64) (int64, error)
	// DeleteCalendar deletes the calendar name, at version; it may refuse
	// to delete a calendar that tasks name.
	DeleteCalendar(ctx context.Context, name string, version int64) error
}

// calendarList is the page of the calendars, and what api/calendars
// returns.
type calendarList struct {
	Calendars []cron.Calendar `json:"calendars"`
	Warning   string          `json:"warning,omitempty"`
}

// calendarForm is the page that creates or edits a calendar: its fields as
// typed, and what the server says of them.
type calendarForm struct {
	New      bool
	Calendar calendarFields
	Version  int64
	Error    string
	Field    string // the field at fault, named as in JSON
}

// calendarFields are the fields of a calendar as a form holds them: its
// days one a line.
type calendarFields struct {
	Name, Zone, Days, Note string
}

// calendarFieldsOf returns c as a form shows it.
func calendarFieldsOf(c cron.Calendar) calendarFields {
	return calendarFields{Name: c.Name, Zone: c.Zone, Days: strings.Join(c.Days, "\n"), Note: c.Note}
}

// calendar returns the calendar f holds: its days one a line, or
// separated by commas, each trimmed, the empty ones left out.
func (f calendarFields) calendar() cron.Calendar {
	c := cron.Calendar{Name: f.Name, Zone: f.Zone, Note: f.Note, Days: []string{}}
	for _, d := range strings.FieldsFunc(f.Days, func(r rune) bool { return r == '\n' || r == ',' }) {
		if d = strings.TrimSpace(d); d != "" {
			c.Days = append(c.Days, d)
		}
	}
	return c
}

// splitNames reads a list of calendar names, separated by commas, each
// trimmed, the empty ones left out; nil for none.
func splitNames(s string) []string {
	var names []string
	for n := range strings.SplitSeq(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// editingCalendars reports whether calendars may be created and edited,
// and answers r with a 404 if not.
func (h *handler) editingCalendars(w http.ResponseWriter, r *http.Request, api bool) bool {
	if h.o.Calendars == nil {
		h.fail(w, r, api, http.StatusNotFound, "Calendars are not kept here: the page has no Calendars.")
		return false
	}
	return true
}

// calendars serves the page of the calendars, and api/calendars.
func (h *handler) calendars(w http.ResponseWriter, r *http.Request) {
	api := strings.HasPrefix(r.URL.Path, "/api/")
	if !h.editingCalendars(w, r, api) {
		return
	}
	cals, _, err := h.o.Calendars.Calendars(r.Context())
	l := calendarList{Calendars: cals}
	if err != nil {
		l.Warning = "The calendars could not be read: " + err.Error()
	}
	if l.Calendars == nil {
		l.Calendars = []cron.Calendar{}
	}
	h.render(w, r, api, http.StatusOK, "calendars.html", l)
}

// newCalendarForm serves the form of a new calendar.
func (h *handler) newCalendarForm(w http.ResponseWriter, r *http.Request) {
	if !h.editingCalendars(w, r, false) {
		return
	}
	h.render(w, r, false, http.StatusOK, "calendar.html", calendarForm{New: true})
}

// editCalendarForm serves the form of the calendar name=, with its
// version.
func (h *handler) editCalendarForm(w http.ResponseWriter, r *http.Request) {
	if !h.editingCalendars(w, r, false) {
		return
	}
	c, v, err := h.o.Calendars.GetCalendar(r.Context(), r.URL.Query().Get("name"))
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, cron.ErrUnknownCalendar) {
			status = http.StatusNotFound
		}
		h.fail(w, r, false, status, "The calendar could not be read: "+err.Error())
		return
	}
	h.render(w, r, false, http.StatusOK, "calendar.html", calendarForm{Calendar: calendarFieldsOf(c), Version: v})
}

// saveCalendar serves create-calendar and update-calendar, from a form.
func (h *handler) saveCalendar(w http.ResponseWriter, r *http.Request) {
	if !h.editingCalendars(w, r, false) {
		return
	}
	create := strings.HasSuffix(r.URL.Path, "/create-calendar")
	f := calendarForm{New: create, Calendar: calendarFields{Name: r.PostFormValue("name"), Zone: strings.TrimSpace(r.PostFormValue("zone")),
		Days: r.PostFormValue("days"), Note: r.PostFormValue("note")}}
	f.Version, _ = strconv.ParseInt(r.PostFormValue("version"), 10, 64)
	c := f.Calendar.calendar()
	err := c.Validate()
	ctx := r.Context()
	if err == nil {
		if create {
			_, err = h.o.Calendars.CreateCalendar(ctx, c)
		} else {
			_, err = h.o.Calendars.UpdateCalendar(ctx, c, f.Version)
		}
	}
	if err != nil {
		var status int
		status, f.Error = h.calendarRefused(ctx, c.Name, create, f.Version, err)
		var ce *cron.CalendarError
		if errors.As(err, &ce) {
			f.Field = ce.Field
		}
		h.render(w, r, false, status, "calendar.html", f)
		return
	}
	h.snaps.stale()
	did, action := "calendar-updated", "edit"
	if create {
		did, action = "calendar-created", "create"
	}
	ok := h.audit(r, cron.AuditEntry{Action: action, Kind: "calendar", Name: c.Name, Detail: calendarDetail(c)})
	redirect(w, unaudited("calendars?done="+did, ok))
}

// calendarRefused says why the Calendars refused a write of the calendar
// name (create, or at version), and with what status, as refused does for
// a task.
func (h *handler) calendarRefused(ctx context.Context, name string, create bool, version int64, err error) (int, string) {
	var ce *cron.CalendarError
	if errors.As(err, &ce) {
		return http.StatusUnprocessableEntity, err.Error()
	}
	if errors.Is(err, cron.ErrUnknownCalendar) {
		return http.StatusNotFound, "This calendar is no longer defined: someone deleted it since you opened it."
	}
	_, v, gerr := h.o.Calendars.GetCalendar(ctx, name)
	switch {
	case gerr != nil:
	case create:
		return http.StatusConflict, "A calendar of this name exists already: pick another name, or edit that one."
	case v != version:
		return http.StatusConflict, fmt.Sprintf("Someone changed this calendar since you opened it (it is at version %d, you edited version %d): open it again.", v, version)
	default:
		return http.StatusConflict, "The calendar could not be changed: " + err.Error()
	}
	return http.StatusInternalServerError, "The calendar could not be saved: " + err.Error()
}

// removeCalendar serves delete-calendar: the calendar name=, at version=.
// A calendar that tasks name is refused by the store, with a message that
// names them.
func (h *handler) removeCalendar(w http.ResponseWriter, r *http.Request) {
	if !h.editingCalendars(w, r, false) {
		return
	}
	name := r.FormValue("name")
	version, _ := strconv.ParseInt(r.FormValue("version"), 10, 64)
	if r.FormValue("confirm") == "" {
		h.fail(w, r, false, http.StatusBadRequest, "Tick the box that says yes to delete the calendar.")
		return
	}
	if err := h.o.Calendars.DeleteCalendar(r.Context(), name, version); err != nil {
		status, msg := h.calendarRefused(r.Context(), name, false, version, err)
		h.fail(w, r, false, status, msg)
		return
	}
	h.snaps.stale()
	ok := h.audit(r, cron.AuditEntry{Action: "delete", Kind: "calendar", Name: name})
	redirect(w, unaudited("calendars?done=calendar-deleted", ok))
}

// excluding returns s without the days of the calendars names, which
// Options.Calendars holds, read in loc for those without a zone; or a
// *cron.TaskError naming the field "calendars" if one is unknown.
func (h *handler) excluding(ctx context.Context, s schedule.Schedule, names []string, loc *time.Location) (schedule.Schedule, error) {
	if len(names) == 0 {
		return s, nil
	}
	fail := func(err error) (schedule.Schedule, error) {
		return nil, &cron.TaskError{Field: "calendars", Err: err}
	}
	if h.o.Calendars == nil {
		return fail(errors.New("the page has no calendars"))
	}
	cals, _, err := h.o.Calendars.Calendars(ctx)
	if err != nil {
		return fail(err)
	}
	byName := make(map[string]cron.Calendar, len(cals))
	for _, c := range cals {
		byName[c.Name] = c
	}
	for _, name := range names {
		c, ok := byName[name]
		if !ok {
			return fail(errors.New("no calendar " + strconv.Quote(name)))
		}
		days, err := c.DaysIn(loc)
		if err != nil {
			return fail(err)
		}
		s = schedule.Except(s, days)
	}
	return s, nil
}

// calendarDetail says in words what a calendar saved holds.
func calendarDetail(c cron.Calendar) string {
	s := "days " + strings.Join(c.Days, ",")
	if len(c.Days) == 0 {
		s = "no days"
	}
	if c.Zone != "" {
		s += ", zone " + c.Zone
	}
	return s
}

package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/circulation-go/circulation/cron"
)

// A form is the page that creates or edits a definition: its fields as
// typed, and what the server says of them.
type form struct {
	New     bool
	Task    fields
	Version int64  // the version the edit started from
	Zone    string // the zone the times are read in
	Error   string
	Field   string     // the field at fault, named as in JSON
	Current *cron.Task // the definition in force, when the edit was stale
	Preview *preview
	Known   []string // the names of the calendars a task may name; nil without Calendars
	// Handlers are the Table's handlers, a task's Handler the choice of
	// one; Unregistered is set if Task.Handler is none of them.
	Handlers     []string
	Unregistered bool
}

// withHandlers returns f with the Table's handlers to choose from.
func (h *handler) withHandlers(f form) form {
	f.Handlers = h.o.Table.Handlers()
	f.Unregistered = f.Task.Handler != "" && !slices.Contains(f.Handlers, f.Task.Handler)
	return f
}

// calendarNames returns the names of the calendars of Options.Calendars,
// for a form to offer; nil if there are none or they cannot be read.
func (h *handler) calendarNames(r *http.Request) []string {
	if h.o.Calendars == nil {
		return nil
	}
	cals, _, err := h.o.Calendars.Calendars(r.Context())
	if err != nil {
		return nil
	}
	names := make([]string, len(cals))
	for i, c := range cals {
		names[i] = c.Name
	}
	return names
}

// fields are the fields of a definition as a form holds them, named as in
// the JSON of a cron.Task.
type fields struct {
	Name, Handler, BusinessID, Spec, Zone, Start, End string
	Permanent, Once, Paused                           bool
	Overlap, Misfire, Timeout, Attempts, Backoff      string
	CatchUpWindow, MaxRuns, Jitter                    string
	PauseNote, PausedUntil, PauseOnFailures           string
	Calendars                                         string // the names, separated by commas
}

// localLayout is the layout of a datetime-local input.
const localLayout = "2006-01-02T15:04:05"

// fieldsOf returns t as a form shows it, its times in loc.
func fieldsOf(t cron.Task, loc *time.Location) fields {
	f := fields{Name: t.Name, Handler: t.Handler, BusinessID: t.BusinessID, Spec: t.Spec, Zone: t.Zone,
		Permanent: t.Permanent, Once: t.Once, Paused: t.Paused, Overlap: t.Overlap, Misfire: t.Misfire}
	if !t.Start.IsZero() {
		f.Start = t.Start.In(loc).Format(localLayout)
	}
	if !t.End.IsZero() {
		f.End = t.End.In(loc).Format(localLayout)
	}
	if t.Timeout != 0 {
		f.Timeout = t.Timeout.String()
	}
	if t.CatchUpWindow != 0 {
		f.CatchUpWindow = t.CatchUpWindow.String()
	}
	if t.MaxRuns != 0 {
		f.MaxRuns = strconv.Itoa(t.MaxRuns)
	}
	if t.Jitter != 0 {
		f.Jitter = t.Jitter.String()
	}
	f.PauseNote = t.PauseNote
	if !t.PausedUntil.IsZero() {
		f.PausedUntil = t.PausedUntil.In(loc).Format(localLayout)
	}
	if t.PauseOnFailures != 0 {
		f.PauseOnFailures = strconv.Itoa(t.PauseOnFailures)
	}
	f.Calendars = strings.Join(t.Calendars, ", ")
	if t.Retry.Attempts != 0 {
		f.Attempts = strconv.Itoa(t.Retry.Attempts)
	}
	if t.Retry.Backoff != 0 {
		f.Backoff = t.Retry.Backoff.String()
	}
	return f
}

// fieldsFrom reads the fields of a form.
func fieldsFrom(r *http.Request) fields {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return fields{Name: r.PostFormValue("name"), Handler: v("handler"), BusinessID: r.PostFormValue("businessId"),
		Spec: v("spec"), Zone: v("zone"), Start: v("start"), End: v("end"),
		Permanent: v("permanent") != "", Once: v("once") != "", Paused: v("paused") != "",
		Overlap: v("overlap"), Misfire: v("misfire"), Timeout: v("timeout"),
		Attempts: v("retry.attempts"), Backoff: v("retry.backoff"), CatchUpWindow: v("catchUpWindow"),
		MaxRuns: v("maxRuns"), Jitter: v("jitter"), PauseNote: v("pauseNote"), PausedUntil: v("pausedUntil"),
		PauseOnFailures: v("pauseOnFailures"), Calendars: v("calendars")}
}

// task returns the definition f holds, its times read in loc, or a
// *cron.TaskError naming the field that does not read.
func (f fields) task(loc *time.Location) (cron.Task, error) {
	t := cron.Task{Name: f.Name, Handler: f.Handler, BusinessID: f.BusinessID, Spec: f.Spec, Zone: f.Zone,
		Permanent: f.Permanent, Once: f.Once, Paused: f.Paused, Overlap: f.Overlap, Misfire: f.Misfire,
		Calendars: splitNames(f.Calendars)}
	bad := func(field string, err error) (cron.Task, error) {
		return cron.Task{}, &cron.TaskError{Task: f.Name, Field: field, Err: err}
	}
	var err error
	if t.Start, err = readTime(f.Start, loc); err != nil {
		return bad("start", err)
	}
	if t.End, err = readTime(f.End, loc); err != nil {
		return bad("end", err)
	}
	if f.Paused { // a task that is not paused keeps no note
		t.PauseNote = f.PauseNote
		if t.PausedUntil, err = readTime(f.PausedUntil, loc); err != nil {
			return bad("pausedUntil", err)
		}
	}
	if f.PauseOnFailures != "" {
		if t.PauseOnFailures, err = strconv.Atoi(f.PauseOnFailures); err != nil {
			return bad("pauseOnFailures", fmt.Errorf("%q is not a number", f.PauseOnFailures))
		}
	}
	if err := readDuration(f.Timeout, &t.Timeout); err != nil {
		return bad("timeout", err)
	}
	if err := readDuration(f.CatchUpWindow, &t.CatchUpWindow); err != nil {
		return bad("catchUpWindow", err)
	}
	if err := readDuration(f.Jitter, &t.Jitter); err != nil {
		return bad("jitter", err)
	}
	if f.MaxRuns != "" {
		if t.MaxRuns, err = strconv.Atoi(f.MaxRuns); errors.Is(err, strconv.ErrRange) {
			return bad("maxRuns", fmt.Errorf("%q is out of range: want 0 to %d", f.MaxRuns, cron.MaxMaxRuns))
		} else if err != nil {
			return bad("maxRuns", fmt.Errorf("%q is not a number", f.MaxRuns))
		}
	}
	if err := readDuration(f.Backoff, &t.Retry.Backoff); err != nil {
		return bad("retry.backoff", err)
	}
	if f.Attempts != "" {
		if t.Retry.Attempts, err = strconv.Atoi(f.Attempts); err != nil {
			return bad("retry.attempts", fmt.Errorf("%q is not a number", f.Attempts))
		}
	}
	return t, nil
}

// readTime reads a time of a form: a datetime-local input's, in loc, or
// RFC 3339; empty is the zero Time.
func readTime(s string, loc *time.Location) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{localLayout, "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time such as 2026-01-31T09:00", s)
}

// readDuration reads a duration of a form, such as "90s"; empty is 0.
func readDuration(s string, d *cron.Duration) error {
	if s == "" {
		*d = 0
		return nil
	}
	return d.UnmarshalText([]byte(s))
}

// editing reports whether tasks may be created and edited, and answers r
// with a 404 if not.
func (h *handler) editing(w http.ResponseWriter, r *http.Request, api bool) bool {
	if h.o.Definitions == nil || h.o.Table == nil {
		h.fail(w, r, api, http.StatusNotFound, "Tasks are not edited here: the page has no Definitions.")
		return false
	}
	return true
}

// newForm serves the form of a new task.
func (h *handler) newForm(w http.ResponseWriter, r *http.Request) {
	if !h.editing(w, r, false) {
		return
	}
	f := form{New: true, Task: fields{Permanent: true, Overlap: "skip", Misfire: "run-once"}, Zone: h.o.Location.String(), Known: h.calendarNames(r)}
	h.render(w, r, false, http.StatusOK, "form.html", h.withHandlers(f))
}

// editForm serves the form of the task name=, with its version.
func (h *handler) editForm(w http.ResponseWriter, r *http.Request) {
	if !h.editing(w, r, false) {
		return
	}
	name := r.URL.Query().Get("name")
	t, v, err := h.o.Definitions.Get(r.Context(), name)
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, cron.ErrUnknownTask) {
			status = http.StatusNotFound
		}
		h.fail(w, r, false, status, "The definition could not be read: "+err.Error())
		return
	}
	loc := zoneOf(t.Spec, t.Zone, h.o.Location)
	f := form{Task: fieldsOf(t, loc), Version: v, Zone: loc.String(), Known: h.calendarNames(r)}
	f.Preview = h.previewOf(r.Context(), t.Spec, t.Zone, t.Calendars)
	h.render(w, r, false, http.StatusOK, "form.html", h.withHandlers(f))
}

// An envelope is the body of api/create and api/update.
type envelope struct {
	Task    json.RawMessage `json:"task"`
	Version int64           `json:"version"` // api/update's: the version the change is made to
}

// save serves create and update, from a form, or from JSON if api. A
// form's "check" button previews the spec and saves nothing.
func (h *handler) save(api bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.editing(w, r, api) {
			return
		}
		create := strings.HasSuffix(r.URL.Path, "/create")
		f := form{New: create}
		if !api {
			f.Known = h.calendarNames(r)
		}
		var t cron.Task
		var err error
		if api {
			t, f.Version, err = decodeEnvelope(r.Body)
			if err != nil {
				h.render(w, r, true, http.StatusBadRequest, "", failureOf(err))
				return
			}
		} else {
			f.Task = fieldsFrom(r)
			f.Version, _ = strconv.ParseInt(r.PostFormValue("version"), 10, 64)
			loc := zoneOf(f.Task.Spec, f.Task.Zone, h.o.Location)
			f.Zone = loc.String()
			t, err = f.Task.task(loc)
			if r.PostFormValue("check") != "" {
				f.Preview = h.previewOf(r.Context(), f.Task.Spec, f.Task.Zone, splitNames(f.Task.Calendars))
				if err != nil {
					f.Error, f.Field = failureOf(err).Error, failureOf(err).Field
				}
				h.render(w, r, false, http.StatusOK, "form.html", h.withHandlers(f))
				return
			}
		}
		if err == nil {
			err = t.Validate()
		}
		ctx := r.Context()
		var v int64
		var old cron.Task // what the edit changes, for the audit log
		if err == nil {
			if create {
				v, err = h.o.Definitions.Create(ctx, t)
			} else {
				if h.o.Audit != nil {
					old, _, _ = h.o.Definitions.Get(ctx, t.Name)
				}
				v, err = h.o.Definitions.Update(ctx, t, f.Version)
			}
		}
		if err != nil {
			status, msg := h.refused(r, t.Name, create, f.Version, err, &f)
			if api {
				fl := failureOf(err)
				fl.Error = msg
				h.render(w, r, true, status, "", fl)
				return
			}
			f.Error = msg
			f.Field = failureOf(err).Field
			f.Preview = h.previewOf(r.Context(), f.Task.Spec, f.Task.Zone, splitNames(f.Task.Calendars))
			h.render(w, r, false, status, "form.html", h.withHandlers(f))
			return
		}
		h.snaps.stale()
		did := "updated"
		e := cron.AuditEntry{Action: "edit", Kind: kindTask, Name: t.Name}
		if create {
			did = "created"
			e.Action, e.Detail = "create", taskCreated(t)
		} else {
			if old.Name == "" {
				e.Detail = "its definition before could not be read; now " + taskCreated(t)
			} else {
				e.Detail = cron.TaskChanges(old, t)
			}
		}
		ok := h.audit(r, e)
		if api {
			writeJSON(w, http.StatusOK, done{Kind: kindTask, Name: t.Name, Done: did, Version: v, Audit: auditNote(ok)})
			return
		}
		redirect(w, unaudited(kindTask+"?"+url.Values{"name": {t.Name}, "done": {did}}.Encode(), ok))
	}
}

// decodeEnvelope reads the body of api/create or api/update, refusing
// unknown fields as cron.DecodeTasks does.
func decodeEnvelope(body io.Reader) (cron.Task, int64, error) {
	var e envelope
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return cron.Task{}, 0, fmt.Errorf("admin: reading the body: %w", err)
	}
	if len(e.Task) == 0 {
		return cron.Task{}, 0, errors.New(`admin: the body has no "task"`)
	}
	ts, err := cron.DecodeTasks(bytes.NewReader(append(append([]byte{'['}, e.Task...), ']')))
	if err != nil {
		return cron.Task{}, 0, err
	}
	return ts[0], e.Version, nil
}

// failureOf returns err as a failure, with the field at fault if it is a
// definition's.
func failureOf(err error) failure {
	f := failure{Error: err.Error()}
	var te *cron.TaskError
	if errors.As(err, &te) {
		f.Field = te.Field
	}
	return f
}

// refused says why the Definitions refused a write of the definition
// name (create, or at version), and with what status. A store's own
// errors for a stale version or a name taken are not known here: it reads
// the definition again to tell them apart. On a stale edit, f gets the
// definition in force, and its version, so that the user may save again
// once they have seen it.
func (h *handler) refused(r *http.Request, name string, create bool, version int64, err error, f *form) (int, string) {
	var te *cron.TaskError
	if errors.As(err, &te) {
		return http.StatusUnprocessableEntity, err.Error()
	}
	if errors.Is(err, cron.ErrUnknownTask) {
		return http.StatusNotFound, "This task is no longer defined: someone deleted it since you opened it. Create it again if you want it back."
	}
	cur, v, gerr := h.o.Definitions.Get(r.Context(), name)
	switch {
	case gerr != nil:
	case create:
		return http.StatusConflict, "A task of this name exists already: pick another name, or edit that one."
	case v != version:
		f.Current, f.Version = &cur, v
		return http.StatusConflict, fmt.Sprintf("Someone changed this task since you opened it (it is at version %d, you edited version %d). Its definition now is below: save again to replace it with yours.", v, version)
	}
	return http.StatusInternalServerError, "The definition could not be saved: " + err.Error()
}

// remove serves delete: the definition name=, at version=.
func (h *handler) remove(api bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.editing(w, r, api) {
			return
		}
		name := r.FormValue("name")
		version, _ := strconv.ParseInt(r.FormValue("version"), 10, 64)
		if !api && r.FormValue("confirm") == "" {
			// The form's box, which a browser without script requires
			// too: no deletion by a stray click.
			h.fail(w, r, api, http.StatusBadRequest, "Tick the box that says yes to delete the task.")
			return
		}
		if err := h.o.Definitions.Delete(r.Context(), name, version); err != nil {
			status, msg := h.refused(r, name, false, version, err, &form{})
			if status == http.StatusConflict {
				msg = "Someone changed this task since you opened it: open it again before you delete it."
			}
			h.fail(w, r, api, status, msg)
			return
		}
		h.snaps.stale()
		ok := h.audit(r, cron.AuditEntry{Action: "delete", Kind: kindTask, Name: name})
		if api {
			writeJSON(w, http.StatusOK, done{Kind: kindTask, Name: name, Done: "deleted", Audit: auditNote(ok)})
			return
		}
		redirect(w, unaudited("./?done=deleted", ok))
	}
}

// definition serves api/definition: the definition name= and its
// version, which api/update and api/delete name.
func (h *handler) definition(w http.ResponseWriter, r *http.Request) {
	if !h.editing(w, r, true) {
		return
	}
	t, v, err := h.o.Definitions.Get(r.Context(), r.URL.Query().Get("name"))
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, cron.ErrUnknownTask) {
			status = http.StatusNotFound
		}
		writeJSON(w, status, failureOf(err))
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Task    cron.Task `json:"task"`
		Version int64     `json:"version"`
	}{t, v})
}

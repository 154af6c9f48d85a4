package admin

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// action serves the write verb, one of run, pause, resume, backfill and
// cancel-backfill, of the task or job kind= and name=: a form's POST,
// answered with a redirect to the page it came from, or, if api, a
// script's, answered with JSON. A backfill, of a task only, runs the
// slots from= to= (times in the task's zone) on this replica, in the
// background (cron.Table.Backfill), and with again= set runs again those
// that have a finished record (schedule.RunAgain).
func (h *handler) action(verb string, api bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		kind, name := r.FormValue("kind"), r.FormValue("name")
		var pause []schedule.PauseOption
		if verb == "pause" {
			var msg string
			if pause, msg = pauseOptions(r); msg != "" {
				h.fail(w, r, api, http.StatusBadRequest, msg)
				return
			}
		}
		var err error
		switch {
		case kind != kindTask && kind != kindJob:
			h.fail(w, r, api, http.StatusBadRequest, "The kind must be task or job.")
			return
		case kind == kindJob && (verb == "backfill" || verb == "cancel-backfill"):
			h.fail(w, r, api, http.StatusBadRequest, "A job's backfill is its program's to start (schedule.Job.Backfill); the page backfills tasks.")
			return
		case kind == kindTask && h.o.Table == nil:
			h.fail(w, r, api, http.StatusNotFound, "There is no such task.")
			return
		case kind == kindJob && h.jobs[name] == nil:
			h.fail(w, r, api, http.StatusNotFound, "There is no such job.")
			return
		case verb == "backfill":
			var from, to time.Time
			var msg string
			if from, to, msg = h.backfillRange(r, name); msg != "" {
				h.fail(w, r, api, http.StatusBadRequest, msg)
				return
			}
			var opts []schedule.BackfillOption
			if r.FormValue("again") != "" { // a checkbox: set, whatever its value
				opts = append(opts, schedule.RunAgain())
			}
			err = h.o.Table.Backfill(name, from, to, opts...)
		case verb == "cancel-backfill":
			err = h.o.Table.CancelBackfill(name)
		default:
			err = h.act(verb, kind, name, pause)
		}
		if err != nil {
			status := http.StatusInternalServerError
			switch {
			case errors.Is(err, cron.ErrUnknownTask):
				status = http.StatusNotFound
			case errors.Is(err, cron.ErrTaskPaused):
				status = http.StatusConflict
			case errors.Is(err, cron.ErrTableStopped):
				status = http.StatusServiceUnavailable
			case errors.Is(err, schedule.ErrBackfilling):
				status = http.StatusConflict
			case errors.Is(err, schedule.ErrBackfillTooLong):
				status = http.StatusUnprocessableEntity
			}
			msg := "The task could not be changed: " + err.Error()
			switch {
			case errors.Is(err, schedule.ErrBackfillTooLong):
				msg = "The range holds more than " + strconv.Itoa(schedule.MaxBackfill) + " slots: backfill it in parts."
			case verb == "backfill":
				msg = "The backfill could not start: " + err.Error()
			}
			h.fail(w, r, api, status, msg)
			return
		}
		h.snaps.stale()
		ok := h.audit(r, cron.AuditEntry{Action: verb, Kind: kind, Name: name, Detail: actionDetail(r, verb)})
		if api {
			writeJSON(w, http.StatusOK, done{Kind: kind, Name: name, Done: verb, Audit: auditNote(ok)})
			return
		}
		redirect(w, unaudited(back(r, kind, name, verb), ok))
	}
}

// act runs, pauses (with opts) or resumes, as verb says, the task or
// job kind and name: the call of a single action and of each of a bulk
// one. An unknown task is cron.ErrUnknownTask; an unknown job, or a
// task without a Table, is errUnknown.
func (h *handler) act(verb, kind, name string, opts []schedule.PauseOption) error {
	if kind == kindJob {
		ji, ok := h.job(name)
		if !ok {
			return errUnknown
		}
		switch verb {
		case "run":
			ji.job.RunNow()
		case "pause":
			ji.job.Pause(opts...)
		case "resume":
			ji.job.Resume()
		}
		return nil
	}
	t := h.o.Table
	if t == nil {
		return errUnknown
	}
	switch verb {
	case "run":
		return t.RunNow(name)
	case "pause":
		return t.Pause(name, opts...)
	case "resume":
		return t.Resume(name)
	}
	return nil
}

// errUnknown is act's error for a name the page does not know.
var errUnknown = errors.New("admin: no such task or job")

// done is what a JSON write returns.
type done struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Done    string `json:"done"`
	Version int64  `json:"version,omitempty"` // of a definition created or updated
	Audit   string `json:"audit,omitempty"`   // set if the change was made but not written to the audit log
}

// actionDetail says in words what r asked of the action verb beyond its
// name: a pause's note and length, a backfill's range.
func actionDetail(r *http.Request, verb string) string {
	var parts []string
	switch verb {
	case "pause":
		if note := strings.TrimSpace(r.FormValue("note")); note != "" {
			parts = append(parts, "note "+strconv.Quote(note))
		}
		if d := strings.TrimSpace(r.FormValue("for")); d != "" {
			parts = append(parts, "for "+d)
		}
	case "backfill":
		parts = append(parts, "from "+r.FormValue("from")+" to "+r.FormValue("to"))
		if r.FormValue("again") != "" {
			parts = append(parts, "running again the slots that ran")
		}
	}
	if r.FormValue("do") != "" {
		parts = append(parts, "bulk")
	}
	return strings.Join(parts, ", ")
}

// pauseOptions returns the options of a pause that r asks for: its
// note=, and for=, how long it lasts, a duration such as 2h; or, if they
// do not read, a message that says why.
func pauseOptions(r *http.Request) ([]schedule.PauseOption, string) {
	var opts []schedule.PauseOption
	if note := strings.TrimSpace(r.FormValue("note")); note != "" {
		if len(note) > cron.MaxPauseNoteLen || !utf8.ValidString(note) {
			return nil, "The note must be text of at most " + strconv.Itoa(cron.MaxPauseNoteLen) + " bytes."
		}
		opts = append(opts, schedule.Because(note))
	}
	if f := strings.TrimSpace(r.FormValue("for")); f != "" {
		d, err := time.ParseDuration(f)
		if err != nil || d <= 0 {
			return nil, "How long the pause lasts must be a duration such as 2h or 30m, not " + strconv.Quote(clipError(f)) + "."
		}
		opts = append(opts, schedule.ResumeAt(time.Now().Add(d)))
	}
	return opts, ""
}

// back returns where a form's write redirects to, with done= saying what
// it did: the page of the list it came from (from=list, and its back=,
// the list's query), or the job's page.
func back(r *http.Request, kind, name, did string) string {
	if r.FormValue("from") == "list" {
		v := url.Values{}
		if q, err := url.ParseQuery(r.FormValue("back")); err == nil {
			if s := q.Get("q"); s != "" {
				v.Set("q", s)
			}
			if p, err := strconv.Atoi(q.Get("page")); err == nil && p > 1 {
				v.Set("page", strconv.Itoa(p))
			}
		}
		v.Set("done", did)
		return "./?" + v.Encode()
	}
	return kind + "?" + url.Values{"name": {name}, "done": {did}}.Encode()
}

// backfillRange returns the range of a backfill of the task name that r
// asks for, from= and to=, read in the task's zone; or, if they do not
// read, a message that says why.
func (h *handler) backfillRange(r *http.Request, name string) (from, to time.Time, msg string) {
	loc := h.o.Location
	if ts, _ := h.o.Table.TasksOf(r.Context(), name); len(ts) == 1 {
		loc = zoneOf(ts[0].Task.Spec, ts[0].Task.Zone, h.o.Location)
	}
	var err error
	if from, err = readTime(strings.TrimSpace(r.FormValue("from")), loc); err != nil || from.IsZero() {
		return from, to, "The backfill's start must be a time such as 2026-01-31T09:00."
	}
	if to, err = readTime(strings.TrimSpace(r.FormValue("to")), loc); err != nil || to.IsZero() {
		return from, to, "The backfill's end must be a time such as 2026-01-31T18:00."
	}
	if from.After(to) {
		return from, to, "The backfill's start is after its end."
	}
	return from, to, ""
}

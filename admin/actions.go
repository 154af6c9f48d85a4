package admin

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/circulation-go/circulation/cron"
)

// action serves the write verb, one of run, pause and resume, of the task
// or job kind= and name=: a form's POST, answered with a redirect to the
// page it came from, or, if api, a script's, answered with JSON.
func (h *handler) action(verb string, api bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		kind, name := r.FormValue("kind"), r.FormValue("name")
		var err error
		switch kind {
		case kindTask:
			t := h.o.Table
			if t == nil {
				h.fail(w, r, api, http.StatusNotFound, "There is no such task.")
				return
			}
			switch verb {
			case "run":
				err = t.RunNow(name)
			case "pause":
				err = t.Pause(name)
			case "resume":
				err = t.Resume(name)
			}
		case kindJob:
			ji, ok := h.job(name)
			if !ok {
				h.fail(w, r, api, http.StatusNotFound, "There is no such job.")
				return
			}
			switch verb {
			case "run":
				ji.job.RunNow()
			case "pause", "resume":
				h.setJobPaused(ji, verb == "pause")
			}
		default:
			h.fail(w, r, api, http.StatusBadRequest, "The kind must be task or job.")
			return
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
			}
			h.fail(w, r, api, status, "The task could not be changed: "+err.Error())
			return
		}
		h.snaps.stale()
		if api {
			writeJSON(w, http.StatusOK, done{Kind: kind, Name: name, Done: verb})
			return
		}
		redirect(w, back(r, kind, name, verb))
	}
}

// done is what a JSON write returns.
type done struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Done    string `json:"done"`
	Version int64  `json:"version,omitempty"` // of a definition created or updated
}

// setJobPaused pauses or resumes the Job of ji.
func (h *handler) setJobPaused(ji *jobInfo, paused bool) {
	if paused {
		ji.job.Pause()
	} else {
		ji.job.Resume()
	}
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

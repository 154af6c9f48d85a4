package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/circulation-go/circulation/cron"
)

// audit keeps e, done by the user of r, in Options.Audit, if set, and
// reports whether it did not fail; a failure does not undo the change,
// and the page says that it went unrecorded (unaudited).
func (h *handler) audit(r *http.Request, e cron.AuditEntry) bool {
	if h.o.Audit == nil {
		return true
	}
	if h.o.User != nil {
		e.Actor = h.o.User(r)
	}
	// The change is made: its entry is written even if the client goes
	// away meanwhile, within auditWrite.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditWrite)
	defer cancel()
	return h.o.Audit.Audit(ctx, e) == nil
}

// auditWrite bounds the write of an audit entry.
const auditWrite = 10 * time.Second

// unaudited returns target, a redirect, with audit=failed added to its
// query unless ok: the page it leads to then says that the change was not
// written to the audit log.
func unaudited(target string, ok bool) string {
	if ok {
		return target
	}
	if strings.Contains(target, "?") {
		return target + "&audit=failed"
	}
	return target + "?audit=failed"
}

// auditNote is what a JSON write says of an entry that failed.
func auditNote(ok bool) string {
	if ok {
		return ""
	}
	return "the change was made, but not written to the audit log"
}

// taskCreated says in words what a task created is.
func taskCreated(t cron.Task) string {
	s := fmt.Sprintf("spec %q, handler %q", t.Spec, t.Handler)
	if t.Zone != "" {
		s += ", zone " + t.Zone
	}
	if t.Paused {
		s += ", paused"
	}
	return s
}

// auditPage is the data of the audit log's page and of api/audit.
type auditPage struct {
	Name    string       `json:"name,omitempty"` // the task, job or calendar whose entries these are; empty for all
	Entries []auditEntry `json:"entries"`
	Older   string       `json:"-"`                 // the page of older entries, relative, empty if none
	Before  int64        `json:"before,omitempty"`  // what Older asks for, for scripts
	Warning string       `json:"warning,omitempty"` // why the log could not be read
}

// auditEntry is a cron.AuditEntry as the page shows it, its time in the
// page's zone.
type auditEntry struct {
	cron.AuditEntry
	Link string `json:"-"` // the page of what it concerns, if it has one
}

// auditLog serves audit and api/audit: the newest entries, of the task,
// job or calendar name= if given, of the kind= if given, older than the id
// before= if given.
func (h *handler) auditLog(api bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.o.Audit == nil {
			h.fail(w, r, api, http.StatusNotFound, "No audit log is kept here.")
			return
		}
		q := cron.AuditQuery{Name: r.FormValue("name"), Kind: r.FormValue("kind"), Limit: h.o.PageSize}
		q.Before, _ = strconv.ParseInt(r.FormValue("before"), 10, 64)
		p := auditPage{Name: q.Name}
		p.Entries, p.Warning = h.readAudit(r, q)
		if n := len(p.Entries); n == q.Max() {
			p.Before = p.Entries[n-1].ID
			v := url.Values{"before": {strconv.FormatInt(p.Before, 10)}}
			if q.Name != "" {
				v.Set("name", q.Name)
			}
			if q.Kind != "" {
				v.Set("kind", q.Kind)
			}
			// The whole URL, not its query: html/template escapes a value
			// in a URL's query again, "=" and "&" included.
			p.Older = "audit?" + v.Encode()
		}
		if p.Entries == nil {
			p.Entries = []auditEntry{}
		}
		h.render(w, r, api, http.StatusOK, "audit.html", p)
	}
}

// readAudit reads the entries q selects, or says why it could not.
func (h *handler) readAudit(r *http.Request, q cron.AuditQuery) ([]auditEntry, string) {
	es, err := h.o.Audit.AuditLog(r.Context(), q)
	if err != nil {
		return nil, "The audit log could not be read: " + err.Error()
	}
	out := make([]auditEntry, len(es))
	for i, e := range es {
		e.At = e.At.In(h.o.Location)
		out[i] = auditEntry{AuditEntry: e}
		switch {
		case e.Kind == kindTask || e.Kind == kindJob:
			out[i].Link = e.Kind + "?" + url.Values{"name": {e.Name}}.Encode()
		case e.Kind == "calendar" && h.o.Calendars != nil:
			out[i].Link = "calendars"
		}
	}
	return out, ""
}

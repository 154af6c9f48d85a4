package admin

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// upcoming is the number of next runs a job's page shows.
const upcoming = 10

// A detail is a job's page, and what api/task and api/job return: the
// job as the list shows it, its next runs, its definition, and a page of
// its history, newest first.
type detail struct {
	row
	Definition *cron.Task   `json:"definition,omitempty"` // a task's, with its defaults spelled out
	Loaded     bool         `json:"loaded"`               // the Table runs the task (false if only defined yet); a Job, always
	Upcoming   []time.Time  `json:"upcoming"`             // its next runs, in its zone
	History    []record     `json:"history"`
	Page       int          `json:"page"` // of the history, from 1
	PageSize   int          `json:"pageSize"`
	More       bool         `json:"more"` // an older page of history exists
	Warning    string       `json:"warning,omitempty"`
	Remaining  *int         `json:"remaining,omitempty"` // the runs its MaxRuns leaves; nil without one
	Backfill   *backfill    `json:"backfill,omitempty"`  // its latest backfill on this replica`
	Audited    bool         `json:"-"`                   // an audit log is kept: Changes are read
	Changes    []auditEntry `json:"changes,omitempty"`   // its latest entries in the audit log, newest first
	AuditLink  string       `json:"-"`
	Back       string       `json:"-"` // the page's own URL, relative
	PrevPage   string       `json:"-"`
	NextPage   string       `json:"-"`
}

// recentChanges is how many entries of the audit log a task's or job's
// page shows.
const recentChanges = 5

// detail serves the page of a task or a job, and api/task and api/job:
// kind and name=, and page= of its history.
func (h *handler) detail(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		api := strings.HasPrefix(r.URL.Path, "/api/")
		name := r.URL.Query().Get("name")
		page, ok := pageOf(r)
		if !ok {
			h.fail(w, r, api, http.StatusBadRequest, badPage)
			return
		}
		ctx := r.Context()
		d := detail{Page: page, PageSize: h.o.PageSize}
		var s schedule.Schedule // the times of its next runs; nil for its Next only
		switch kind {
		case kindTask:
			if h.o.Table == nil {
				h.fail(w, r, api, http.StatusNotFound, "There is no such task.")
				return
			}
			ts, err := h.o.Table.TasksOf(ctx, name)
			if err != nil {
				d.Warning = "The last run could not be read: " + err.Error()
			}
			var st *cron.TaskState
			if len(ts) == 1 {
				st = &ts[0]
				_, d.Loaded = h.o.Table.Next(name) // not a task whose only definition was refused
			} else if st = h.unloaded(r, name); st == nil {
				h.fail(w, r, api, http.StatusNotFound, "There is no such task.")
				return
			}
			d.row = h.taskRow(st)
			t := st.Task
			// Its times in its zone, as the page's others are.
			t.Start, t.End, t.Created, t.PausedUntil = in(t.Start, d.loc), in(t.End, d.loc), in(t.Created, d.loc), in(t.PausedUntil, d.loc)
			d.Definition = &t
			if t.MaxRuns > 0 {
				n := st.Remaining
				d.Remaining = &n
			}
			if b := st.Backfill; b != nil {
				d.Backfill = backfillOf(b, d.loc)
			}
			if d.Loaded {
				s, _ = h.o.Table.Schedule(name) // its calendars' days passed over
			}
		case kindJob:
			ji, ok := h.job(name)
			if !ok {
				h.fail(w, r, api, http.StatusNotFound, "There is no such job.")
				return
			}
			d.row = h.jobRow(ji, nil)
			d.Loaded = true // a Job runs from its Start: its page has its buttons
			s = ji.sched
		}
		if d.Paused || d.Next.IsZero() {
			s = nil // no slot falls due: its Next, zero, says so
		}
		if s != nil {
			d.Upcoming = schedule.Upcoming(s, time.Now(), upcoming)
			for i, t := range d.Upcoming {
				d.Upcoming[i] = t.In(d.loc)
			}
		} else if !d.Next.IsZero() {
			d.Upcoming = []time.Time{d.Next}
		}

		if st := h.o.Store; st != nil {
			// A page of history: the records up to its end, newest first,
			// and one more to know whether an older page exists. Page p
			// reads p pages: a store has no offset to start from.
			recs, err := st.History(ctx, name, page*d.PageSize+1)
			if err != nil {
				d.Warning = "The history could not be read: " + err.Error()
			}
			if len(recs) > 0 {
				d.Last = recordOf(recs[0], d.loc)
			}
			from := min((page-1)*d.PageSize, len(recs))
			to := min(page*d.PageSize, len(recs))
			d.More = len(recs) > to
			d.History = make([]record, 0, to-from)
			for _, rec := range recs[from:to] {
				d.History = append(d.History, *recordOf(rec, d.loc))
			}
		}
		if d.History == nil {
			d.History = []record{}
		}
		if h.o.Audit != nil {
			var warning string
			d.Audited = true
			d.Changes, warning = h.readAudit(r, cron.AuditQuery{Name: name, Kind: kind, Limit: recentChanges})
			if warning != "" && d.Warning == "" {
				d.Warning = warning
			}
			d.AuditLink = "audit?" + url.Values{"name": {name}, "kind": {kind}}.Encode()
		}
		d.Back = kind + "?" + url.Values{"name": {name}}.Encode()
		if page > 1 {
			d.PrevPage = d.Back + pageParam(page-1)
		}
		if d.More {
			d.NextPage = d.Back + pageParam(page+1)
		}
		h.render(w, r, api, http.StatusOK, "detail.html", d)
	}
}

// pageParam returns the page= to add to a URL with a query, none for 1.
func pageParam(p int) string {
	if p <= 1 {
		return ""
	}
	return "&page=" + strconv.Itoa(p)
}

// unloaded returns the state of a task that the Definitions hold but the
// Table does not run yet (it loads it at its next look), or nil.
func (h *handler) unloaded(r *http.Request, name string) *cron.TaskState {
	if h.o.Definitions == nil {
		return nil
	}
	t, _, err := h.o.Definitions.Get(r.Context(), name)
	if err != nil {
		return nil
	}
	return &cron.TaskState{Task: t}
}

// zoneOf returns the zone in which spec runs: its CRON_TZ or TZ prefix,
// else zone, else def.
func zoneOf(spec, zone string, def *time.Location) *time.Location {
	if f := strings.Fields(spec); len(f) > 0 {
		for _, p := range []string{"CRON_TZ=", "TZ="} {
			if name, ok := strings.CutPrefix(f[0], p); ok {
				if loc, err := loadZone(name); err == nil {
					return loc
				}
			}
		}
	}
	if zone != "" {
		if loc, err := loadZone(zone); err == nil {
			return loc
		}
	}
	return def
}

// zones holds the zones loaded, by name: time.LoadLocation reads the tz
// database at each call.
var zones sync.Map

// loadZone is time.LoadLocation, with the zones kept once loaded.
func loadZone(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
}

// A backfill is a task's latest backfill on this replica, as its page
// shows it: its range in the task's zone, the slots handled, and why it
// ended early, if it did.
type backfill struct {
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	Slots     int       `json:"slots"`
	Done      int       `json:"done"`
	HadRecord int       `json:"hadRecord"` // of Done: slots that had a record, and did not run again
	RanAgain  int       `json:"ranAgain"`  // of Done: slots that had a finished record, and ran again
	Running   bool      `json:"running"`
	Error     string    `json:"error,omitempty"`
}

// backfillOf returns b as a page shows it, its times in loc.
func backfillOf(b *cron.BackfillState, loc *time.Location) *backfill {
	v := &backfill{From: in(b.From, loc), To: in(b.To, loc), Slots: b.Slots, Done: b.Done,
		HadRecord: b.HadRecord, RanAgain: b.RanAgain, Running: b.Running}
	if b.Err != nil {
		v.Error = b.Err.Error()
	}
	return v
}

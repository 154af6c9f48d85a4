package admin

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/circulation-go/circulation/schedule"
)

//go:embed assets
var assets embed.FS

// pages are the templates of the HTML pages, one per file of assets.
var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"local":      local,
	"utc":        utc,
	"iso":        iso,
	"ago":        ago,
	"took":       took,
	"clip":       clipError,
	"lower":      strings.ToLower,
	"version":    func() string { return assetVersion },
	"statusText": http.StatusText,
	"buttons":    buttonsOf,
}).ParseFS(assets, "assets/*.html"))

// static are the files served under static/, by name, with their types.
var static = map[string]struct {
	body []byte
	typ  string
}{}

// assetVersion is a hash of the static files, which their URLs carry, so
// that a browser may keep them for good and still gets a changed one.
var assetVersion string

func init() {
	sum := sha256.New()
	for _, name := range []string{"admin.css", "admin.js"} {
		b, err := fs.ReadFile(assets, "assets/"+name)
		if err != nil {
			panic(err)
		}
		typ := "text/css; charset=utf-8"
		if path.Ext(name) == ".js" {
			typ = "text/javascript; charset=utf-8"
		}
		static[name] = struct {
			body []byte
			typ  string
		}{b, typ}
		sum.Write(b)
	}
	assetVersion = hex.EncodeToString(sum.Sum(nil)[:6])
}

// serveAsset serves a static file.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	f, ok := static[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.typ)
	if r.URL.RawQuery == assetVersion {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.Write(f.body)
}

// frame is what every page's template gets: the page's own data in Data.
type frame struct {
	Title   string
	Write   bool   // the user may change things: show the buttons
	Editing bool   // Definitions are set: tasks may be created and edited
	HasCals bool   // Calendars are set: the page lists them
	Refresh int64  // milliseconds between refreshes; 0 for none
	Flash   string // what the last write did
	// Unaudited: the last write was made, but not written to the audit
	// log.
	Unaudited bool
	HasAudit  bool // Audit is set: the page shows the audit log
	Status    int
	Data      any
}

// buttons are what the buttons of a job need: its run, pause and resume
// forms.
type buttons struct {
	Kind, Name string
	Paused     bool
	FromList   bool   // the list shows them: redirect back to it
	Back       string // the list's query
}

// buttonsOf returns the buttons of a job, on the list if fromList, whose
// query is back.
func buttonsOf(kind, name string, paused, fromList bool, back string) buttons {
	return buttons{Kind: kind, Name: name, Paused: paused, FromList: fromList, Back: back}
}

// render writes the page tmpl with data, as HTML, or as JSON if api.
func (h *handler) render(w http.ResponseWriter, r *http.Request, api bool, status int, tmpl string, data any) {
	if api {
		writeJSON(w, status, data)
		return
	}
	f := frame{Title: h.o.Title, Write: h.canWrite(r), Editing: h.o.Definitions != nil && h.o.Table != nil,
		HasCals: h.o.Calendars != nil, Flash: flashes[r.URL.Query().Get("done")], Status: status, Data: data,
		Unaudited: r.URL.Query().Get("audit") == "failed", HasAudit: h.o.Audit != nil}
	if h.o.Refresh > 0 && status < 400 {
		f.Refresh = h.o.Refresh.Milliseconds()
	}
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, tmpl, f); err != nil {
		http.Error(w, "admin: rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// writeJSON writes v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "admin: encoding JSON: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// failure is the body of an error, as a page and as JSON.
type failure struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"` // the field of a definition at fault
}

// fail answers r with an error page, or JSON if api.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, api bool, status int, msg string) {
	h.render(w, r, api, status, "error.html", failure{Error: msg})
}

// flashes are the messages a page shows after a write, by the key that
// its redirect puts in done=: never the text of a URL.
var flashes = map[string]string{
	"run":             "Run requested: its record appears once the run has claimed its slot.",
	"pause":           "Paused: its slots pass without a run until it is resumed.",
	"resume":          "Resumed: its next slot is the first after now.",
	"backfill":        "Backfill started: each slot of the range runs in turn, on this replica; a slot with a record already is not run again.",
	"cancel-backfill": "Backfill cancelled: the slot in flight, if any, runs on to its end.",
	"created":         "Created: the Table loads it at its next look at the definitions.",
	"updated":         "Saved: the Table applies it at its next look at the definitions.",
	"deleted":         "Deleted: the Table stops it at its next look; a run in flight goes on to its end.",

	"calendar-created": "Calendar created: tasks may name it.",
	"calendar-updated": "Calendar saved: the tasks naming it pass over its new days once the Table has applied it.",
	"calendar-deleted": "Calendar deleted.",
}

// A record is a schedule.Record as a page and the JSON routes show it,
// its times in the job's zone.
type record struct {
	Due      time.Time `json:"due"`
	Status   string    `json:"status"`
	Reason   string    `json:"reason"`
	Attempt  int       `json:"attempt"`
	Node     string    `json:"node,omitempty"`
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end,omitzero"`
	Duration string    `json:"duration,omitempty"` // End - Start, if it ended
	Error    string    `json:"error,omitempty"`
}

// recordOf returns r as a page shows it, in loc; nil for the zero Record.
func recordOf(r schedule.Record, loc *time.Location) *record {
	if r.Due.IsZero() {
		return nil
	}
	rec := &record{Due: in(r.Due, loc), Status: r.Status.String(), Reason: r.Reason.String(), Attempt: r.Attempt,
		Node: r.Node, Start: in(r.Start, loc), End: in(r.End, loc), Error: r.Err}
	if !r.Start.IsZero() && !r.End.IsZero() {
		rec.Duration = took(r.End.Sub(r.Start))
	}
	return rec
}

// in returns t in loc, and the zero Time unchanged.
func in(t time.Time, loc *time.Location) time.Time {
	if t.IsZero() {
		return t
	}
	return t.In(loc)
}

// local formats t, a time in its job's zone, as a page shows it: to the
// second, which a person reads; its title (utc) has the milliseconds.
func local(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

// clipError returns a text's first line, cut to 120 bytes at a rune's
// start, with "…" if anything was left out: what a list shows of an error,
// and a message quotes of a value it refuses.
func clipError(s string) string {
	const most = 120
	line, _, more := strings.Cut(s, "\n")
	if len(line) > most {
		i := most
		for i > 0 && !utf8.RuneStart(line[i]) {
			i--
		}
		line, more = line[:i], true
	}
	if more {
		line += "…"
	}
	return line
}

// utc formats t in UTC, for the title of a time on a page.
func utc(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// iso formats t for the datetime attribute of a time element.
func iso(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// ago says how far t is from now: "in 4m", "12s ago".
func ago(t time.Time) string {
	d := time.Until(t)
	if d >= 0 {
		return "in " + short(d)
	}
	return short(-d) + " ago"
}

// short rounds d to what a person reads at a glance: "4m", "2h", "3d".
func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// took formats the duration of a run: "1.5s", "320ms", "<1ms".
func took(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

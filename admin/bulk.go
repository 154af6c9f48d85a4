package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// MaxBulk is the most tasks and jobs one bulk action acts on: a larger
// selection, or a filter that matches more, is refused, with a message
// that asks for a narrower one.
const MaxBulk = 1000

// bulkShown is how many of its tasks and jobs a confirmation page names.
const bulkShown = 50

// maxBulkBody bounds the body of a bulk action's form, which may name
// MaxBulk tasks of 200 bytes each, escaped; other writes take 64 kB.
const maxBulkBody = 1 << 20

// bulkVerbs are the actions a bulk action takes, with what the page says
// of them.
var bulkVerbs = map[string]struct{ verb, effect string }{
	"run":    {"Run now", "run now, once each; a paused task is not run"},
	"pause":  {"Pause", "paused: their slots pass without a run until they are resumed"},
	"resume": {"Resume", "resumed: the next slot of each is the first after now"},
}

// A target is a task or a job a bulk action acts on.
type target struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	URL  string `json:"-"` // of its page, relative
}

// A bulkPage is the confirmation of a bulk action: what it will act on,
// as the page shows it and as api/bulk returns it without confirm=1.
type bulkPage struct {
	Do       string   `json:"do"`
	Count    int      `json:"count"`
	All      bool     `json:"all"`   // every task and job the filter matches
	Items    []target `json:"items"` // every one as JSON; the page shows bulkShown
	Verb     string   `json:"-"`     // Do in words
	Effect   string   `json:"-"`
	Filter   filter   `json:"-"` // with All
	Filtered string   `json:"-"` // what the filter keeps besides the name, in words
	Seen     int      `json:"-"` // the count the user was shown, if the filter now matches another
	More     int      `json:"-"` // those the page does not name
	Sel      []string `json:"-"` // the sel= fields the confirmation carries, without All
	Note     string   `json:"-"` // of a pause
	For      string   `json:"-"`
	Back     string   `json:"-"` // the list's page, relative
	Once     string   `json:"-"` // names this confirmation: a form sent again does not act again
	Warning  string   `json:"warning,omitempty"`
}

// A bulkResult is what a confirmed bulk action did.
type bulkResult struct {
	Do     string        `json:"do"`
	Done   int           `json:"done"`
	Failed []bulkFailure `json:"failed"`
	// Unaudited counts the tasks and jobs acted on whose entries could not
	// be written to the audit log.
	Unaudited int    `json:"unaudited,omitempty"`
	Verb      string `json:"-"`
	Back      string `json:"-"`
}

// A bulkFailure is a task or job a bulk action could not act on, and why.
type bulkFailure struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Error string `json:"error"`
}

// bulk serves a bulk action, and api/bulk: do= (run, pause or resume) of
// the tasks and jobs of sel= (task:NAME or job:NAME, repeated), or, with
// all= set, of every one that the filter (q=, state=, handler=,
// business=, zone=) matches; note= and for= for a pause, as a single
// one takes them. Without confirm=1 it changes nothing: it answers with
// a confirmation page, whose form posts the same fields with confirm=1,
// or, if api, with what it would act on. With it, it acts on each in turn
// and says what was done and what failed. More than MaxBulk is refused.
func (h *handler) bulk(api bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			status := http.StatusBadRequest
			var big *http.MaxBytesError
			if errors.As(err, &big) {
				status = http.StatusRequestEntityTooLarge
			}
			h.fail(w, r, api, status, "The form does not read: "+err.Error())
			return
		}
		do := r.Form.Get("do")
		v, ok := bulkVerbs[do]
		if !ok {
			h.fail(w, r, api, http.StatusBadRequest, "The action must be run, pause or resume.")
			return
		}
		var pause []schedule.PauseOption
		if do == "pause" {
			var msg string
			if pause, msg = pauseOptions(r); msg != "" {
				h.fail(w, r, api, http.StatusBadRequest, msg)
				return
			}
		}
		p := bulkPage{Do: do, Verb: v.verb, Effect: v.effect, Back: listBack(r.Form.Get("back")),
			Note: r.Form.Get("note"), For: r.Form.Get("for")}
		var ts []target
		if r.Form.Get("all") != "" {
			f, ok := filterIn(r.Form)
			if !ok {
				h.fail(w, r, api, http.StatusBadRequest, badState)
				return
			}
			var total int
			ts, total, p.Warning = h.matching(r.Context(), f)
			if total > MaxBulk {
				h.fail(w, r, api, http.StatusUnprocessableEntity, "The filter matches "+thousands(total)+
					"; act on "+thousands(MaxBulk)+" at most: narrow the filter.")
				return
			}
			p.All, p.Filter, p.Filtered = true, f, f.describe()
		} else {
			var msg string
			if ts, msg = selection(r.Form["sel"]); msg != "" {
				h.fail(w, r, api, http.StatusBadRequest, msg)
				return
			}
			if len(ts) > MaxBulk {
				h.fail(w, r, api, http.StatusUnprocessableEntity, thousands(len(ts))+" are selected; act on "+
					thousands(MaxBulk)+" at most: select fewer.")
				return
			}
		}
		if len(ts) == 0 {
			msg := "Nothing is selected: tick the tasks and jobs to act on, or all those matching the filter."
			if p.All {
				msg = "No task or job matches the filter."
				if p.Warning != "" {
					msg += " " + p.Warning
				}
			}
			h.fail(w, r, api, http.StatusBadRequest, msg)
			return
		}
		p.Count = len(ts)
		if p.All && r.Form.Get("confirm") != "" && r.Form.Has("count") && r.Form.Get("count") != strconv.Itoa(p.Count) {
			// The filter matches others than those confirmed: ask again.
			p.Seen, _ = strconv.Atoi(r.Form.Get("count"))
			if api {
				h.fail(w, r, api, http.StatusConflict, "The filter matches "+thousands(p.Count)+" now, not "+
					thousands(p.Seen)+": nothing was done.")
				return
			}
		} else if r.Form.Get("confirm") != "" {
			if once := r.Form.Get("once"); once != "" && !h.done.add(once) {
				// The result page reloaded, or the form sent twice: a
				// Run must not run again.
				h.fail(w, r, api, http.StatusConflict, "This bulk action was carried out already: sending it again does not repeat it.")
				return
			}
			h.bulkAct(w, r, api, p, ts, pause)
			return
		}
		p.Once = newOnce()
		if api {
			p.Items = ts
			writeJSON(w, http.StatusOK, p)
			return
		}
		p.Items = ts[:min(len(ts), bulkShown)]
		p.More = len(ts) - len(p.Items)
		if !p.All {
			for _, t := range ts {
				p.Sel = append(p.Sel, t.Kind+":"+t.Name)
			}
		}
		h.render(w, r, false, http.StatusOK, "bulk.html", p)
	}
}

// bulkAct acts on ts, as p says, and answers with what was done and what
// failed, and why.
func (h *handler) bulkAct(w http.ResponseWriter, r *http.Request, api bool, p bulkPage, ts []target, pause []schedule.PauseOption) {
	res := bulkResult{Do: p.Do, Verb: p.Verb, Back: p.Back, Failed: []bulkFailure{}}
	detail := actionDetail(r, p.Do)
	for _, t := range ts {
		if err := h.act(p.Do, t.Kind, t.Name, pause); err != nil {
			res.Failed = append(res.Failed, bulkFailure{Kind: t.Kind, Name: t.Name, Error: bulkError(err)})
			continue
		}
		res.Done++
		if !h.audit(r, cron.AuditEntry{Action: p.Do, Kind: t.Kind, Name: t.Name, Detail: detail}) {
			res.Unaudited++
		}
	}
	h.snaps.stale()
	h.render(w, r, api, http.StatusOK, "bulk-done.html", res)
}

// bulkError says why a bulk action failed on a task or job.
func bulkError(err error) string {
	switch {
	case errors.Is(err, errUnknown), errors.Is(err, cron.ErrUnknownTask):
		return "There is no such task or job (deleted meanwhile?)."
	case errors.Is(err, cron.ErrTaskPaused):
		return "It is paused: resume it first."
	case errors.Is(err, cron.ErrTableStopped):
		return "The Table is stopped."
	}
	return err.Error()
}

// selection reads the sel= fields of a bulk action, task:NAME or
// job:NAME, each once; or, if one does not read, a message that says why.
func selection(sel []string) ([]target, string) {
	var ts []target
	seen := make(map[target]bool, len(sel))
	for _, s := range sel {
		kind, name, _ := strings.Cut(s, ":")
		if (kind != kindTask && kind != kindJob) || name == "" {
			return nil, "A selection is task:NAME or job:NAME, not " + strconv.Quote(clipError(s)) + "."
		}
		t := target{Kind: kind, Name: name}
		if !seen[t] {
			seen[t] = true
			t.URL = kind + "?" + url.Values{"name": {name}}.Encode()
			ts = append(ts, t)
		}
	}
	return ts, ""
}

// matching returns the tasks and jobs that f matches, as the list shows
// them, up to MaxBulk+1 of them, their total number, and what could not be
// read. A filter by state, handler, business id or zone reads the
// overview's census, one no older than OverviewAge, a search by name
// alone the names' snapshot.
func (h *handler) matching(ctx context.Context, f filter) (ts []target, total int, warning string) {
	lq := strings.ToLower(f.Query)
	add := func(e *entry) {
		if total <= MaxBulk {
			ts = append(ts, target{Kind: e.kind, Name: e.name, URL: e.kind + "?" + url.Values{"name": {e.name}}.Encode()})
		}
		total++
	}
	if f.byState() {
		c := h.cens.current(ctx)
		for i := range c.items {
			if f.matches(&c.items[i], lq) {
				add(c.items[i].e)
			}
		}
		return ts, total, c.warning
	}
	snap := h.snaps.get(ctx)
	for i := range snap.entries {
		if e := &snap.entries[i]; lq == "" || strings.Contains(e.lower, lq) {
			add(e)
		}
	}
	return ts, total, snap.warning
}

// listBack returns the page of the list that back, its query, names: its
// filter and page, read again, never the query as it came.
func listBack(back string) string {
	q, err := url.ParseQuery(back)
	if err != nil {
		return "./"
	}
	f, ok := filterIn(q)
	if !ok {
		return "./"
	}
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	return "./" + listQuery(f, page)
}

// thousands formats n, a count, with a comma between each three digits:
// 12,345.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// newOnce returns a name for a confirmation, which no other has.
func newOnce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// An onceSet holds the names of the confirmations carried out, the newest
// onceKept of them.
type onceSet struct {
	mu    sync.Mutex
	seen  map[string]bool
	order []string
}

// onceKept bounds the confirmations an onceSet remembers.
const onceKept = 4096

// add records once, and reports false if it was there already.
func (s *onceSet) add(once string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[once] {
		return false
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if len(s.order) == onceKept {
		delete(s.seen, s.order[0])
		s.order = s.order[1:]
	}
	s.seen[once] = true
	s.order = append(s.order, once)
	return true
}

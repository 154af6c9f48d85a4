package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// The kinds of the rows of the list: a task of the Table, or one of the
// Jobs. A task and a job may share a name.
const (
	kindTask = "task"
	kindJob  = "job"
)

// A snapshot is the names of every task and job, sorted: what the list
// pages and searches. The rows of a page are read when it is served.
type snapshot struct {
	at      time.Time
	tasks   []string // the Table's names, as read
	entries []entry
	warning string // why there is no snapshot
}

// An entry is a task or a job of a snapshot.
type entry struct {
	kind  string
	name  string
	lower string   // name in lower case, for the search
	job   *jobInfo // kindJob's
}

// A cache hands out the latest value its read returned, reading it again
// once it is older than age, or a write made it stale. One request reads
// at a time; the others meanwhile take the previous value, unless a write
// made it stale, and then wait for the new one. A cache in the background
// reads a value that is only old, up to twice age, in a goroutine of its
// own: the request that finds it old takes it as it is, as the others do.
// The handler has two: the names the list pages (snaps), and the
// overview's census, which is read in the background.
type cache[T any] struct {
	age  time.Duration                         // set by New; a read per request if negative
	read func(ctx context.Context, prev *T) *T // set by New; prev is nil at first
	fail func(err error) *T                    // set by New: the value for a request that gave up waiting
	gen  *atomic.Uint64                        // set by New, shared by the handler's caches: raised by each write
	bg   bool                                  // set by New: an old value is read again in the background

	mu       sync.Mutex
	cur      *T
	at       time.Time     // when the reading of cur began
	curGen   uint64        // gen when the reading of cur began
	building chan struct{} // closed when the reading under way ends; nil if none
}

// get returns a value no older than age, or the previous one while a new
// one is read, unless a write made it stale.
func (s *cache[T]) get(ctx context.Context) *T {
	return s.obtain(ctx, false)
}

// current returns a value no older than age, waiting for a reading if
// need be: for a write that acts on what the value says.
func (s *cache[T]) current(ctx context.Context) *T {
	return s.obtain(ctx, true)
}

func (s *cache[T]) obtain(ctx context.Context, current bool) *T {
	for {
		s.mu.Lock()
		cur := s.cur
		fresh := cur != nil && s.curGen == s.gen.Load()
		old := time.Since(s.at)
		if fresh && s.age > 0 && old < s.age {
			s.mu.Unlock()
			return cur
		}
		// Old, but no write came since: good enough while the next is
		// read, unless the caller acts on it, or it is too old to serve.
		usable := fresh && !current && (!s.bg || old < 2*s.age)
		if ch := s.building; ch != nil {
			s.mu.Unlock()
			if usable {
				return cur
			}
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				if cur != nil {
					return cur
				}
				return s.fail(ctx.Err())
			}
		}
		ch := make(chan struct{})
		s.building = ch
		gen, at := s.gen.Load(), time.Now()
		s.mu.Unlock()
		if usable && s.bg && s.age > 0 {
			go s.build(ctx, cur, ch, gen, at, true)
			return cur
		}
		return s.build(ctx, cur, ch, gen, at, false)
	}
}

// build reads the value that replaces prev, for the reading of ch that
// began at at, when the writes were gen. A read that panics leaves prev
// in place and the panic to the request that read; in the background,
// where no request would recover it, the value is fail's, which says so.
func (s *cache[T]) build(ctx context.Context, prev *T, ch chan struct{}, gen uint64, at time.Time, background bool) (v *T) {
	defer func() {
		if background {
			if p := recover(); p != nil {
				v = s.fail(fmt.Errorf("admin: reading the page's state panicked: %v", p))
			}
		}
		s.mu.Lock()
		if v != nil {
			s.cur, s.at, s.curGen = v, at, gen
		}
		s.building = nil
		s.mu.Unlock()
		close(ch)
	}()
	// Read for every request that will be served it, not only this one: a
	// client that goes away does not cut the read short, and a store that
	// hangs holds it for cacheRead at most.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cacheRead)
	defer cancel()
	return s.read(rctx, prev)
}

// cacheRead bounds a read of a cache.
const cacheRead = 10 * time.Second

// stale makes the values read before now, of every cache of the handler,
// stale: a write changed them.
func (s *cache[T]) stale() {
	s.gen.Add(1)
}

// read reads the names of every task and job, sorted. It reuses the
// entries of prev, if not nil, when the Table's names are as they were.
func (h *handler) read(_ context.Context, prev *snapshot) *snapshot {
	if testHookRead != nil {
		testHookRead()
	}
	snap := &snapshot{at: time.Now()}
	if h.o.Table != nil {
		snap.tasks = h.o.Table.Names()
	}
	if prev != nil && slices.Equal(snap.tasks, prev.tasks) {
		snap.tasks, snap.entries = prev.tasks, prev.entries
		return snap
	}
	jobs := h.sortedJobs()
	tasks := snap.tasks
	// Merge the two lists, sorted by name already.
	snap.entries = make([]entry, 0, len(tasks)+len(jobs))
	i, j := 0, 0
	for i < len(tasks) || j < len(jobs) {
		if j == len(jobs) || (i < len(tasks) && tasks[i] <= jobs[j].job.Name()) {
			snap.entries = append(snap.entries, entry{kind: kindTask, name: tasks[i], lower: strings.ToLower(tasks[i])})
			i++
			continue
		}
		ji := jobs[j]
		name := ji.job.Name()
		snap.entries = append(snap.entries, entry{kind: kindJob, name: name, lower: strings.ToLower(name), job: ji})
		j++
	}
	return snap
}

// rows returns the rows of es, in order: it reads the states of their
// tasks (Table.TasksOf) and the last records of their jobs, in one call
// each. A task the Table no longer runs is left out. The warning says
// what could not be read.
func (h *handler) rows(ctx context.Context, es []*entry) (rows []row, warning string) {
	var tasks, jobs []string
	for _, e := range es {
		if e.kind == kindTask {
			tasks = append(tasks, e.name)
		} else {
			jobs = append(jobs, e.name)
		}
	}
	var errs []error
	states := make(map[string]*cron.TaskState, len(tasks))
	if len(tasks) > 0 && h.o.Table != nil {
		ts, err := h.o.Table.TasksOf(ctx, tasks...)
		errs = append(errs, err)
		for i := range ts {
			states[ts[i].Task.Name] = &ts[i]
		}
	}
	var lasts map[string]schedule.Record
	if len(jobs) > 0 && h.o.Store != nil {
		var err error
		lasts, err = schedule.LastOf(ctx, h.o.Store, jobs)
		errs = append(errs, err)
	}
	rows = make([]row, 0, len(es))
	for _, e := range es {
		switch e.kind {
		case kindTask:
			if s := states[e.name]; s != nil {
				rows = append(rows, h.taskRow(s))
			}
		case kindJob:
			var last *schedule.Record
			if r, ok := lasts[e.name]; ok {
				last = &r
			}
			rows = append(rows, h.jobRow(e.job, last))
		}
	}
	if err := errors.Join(errs...); err != nil {
		warning = "Some last runs could not be read: " + err.Error()
	}
	return rows, warning
}

// A row is a task or a job as the list shows it, and as api/tasks
// returns it: its times in its zone.
type row struct {
	Kind        string    `json:"kind"`
	Name        string    `json:"name"`
	Spec        string    `json:"spec,omitempty"`
	Description string    `json:"description,omitempty"`
	Zone        string    `json:"zone"`
	Next        time.Time `json:"next,omitzero"`
	Last        *record   `json:"last,omitempty"`
	Running     int       `json:"running"`
	Paused      bool      `json:"paused"`
	PauseNote   string    `json:"pauseNote,omitempty"`  // why it is paused
	PausedUntil time.Time `json:"pausedUntil,omitzero"` // when it resumes by itself
	Handler     string    `json:"handler,omitempty"`
	BusinessID  string    `json:"businessId,omitempty"`
	Refused     string    `json:"refused,omitempty"` // why the Table refused the task's latest definition
	URL         string    `json:"-"`                 // of its page, relative
	loc         *time.Location
}

// taskRow returns the task of s as the list shows it.
func (h *handler) taskRow(s *cron.TaskState) row {
	t := &s.Task
	r := row{Kind: kindTask, Name: t.Name, Spec: t.Spec, Handler: t.Handler, BusinessID: t.BusinessID,
		Paused: t.Paused, PauseNote: t.PauseNote, PausedUntil: t.PausedUntil, Running: s.Running, Next: s.Next,
		loc: zoneOf(t.Spec, t.Zone, h.o.Location)}
	if s.Refused != nil {
		r.Refused = s.Refused.Error()
	}
	h.finishRow(&r, s.Last)
	return r
}

// jobRow returns ji as the list shows it, with last its last record, nil
// if it has none or it is not known.
func (h *handler) jobRow(ji *jobInfo, last *schedule.Record) row {
	name := ji.job.Name()
	n, paused := ji.job.PauseNote()
	r := row{Kind: kindJob, Name: name, Spec: ji.spec, Next: ji.job.Next(), Paused: paused, PauseNote: n.Note,
		PausedUntil: n.Until, loc: ji.loc}
	var l schedule.Record
	if last != nil {
		l = *last
	}
	h.finishRow(&r, l)
	return r
}

// finishRow sets what r shows of its spec, times and last record.
func (h *handler) finishRow(r *row, last schedule.Record) {
	r.URL = r.Kind + "?" + url.Values{"name": {r.Name}}.Encode()
	r.Description = h.describe(r.Spec, r.loc)
	r.Zone = r.loc.String()
	r.Next = in(r.Next, r.loc)
	r.PausedUntil = in(r.PausedUntil, r.loc)
	r.Last = recordOf(last, r.loc)
	if r.Running == 0 && last.Status == schedule.Running && !last.Due.IsZero() {
		r.Running = 1 // in flight on another replica, or its node died and its lease will expire
	}
}

// A listPage is a page of the list, as the list shows it and as
// api/tasks returns it.
type listPage struct {
	filter
	Page     int       `json:"page"`  // from 1
	Pages    int       `json:"pages"` // at least 1
	PageSize int       `json:"pageSize"`
	Total    int       `json:"total"` // the tasks and jobs that match the query
	Items    []row     `json:"items"`
	AsOf     time.Time `json:"asOf"` // when the tasks were read
	Warning  string    `json:"warning,omitempty"`
	Filtered string    `json:"-"` // what the filter keeps besides the name, in words
	Back     string    `json:"-"` // the page's query, for the buttons' redirects
	Prev     string    `json:"-"`
	Next     string    `json:"-"`
	Overview *overview `json:"-"`
	States   []string  `json:"-"` // the choices of the filters
	Handlers []string  `json:"-"`
	Zones    []string  `json:"-"`
}

// list serves the list, and api/tasks: the tasks and jobs whose name
// contains q (any case), and, with state=, handler=, business= or
// zone=, that the overview's census finds so, page by page. The page
// shows the overview above the list.
func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	api := r.URL.Path != "/"
	f, ok := filterOf(r)
	if !ok {
		h.fail(w, r, api, http.StatusBadRequest, badState)
		return
	}
	page, ok := pageOf(r)
	if !ok {
		h.fail(w, r, api, http.StatusBadRequest, badPage)
		return
	}
	snap := h.snaps.get(r.Context())
	lp := listPage{filter: f, PageSize: h.o.PageSize, AsOf: snap.at.UTC(), Warning: snap.warning, Filtered: f.describe()}
	var cens *census
	if !api || f.byState() {
		cens = h.cens.get(r.Context())
	}

	// Only the page's rows are built: the others are counted.
	size := h.o.PageSize
	from := (page - 1) * size
	var hits []*entry
	lq := strings.ToLower(f.Query)
	switch {
	case f.byState():
		lp.AsOf = cens.at.UTC()
		if lp.Warning == "" {
			lp.Warning = cens.warning
		}
		for i := range cens.items {
			it := &cens.items[i]
			if !f.matches(it, lq) {
				continue
			}
			if lp.Total >= from && lp.Total < from+size {
				hits = append(hits, it.e)
			}
			lp.Total++
		}
	case lq == "":
		lp.Total = len(snap.entries)
		from = min(from, lp.Total)
		for i := from; i < min(from+size, lp.Total); i++ {
			hits = append(hits, &snap.entries[i])
		}
	default:
		for i := range snap.entries {
			e := &snap.entries[i]
			if !strings.Contains(e.lower, lq) {
				continue
			}
			if lp.Total >= from && lp.Total < from+size {
				hits = append(hits, e)
			}
			lp.Total++
		}
	}
	lp.Pages = max(1, (lp.Total+size-1)/size)
	lp.Page = page
	var warning string
	lp.Items, warning = h.rows(r.Context(), hits)
	if lp.Warning == "" {
		lp.Warning = warning
	}
	lp.Back = strings.TrimPrefix(listQuery(f, page), "?")
	if page > 1 {
		lp.Prev = "./" + listQuery(f, min(page-1, lp.Pages))
	}
	if page < lp.Pages {
		lp.Next = "./" + listQuery(f, page+1)
	}
	if !api {
		lp.Overview = h.overviewOf(cens, f.State)
		lp.Handlers, lp.Zones = cens.handlers, cens.zones
		for _, d := range stateDefs {
			lp.States = append(lp.States, d.key)
		}
	}
	h.render(w, r, api, http.StatusOK, "list.html", lp)
}

// listQuery returns the query string of a page of the list, with its ?.
func listQuery(f filter, page int) string {
	v := url.Values{}
	for _, kv := range [][2]string{{"q", f.Query}, {"state", f.State}, {"handler", f.Handler},
		{"business", f.BusinessID}, {"zone", f.Zone}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// pageOf returns the page= of r, 1 if none, and whether it is one.
func pageOf(r *http.Request) (int, bool) {
	s := r.URL.Query().Get("page")
	if s == "" {
		return 1, true
	}
	p, err := strconv.Atoi(s)
	return p, err == nil && p >= 1 && p <= 1_000_000
}

// badPage is the message of a page= that is not a page.
const badPage = "The page must be a number from 1 to 1,000,000."

// describe returns spec in words, in loc, the zone it runs in: what
// cron.Describe says of it with loc as its CRON_TZ, unless it has one,
// or loc is time.Local, which has no name to give. The descriptions are
// kept, up to maxDescriptions of them: describing a spec in a named zone
// reads the tz database.
func (h *handler) describe(spec string, loc *time.Location) string {
	if spec == "" {
		return ""
	}
	key := spec + "\x00" + loc.String()
	if d, ok := h.descs.Load(key); ok {
		return d.(string)
	}
	full := spec
	if loc != time.Local && zoneOf(spec, "", nil) == nil {
		full = "CRON_TZ=" + loc.String() + " " + spec
	}
	d, err := cron.Describe(full)
	if err != nil {
		d, _ = cron.Describe(spec)
	}
	if h.ndescs.Add(1) <= maxDescriptions {
		h.descs.Store(key, d)
	}
	return d
}

// maxDescriptions bounds the descriptions a handler keeps.
const maxDescriptions = 10_000

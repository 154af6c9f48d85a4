package admin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// A snapshot is one reading of every task and job, sorted by name: what
// the list pages and searches, and what a job's page takes its definition
// from.
type snapshot struct {
	at      time.Time
	gen     uint64 // snapshots.gen when the reading began
	entries []entry
	warning string // why some last records are missing
}

// An entry is a task or a job of a snapshot.
type entry struct {
	kind  string
	name  string
	lower string           // name in lower case, for the search
	task  *cron.TaskState  // kindTask
	job   *jobInfo         // kindJob
	last  *schedule.Record // kindJob's, from the Store; nil if none
}

// snapshots hands out the latest snapshot, reading the tasks and jobs
// again once it is older than SnapshotAge, or a write made it stale. One
// request reads at a time; the others meanwhile take the previous
// snapshot, unless a write made it stale, and then wait for the new one.
type snapshots struct {
	h *handler

	mu       sync.Mutex
	cur      *snapshot
	gen      uint64        // raised by each write, which makes every snapshot read before stale
	building chan struct{} // closed when the reading under way ends; nil if none
}

// get returns a snapshot no older than SnapshotAge, or the previous one
// while another request reads a new one.
func (s *snapshots) get(ctx context.Context) *snapshot {
	age := s.h.o.SnapshotAge
	for {
		s.mu.Lock()
		cur := s.cur
		fresh := cur != nil && cur.gen == s.gen
		if fresh && age > 0 && time.Since(cur.at) < age {
			s.mu.Unlock()
			return cur
		}
		if ch := s.building; ch != nil {
			s.mu.Unlock()
			if fresh {
				return cur // old, but no write came since: good enough while the next is read
			}
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				if cur != nil {
					return cur
				}
				return &snapshot{at: time.Now(), warning: ctx.Err().Error()}
			}
		}
		ch := make(chan struct{})
		s.building = ch
		gen := s.gen
		s.mu.Unlock()

		snap := s.h.read(context.WithoutCancel(ctx))
		snap.gen = gen
		s.mu.Lock()
		s.cur, s.building = snap, nil
		s.mu.Unlock()
		close(ch)
		return snap
	}
}

// stale makes the snapshots read before now stale: a write changed them.
func (s *snapshots) stale() {
	s.mu.Lock()
	s.gen++
	s.mu.Unlock()
}

// read reads every task and job, sorted by name.
func (h *handler) read(ctx context.Context) *snapshot {
	snap := &snapshot{at: time.Now()}
	var tasks []cron.TaskState
	var errs []error
	if h.o.Table != nil {
		var err error
		tasks, err = h.o.Table.TasksContext(ctx)
		errs = append(errs, err)
	}
	jobs := h.sortedJobs()
	lasts := map[string]schedule.Record{}
	if h.o.Store != nil && len(jobs) > 0 {
		names := make([]string, len(jobs))
		for i, ji := range jobs {
			names[i] = ji.job.Name()
		}
		var err error
		lasts, err = lastOf(ctx, h.o.Store, names)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		snap.warning = "Some last runs could not be read: " + err.Error()
	}
	// Merge the two lists, sorted by name already.
	snap.entries = make([]entry, 0, len(tasks)+len(jobs))
	i, j := 0, 0
	for i < len(tasks) || j < len(jobs) {
		if j == len(jobs) || (i < len(tasks) && tasks[i].Task.Name <= jobs[j].job.Name()) {
			t := &tasks[i]
			snap.entries = append(snap.entries, entry{kind: kindTask, name: t.Task.Name, lower: strings.ToLower(t.Task.Name), task: t})
			i++
			continue
		}
		ji := jobs[j]
		name := ji.job.Name()
		e := entry{kind: kindJob, name: name, lower: strings.ToLower(name), job: ji}
		if r, ok := lasts[name]; ok {
			e.last = &r
		}
		snap.entries = append(snap.entries, e)
		j++
	}
	return snap
}

// lastOf returns the last record of each of jobs that has one, in one call
// if s is a schedule.LastReader.
func lastOf(ctx context.Context, s schedule.Store, jobs []string) (map[string]schedule.Record, error) {
	if lr, ok := s.(schedule.LastReader); ok {
		m, err := lr.LastOf(ctx, jobs)
		if m == nil {
			m = map[string]schedule.Record{}
		}
		return m, err
	}
	m := make(map[string]schedule.Record, len(jobs))
	var errs []error
	for _, j := range jobs {
		r, err := s.Last(ctx, j)
		switch {
		case err == nil:
			m[j] = r
		case !errors.Is(err, schedule.ErrNoRecord):
			errs = append(errs, err)
		}
	}
	return m, errors.Join(errs...)
}

// find returns the entry of kind and name in snap, or nil.
func (snap *snapshot) find(kind, name string) *entry {
	i, ok := slices.BinarySearchFunc(snap.entries, name, func(e entry, name string) int { return strings.Compare(e.name, name) })
	if !ok {
		return nil
	}
	for ; i < len(snap.entries) && snap.entries[i].name == name; i++ {
		if snap.entries[i].kind == kind {
			return &snap.entries[i]
		}
	}
	return nil
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
	Handler     string    `json:"handler,omitempty"`
	BusinessID  string    `json:"businessId,omitempty"`
	URL         string    `json:"-"` // of its page, relative
	loc         *time.Location
}

// row returns e as the list shows it.
func (h *handler) row(e *entry) row {
	r := row{Kind: e.kind, Name: e.name, URL: e.kind + "?" + url.Values{"name": {e.name}}.Encode()}
	var last schedule.Record
	switch e.kind {
	case kindTask:
		t := &e.task.Task
		r.Spec, r.Handler, r.BusinessID, r.Paused = t.Spec, t.Handler, t.BusinessID, t.Paused
		r.Running = e.task.Running
		r.loc = zoneOf(t.Spec, t.Zone, h.o.Location)
		r.Next, last = e.task.Next, e.task.Last
	case kindJob:
		ji := e.job
		r.Spec, r.loc = ji.spec, ji.loc
		r.Next = ji.job.Next()
		if e.last != nil {
			last = *e.last
		}
		r.Paused = h.jobPaused(e.name)
	}
	r.Description = h.describe(r.Spec, r.loc)
	r.Zone = r.loc.String()
	r.Next = in(r.Next, r.loc)
	r.Last = recordOf(last, r.loc)
	if r.Running == 0 && last.Status == schedule.Running && !last.Due.IsZero() {
		r.Running = 1 // in flight on another replica, or its node died and its lease will expire
	}
	return r
}

// A listPage is a page of the list, as the list shows it and as
// api/tasks returns it.
type listPage struct {
	Query    string    `json:"query"`
	Page     int       `json:"page"`  // from 1
	Pages    int       `json:"pages"` // at least 1
	PageSize int       `json:"pageSize"`
	Total    int       `json:"total"` // the tasks and jobs that match the query
	Items    []row     `json:"items"`
	AsOf     time.Time `json:"asOf"` // when the tasks were read
	Warning  string    `json:"warning,omitempty"`
	Back     string    `json:"-"` // the page's query, for the buttons' redirects
	Prev     string    `json:"-"`
	Next     string    `json:"-"`
}

// list serves the list, and api/tasks: the tasks and jobs whose name
// contains q (any case), page by page.
func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	api := r.URL.Path != "/"
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	page, ok := pageOf(r)
	if !ok {
		h.fail(w, r, api, http.StatusBadRequest, badPage)
		return
	}
	snap := h.snaps.get(r.Context())
	lp := listPage{Query: q, PageSize: h.o.PageSize, AsOf: snap.at.UTC(), Warning: snap.warning}

	// Only the page's rows are built: the others are counted.
	size := h.o.PageSize
	var hits []*entry
	if q == "" {
		lp.Total = len(snap.entries)
		from := min((page-1)*size, lp.Total)
		for i := from; i < min(from+size, lp.Total); i++ {
			hits = append(hits, &snap.entries[i])
		}
	} else {
		lq := strings.ToLower(q)
		from := (page - 1) * size
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
	lp.Items = make([]row, len(hits))
	for i, e := range hits {
		lp.Items[i] = h.row(e)
	}
	lp.Back = strings.TrimPrefix(listQuery(q, page), "?")
	if page > 1 {
		lp.Prev = "./" + listQuery(q, min(page-1, lp.Pages))
	}
	if page < lp.Pages {
		lp.Next = "./" + listQuery(q, page+1)
	}
	h.render(w, r, api, http.StatusOK, "list.html", lp)
}

// listQuery returns the query string of a page of the list, with its ?.
func listQuery(q string, page int) string {
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
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

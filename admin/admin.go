package admin

import (
	"context"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// Options configures the handler New returns. Every field may be left
// zero: the page then lists nothing, or acts on nothing.
type Options struct {
	// Table is the cron.Table whose tasks the page lists, runs, pauses
	// and resumes; nil for none.
	Table *cron.Table
	// Jobs are schedule.Jobs the page lists, runs, pauses and resumes,
	// besides the Table's tasks. Their names must differ from each other.
	Jobs []*schedule.Job
	// Specs gives the cron spec of each of Jobs whose Schedule is one
	// (as cron.Parse reads it, in Location), by job name: the page shows
	// it in words and as typed, and the job's next 10 runs. A job without
	// one shows its next run only. "@every 1h" stands for
	// schedule.Every(time.Hour).
	Specs map[string]string
	// Store holds the records of Jobs and of the Table's tasks (what was
	// given to schedule.WithStore and cron.WithStore): a job's page shows
	// its history from it. Nil: no history, and the Jobs show no last
	// run; the Table's tasks still show theirs.
	Store schedule.Store
	// Definitions, if set, is the Source the Table follows (Table.Follow):
	// the page then creates, edits and deletes task definitions in it.
	Definitions Definitions
	// Calendars, if set, holds the calendars that tasks name
	// (cron.Task.Calendars), such as *sqlstore.Definitions: the page lists
	// them, creates, edits and deletes them (with Authorize), and the next
	// runs it shows of a task pass over their days. Without it, a task's
	// page still shows its next runs as its Table runs them.
	Calendars Calendars
	// Audit, if set, keeps an entry for each change made through the
	// page: a task or job run, paused, resumed or backfilled, a
	// definition or calendar created, edited (with the fields it changed)
	// or deleted, each of a bulk action's; such as *sqlstore.Definitions,
	// which keeps them beside the definitions, where the command-line tool
	// writes its own. The page shows them (audit, and the latest on a
	// task's or job's page). An entry is written once its change is made;
	// if it cannot be, the change stands and the page says so.
	Audit cron.Auditor
	// User names the user of r in the entries of Audit (their Actor):
	// what the service's own middleware, before the handler, left in r.
	// Nil, or an empty name, leaves the entry's Actor empty ("unknown").
	User func(r *http.Request) string
	// Authorize reports whether r may change anything: run, pause,
	// resume, create, edit, delete. It is called for every write, and for
	// every page, to show its buttons or not. Nil makes the page
	// read-only. Who the user is, the service's own middleware decides,
	// before the handler: Authorize reads what it left in r.
	Authorize func(r *http.Request) bool
	// CrossOrigin refuses the writes that come from another origin
	// (Check). Nil means http.NewCrossOriginProtection(): a browser's
	// write from another site is refused, scripts without an Origin
	// header pass.
	CrossOrigin *http.CrossOriginProtection
	// Location is the zone of the tasks without a Zone, and of the specs
	// of Specs without CRON_TZ: the one given to cron.WithLocation. Nil
	// means time.Local, the Table's default too.
	Location *time.Location
	// Title heads every page; "Scheduled jobs" if empty.
	Title string
	// PageSize is the number of rows of a page of the list and of a
	// history: 50 if zero or less, at most 1000.
	PageSize int
	// Refresh is how often a page refreshes itself in a browser that runs
	// its script: 5s if zero; never if negative.
	Refresh time.Duration
	// SnapshotAge is how long the list reuses one reading of the names
	// of the Table's tasks (Table.Names), which it pages and searches, so
	// that a list of 100,000 tasks costs a copy of their names a second at
	// most, however many people look at it (see DESIGN.md): 1s if zero; a
	// reading per request if negative. A write through the handler makes
	// the next page read them again. The rows a page shows are read as it
	// is served (Table.TasksOf, and the Jobs' last records from Store):
	// one call each of a Store that is a schedule.LastReader, one Last a
	// row of another.
	SnapshotAge time.Duration
	// OverviewAge is how long the overview, above the list, reuses one
	// reading of the state of every task and job: their counts by state,
	// which the list also filters by (state=, handler=, business=,
	// zone=), the chart of their runs and the nodes. 5s if zero; a
	// reading per request if negative. Once it is older, it is read again
	// in the background, and requests are served the one before until
	// that reading is in, if it is not older than twice OverviewAge: with
	// many tasks on a database a reading takes much longer than a page.
	// A write through the handler makes the next page wait for a reading,
	// so that the write shows; a bulk action by state, handler, business
	// id or zone acts on a reading no older than OverviewAge.
	OverviewAge time.Duration
	// Nodes, if set, lists the processes that run jobs on the Store, for
	// the overview: with a *sqlstore.Store s, a loop over s.Nodes(ctx)
	// that converts each, admin.Node(n). Nil: the overview shows none.
	Nodes func(ctx context.Context) ([]Node, error)
}

// Definitions is a store of task definitions, with a version each, that
// the page edits: the method set of *sqlstore.Definitions, which is one.
// A write names the version it read, and must fail, without writing, if
// the definition is at another one. Create and Update refuse a definition
// that cannot run with a *cron.TaskError; Update, Delete and Get return an
// error wrapping cron.ErrUnknownTask for a name they do not hold. Its
// methods must be safe for concurrent use.
type Definitions interface {
	// Create saves t, a new definition, and returns its version.
	Create(ctx context.Context, t cron.Task) (int64, error)
	// Update replaces the definition of t.Name, at version, with t, and
	// returns its new version.
	Update(ctx context.Context, t cron.Task, version int64) (int64, error)
	// Delete deletes the definition name, at version.
	Delete(ctx context.Context, name string, version int64) error
	// Get returns the definition name and its version.
	Get(ctx context.Context, name string) (cron.Task, int64, error)
}

// handler is what New returns. Its fields are set by New and read only
// after, but for the snapshots and the descriptions, which are safe for
// concurrent use.
type handler struct {
	o       Options
	co      *http.CrossOriginProtection
	mux     *http.ServeMux
	methods map[string][]string // the methods of each path the mux serves
	jobs    map[string]*jobInfo
	gen     atomic.Uint64 // raised by each write: the caches' values read before are stale
	snaps   cache[snapshot]
	cens    cache[census]
	descs   sync.Map     // the descriptions of the specs shown, by spec and zone
	ndescs  atomic.Int64 // descriptions made
	done    onceSet      // the confirmations of bulk actions carried out
}

// jobInfo is one of Options.Jobs, with its spec read.
type jobInfo struct {
	job   *schedule.Job
	spec  string
	sched schedule.Schedule // nil without a spec
	loc   *time.Location    // the zone of its spec
}

// New returns an http.Handler that serves the admin page of opts' Table
// and Jobs, and its JSON routes (see the package doc), at its root: mount
// it under a prefix with http.StripPrefix. Its links and redirects are
// relative, so that they keep the prefix. The handler is safe for
// concurrent use.
//
// New panics if a Job is nil, if two Jobs share a name, or if a spec of
// Specs names no Job or does not parse.
func New(opts Options) http.Handler {
	h := &handler{o: opts, co: opts.CrossOrigin, jobs: map[string]*jobInfo{}}
	o := &h.o
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Title == "" {
		o.Title = "Scheduled jobs"
	}
	if o.PageSize <= 0 {
		o.PageSize = 50
	}
	o.PageSize = min(o.PageSize, 1000)
	if o.Refresh == 0 {
		o.Refresh = 5 * time.Second
	}
	if o.SnapshotAge == 0 {
		o.SnapshotAge = time.Second
	}
	if o.OverviewAge == 0 {
		o.OverviewAge = 5 * time.Second
	}
	if h.co == nil {
		h.co = http.NewCrossOriginProtection()
	}
	for _, j := range o.Jobs {
		if j == nil {
			panic("admin: nil Job in Options.Jobs")
		}
		if h.jobs[j.Name()] != nil {
			panic("admin: two Jobs named " + strconv.Quote(j.Name()))
		}
		h.jobs[j.Name()] = &jobInfo{job: j, loc: o.Location}
	}
	for name, spec := range o.Specs {
		ji := h.jobs[name]
		if ji == nil {
			panic("admin: Options.Specs names no Job: " + strconv.Quote(name))
		}
		s, err := cron.Parse(spec, o.Location)
		if err != nil {
			panic("admin: the spec of Job " + strconv.Quote(name) + ": " + err.Error())
		}
		ji.spec, ji.sched, ji.loc = spec, s, zoneOf(spec, "", o.Location)
	}
	h.snaps = cache[snapshot]{age: o.SnapshotAge, read: h.read, gen: &h.gen,
		fail: func(err error) *snapshot { return &snapshot{at: time.Now(), warning: err.Error()} }}
	h.cens = cache[census]{age: o.OverviewAge, read: h.readCensus, gen: &h.gen, bg: true,
		fail: func(err error) *census {
			return &census{at: time.Now(), counts: make([]int, len(stateDefs)), warning: err.Error()}
		}}
	h.routes()
	return h
}

// routes registers every route of the handler.
func (h *handler) routes() {
	m := http.NewServeMux()
	h.mux, h.methods = m, map[string][]string{}
	handle := func(method, path string, f http.HandlerFunc) {
		pattern := path
		if path == "/" {
			pattern = "/{$}"
		}
		m.HandleFunc(method+" "+pattern, f)
		h.methods[path] = append(h.methods[path], method)
	}
	handle("GET", "/", h.list)
	handle("GET", "/task", h.detail(kindTask))
	handle("GET", "/job", h.detail(kindJob))
	handle("GET", "/new", h.write(h.newForm))
	handle("GET", "/edit", h.write(h.editForm))
	for _, a := range []string{"run", "pause", "resume", "backfill", "cancel-backfill"} {
		handle("POST", "/"+a, h.write(h.action(a, false)))
		handle("POST", "/api/"+a, h.write(h.action(a, true)))
	}
	handle("POST", "/bulk", h.write(h.bulk(false)))
	handle("POST", "/api/bulk", h.write(h.bulk(true)))
	handle("POST", "/create", h.write(h.save(false)))
	handle("POST", "/update", h.write(h.save(false)))
	handle("POST", "/delete", h.write(h.remove(false)))
	handle("POST", "/api/create", h.write(h.save(true)))
	handle("POST", "/api/update", h.write(h.save(true)))
	handle("POST", "/api/delete", h.write(h.remove(true)))
	handle("GET", "/api/tasks", h.list)
	handle("GET", "/api/overview", h.overviewPage)
	handle("GET", "/api/task", h.detail(kindTask))
	handle("GET", "/api/job", h.detail(kindJob))
	handle("GET", "/api/definition", h.definition)
	handle("GET", "/api/preview", h.preview)
	handle("GET", "/audit", h.auditLog(false))
	handle("GET", "/api/audit", h.auditLog(true))
	handle("GET", "/calendars", h.calendars)
	handle("GET", "/api/calendars", h.calendars)
	handle("GET", "/new-calendar", h.write(h.newCalendarForm))
	handle("GET", "/edit-calendar", h.write(h.editCalendarForm))
	handle("POST", "/create-calendar", h.write(h.saveCalendar))
	handle("POST", "/update-calendar", h.write(h.saveCalendar))
	handle("POST", "/delete-calendar", h.write(h.removeCalendar))
	m.HandleFunc("GET /static/{file}", serveAsset)
	m.HandleFunc("/", h.notFound)
}

// ServeHTTP serves r, with the headers every response carries.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	// No script, style or frame but the page's own: the data a page shows
	// cannot run, even if a template let it through.
	hd.Set("Content-Security-Policy", "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	if r.URL.Path == "" {
		p := requestPath(r)
		if !strings.HasSuffix(p, "/") {
			// Mounted with StripPrefix("/jobs"), and asked for /jobs: the
			// page is at /jobs/, where its relative links work. The
			// ServeMux would redirect to /, outside the prefix.
			redirect(w, "./"+path.Base(p)+"/")
			return
		}
		r2 := *r // StripPrefix took the whole path: the root it is
		u := *r.URL
		u.Path, u.RawPath = "/", ""
		r2.URL = &u
		r = &r2
	}
	h.mux.ServeHTTP(w, r)
}

// requestPath returns the path of r as the client sent it, before any
// StripPrefix.
func requestPath(r *http.Request) string {
	p := r.RequestURI
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p
}

// write guards a route that changes something: it is refused unless
// Authorize allows r, and if r comes from another origin.
func (h *handler) write(f http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		api := strings.HasPrefix(r.URL.Path, "/api/")
		switch {
		case h.o.Authorize == nil:
			h.fail(w, r, api, http.StatusForbidden, "This page is read-only: no change can be made here.")
		case h.co.Check(r) != nil:
			h.fail(w, r, api, http.StatusForbidden, "A change from another site is refused.")
		case !h.o.Authorize(r):
			h.fail(w, r, api, http.StatusForbidden, "You may look, not change anything.")
		default:
			if r.Method == http.MethodPost {
				n := int64(64 << 10)
				if path.Base(r.URL.Path) == "bulk" {
					n = maxBulkBody // MaxBulk names
				}
				r.Body = http.MaxBytesReader(w, r.Body, n)
			}
			f(w, r)
		}
	}
}

// canWrite reports whether the page shown for r offers its buttons.
func (h *handler) canWrite(r *http.Request) bool {
	return h.o.Authorize != nil && h.o.Authorize(r)
}

// notFound answers a path the handler does not serve, or not with r's
// method.
func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	api := strings.HasPrefix(r.URL.Path, "/api/")
	if ms, ok := h.methods[r.URL.Path]; ok {
		if slices.Contains(ms, "GET") {
			ms = append(ms, "HEAD")
		}
		w.Header().Set("Allow", strings.Join(ms, ", "))
		h.fail(w, r, api, http.StatusMethodNotAllowed, "This page does not take a "+r.Method+".")
		return
	}
	h.fail(w, r, api, http.StatusNotFound, "There is no such page.")
}

// redirect sends the client to target, relative to the request's URL, as
// a browser resolves it: http.Redirect would make it absolute from the
// path StripPrefix left, outside the prefix.
func redirect(w http.ResponseWriter, target string) {
	w.Header().Set("Location", target)
	w.WriteHeader(http.StatusSeeOther)
}

// job returns the Job named name, and whether it is one of Options.Jobs.
func (h *handler) job(name string) (*jobInfo, bool) {
	ji, ok := h.jobs[name]
	return ji, ok
}

// sortedJobs returns Options.Jobs sorted by name.
func (h *handler) sortedJobs() []*jobInfo {
	js := make([]*jobInfo, 0, len(h.jobs))
	for _, ji := range h.jobs {
		js = append(js, ji)
	}
	slices.SortFunc(js, func(a, b *jobInfo) int { return strings.Compare(a.job.Name(), b.job.Name()) })
	return js
}

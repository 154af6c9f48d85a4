package admin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A Node is a process that runs jobs on the Store, as Options.Nodes lists
// it. Its fields are those of sqlstore.Node, in the same order, so that
// one converts to the other: admin.Node(n).
type Node struct {
	Name      string    `json:"name"`
	Started   time.Time `json:"started"`   // its first heartbeat since it was last gone
	Heartbeat time.Time `json:"heartbeat"` // its latest heartbeat
	Running   int       `json:"running"`   // its runs in flight and waiting at its latest heartbeat
	RunLimit  int       `json:"runLimit"`  // how many it runs at once
	Version   string    `json:"version"`   // of the store's package it runs
	Live      bool      `json:"live"`      // its heartbeat is less than a lease old
}

// A RunCounter is a Store that counts its records by the hour of their
// Due, for the overview's chart. It is an optimization: for a Store that is
// not one, the overview reads the History of each task and job it lists,
// back to the chart's first hour, which a database would answer with one
// statement a job.
type RunCounter interface {
	schedule.Store
	// CountRuns returns n counts, by status, of the records whose Due is
	// in [from+i·step, from+(i+1)·step) for the i-th: of every job whose
	// records the Store holds. A count of zero may be absent.
	CountRuns(ctx context.Context, from time.Time, step time.Duration, n int) ([]map[schedule.Status]int, error)
}

// lateGrace is how long past its next slot a task that runs nothing may
// be before the overview calls it late: its slot fell due, and no run
// claimed it (its store is down, its replicas are gone or busy).
const lateGrace = time.Minute

// states are the states a task or job is counted in, one bit each: one
// may be in several (a task paused after its failures is failing and
// paused).
type states uint8

const (
	stFailing states = 1 << iota // its last record is Failed
	stLate                       // not paused, runs nothing, and its next slot fell due more than lateGrace ago
	stRunning                    // a run in flight: here, or on another node (its last record is Running)
	stPaused                     // paused, by its definition or by a Pause
	stNever                      // no record at all: it never fell due, or its records are gone
	stRefused                    // the Table refused its latest definition
)

// stateDefs are the states the overview counts and the list filters by
// (state=), in the order the page shows them.
var stateDefs = []struct {
	key   string
	bit   states
	label string // after the count: "3 failing"
	title string // what it means
}{
	{"failing", stFailing, "failing", "Their last run failed."},
	{"late", stLate, "late", "Their next run fell due more than a minute ago, and none runs: no node has claimed it."},
	{"running", stRunning, "running", "A run is in flight, here or on another node."},
	{"paused", stPaused, "paused", "Paused: their slots pass without a run."},
	{"never", stNever, "never run", "No record: they have not fallen due yet, or their records are gone."},
	{"refused", stRefused, "refused", "The Table refused their latest definition."},
}

// stateOf returns the bit of the state named key, and whether there is one.
func stateOf(key string) (states, bool) {
	for _, d := range stateDefs {
		if d.key == key {
			return d.bit, true
		}
	}
	return 0, false
}

// A census is what the overview says of every task and job, and what the
// list filters them by: read at most once per OverviewAge.
type census struct {
	at       time.Time
	items    []item   // one per entry of the names' snapshot, in its order
	counts   []int    // by stateDefs
	handlers []string // the handlers of the tasks, sorted, for the filter
	zones    []string // their zones, sorted
	chart    *chart   // nil without a Store
	nodes    []Node
	nodesErr string
	warning  string
}

// An item is a task or a job of a census.
type item struct {
	e        *entry
	st       states
	handler  string
	business string
	zone     string
}

// readCensus reads the state of every task and job of the names'
// snapshot: the Table's tasks in one TasksOf, the Jobs' last records in
// one LastOf, the chart's records, and the nodes.
func (h *handler) readCensus(ctx context.Context, _ *census) *census {
	if testHookCensus != nil {
		testHookCensus()
	}
	snap := h.snaps.get(ctx)
	now := time.Now()
	c := &census{at: now, counts: make([]int, len(stateDefs)), warning: snap.warning}
	var errs []error
	// The tasks' states are read a batch at a time, and only what the
	// overview needs of them kept: a TaskState holds the whole definition.
	var ts []taskState
	if h.o.Table != nil {
		ts = make([]taskState, 0, len(snap.tasks))
		for from := 0; from < len(snap.tasks); from += censusBatch {
			batch, err := h.o.Table.TasksOf(ctx, snap.tasks[from:min(from+censusBatch, len(snap.tasks))]...)
			errs = append(errs, err)
			for i := range batch {
				s := &batch[i]
				ts = append(ts, taskState{name: s.Task.Name, st: taskStates(s, now), handler: s.Task.Handler,
					business: s.Task.BusinessID, zone: zoneName(s.Task.Spec, s.Task.Zone, h.o.Location)})
			}
			if err != nil {
				break // a store that is down costs one call
			}
		}
	}
	var jobs []string
	for i := range snap.entries {
		if e := &snap.entries[i]; e.kind == kindJob {
			jobs = append(jobs, e.name)
		}
	}
	var lasts map[string]schedule.Record
	if len(jobs) > 0 && h.o.Store != nil {
		var err error
		lasts, err = schedule.LastOf(ctx, h.o.Store, jobs)
		errs = append(errs, err)
	}
	handlers, zones := map[string]bool{}, map[string]bool{}
	c.items = make([]item, 0, len(snap.entries))
	names := make([]string, 0, len(snap.entries))
	t := 0 // ts holds the tasks of the snapshot that the Table still has, in its order
	for i := range snap.entries {
		e := &snap.entries[i]
		it := item{e: e}
		switch e.kind {
		case kindTask:
			for t < len(ts) && ts[t].name < e.name {
				t++
			}
			if t == len(ts) || ts[t].name != e.name {
				continue // gone since the snapshot
			}
			s := &ts[t]
			it.st, it.handler, it.business, it.zone = s.st, s.handler, s.business, s.zone
			handlers[it.handler] = true
		case kindJob:
			last := lasts[e.name]
			_, paused := e.job.job.PauseNote()
			it.st = recordStates(last, 0, paused, e.job.job.Next(), now)
			it.zone = e.job.loc.String()
		}
		zones[it.zone] = true
		for j, d := range stateDefs {
			if it.st&d.bit != 0 {
				c.counts[j]++
			}
		}
		c.items = append(c.items, it)
		names = append(names, e.name)
	}
	c.handlers, c.zones = sortedKeys(handlers), sortedKeys(zones)
	if h.o.Store != nil {
		var err error
		c.chart, err = h.readChart(ctx, names, now)
		errs = append(errs, err)
	}
	if h.o.Nodes != nil {
		var err error
		if c.nodes, err = h.o.Nodes(ctx); err != nil {
			c.nodesErr = err.Error()
		}
	}
	if err := errors.Join(errs...); err != nil && c.warning == "" {
		c.warning = "Some records could not be read: " + err.Error()
	}
	return c
}

// censusBatch is how many tasks' states a census reads at once.
const censusBatch = 2048

// A taskState is what a census keeps of a cron.TaskState.
type taskState struct {
	name, handler, business, zone string
	st                            states
}

// zoneName returns the name of the zone of a task of spec and zone, as
// zoneOf, without splitting a spec that names none.
func zoneName(spec, zone string, def *time.Location) string {
	if !strings.Contains(spec, "TZ=") {
		spec = ""
	}
	return zoneOf(spec, zone, def).String()
}

// taskStates returns the states of the task of s at now.
func taskStates(s *cron.TaskState, now time.Time) states {
	st := recordStates(s.Last, s.Running, s.Task.Paused, s.Next, now)
	if s.Refused != nil {
		st |= stRefused
	}
	return st
}

// recordStates returns the states of a task or job whose last record is
// last, with running runs in flight here, paused or not, whose next slot
// is due at next, at now.
func recordStates(last schedule.Record, running int, paused bool, next, now time.Time) states {
	var st states
	has := !last.Due.IsZero()
	if !has {
		st |= stNever
	}
	if has && last.Status == schedule.Failed {
		st |= stFailing
	}
	if running > 0 || has && last.Status == schedule.Running {
		st |= stRunning
	}
	if paused {
		st |= stPaused
	}
	if st&(stRunning|stPaused) == 0 && !next.IsZero() && now.Sub(next) > lateGrace {
		st |= stLate
	}
	return st
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// A filter is what the list is asked to show: the tasks and jobs whose
// name contains Query (any case), in State, with Handler, BusinessID and
// Zone, those that are set.
type filter struct {
	Query      string `json:"query"`
	State      string `json:"state,omitempty"`
	Handler    string `json:"handler,omitempty"`
	BusinessID string `json:"businessId,omitempty"`
	Zone       string `json:"zone,omitempty"`
	bit        states
}

// filterOf reads the filter of r's query, and whether its state is one.
func filterOf(r *http.Request) (filter, bool) {
	return filterIn(r.URL.Query())
}

// filterIn reads the filter of the fields q, and whether its state is one.
func filterIn(q url.Values) (filter, bool) {
	f := filter{Query: strings.TrimSpace(q.Get("q")), State: q.Get("state"), Handler: strings.TrimSpace(q.Get("handler")),
		BusinessID: strings.TrimSpace(q.Get("business")), Zone: strings.TrimSpace(q.Get("zone"))}
	if f.State != "" {
		var ok bool
		if f.bit, ok = stateOf(f.State); !ok {
			return f, false
		}
	}
	return f, true
}

// badState is the message of a state= that is not one.
var badState = func() string {
	var keys []string
	for _, d := range stateDefs {
		keys = append(keys, d.key)
	}
	return "The state must be one of " + strings.Join(keys, ", ") + "."
}()

// byState reports whether f filters by what the census knows, besides
// the name.
func (f filter) byState() bool {
	return f.State != "" || f.Handler != "" || f.BusinessID != "" || f.Zone != ""
}

// matches reports whether it passes f; lq is f.Query in lower case.
func (f filter) matches(it *item, lq string) bool {
	return (f.bit == 0 || it.st&f.bit != 0) && (f.Handler == "" || it.handler == f.Handler) &&
		(f.BusinessID == "" || it.business == f.BusinessID) && (f.Zone == "" || it.zone == f.Zone) &&
		(lq == "" || strings.Contains(it.e.lower, lq))
}

// describe says what f keeps besides the name, for the count above the
// list: "failing, handler “mail”".
func (f filter) describe() string {
	var parts []string
	for _, d := range stateDefs {
		if d.key == f.State {
			parts = append(parts, d.label)
		}
	}
	if f.Handler != "" {
		parts = append(parts, "handler “"+f.Handler+"”")
	}
	if f.BusinessID != "" {
		parts = append(parts, "business id “"+f.BusinessID+"”")
	}
	if f.Zone != "" {
		parts = append(parts, "zone “"+f.Zone+"”")
	}
	return strings.Join(parts, ", ")
}

// The overview, as the list's page shows it above the list, and as
// api/overview returns it.
type overview struct {
	AsOf       time.Time    `json:"asOf"` // when the states were read
	Total      int          `json:"total"`
	Counts     []stateCount `json:"counts"`
	Nodes      []Node       `json:"nodes,omitempty"` // with Options.Nodes
	NodesError string       `json:"nodesError,omitempty"`
	HasNodes   bool         `json:"-"`
	Chart      *chart       `json:"chart,omitempty"`
	Warning    string       `json:"warning,omitempty"`
}

// A stateCount is the number of tasks and jobs in one state, and the link
// to the list of them.
type stateCount struct {
	State   string `json:"state"`
	Count   int    `json:"count"`
	URL     string `json:"url"` // the list of them, relative to the page
	Label   string `json:"-"`
	Title   string `json:"-"`
	Current bool   `json:"-"` // the list shows them
	Alarm   bool   `json:"-"` // not zero, and a state someone must look at
}

// overviewOf returns the overview of c, with the count of state current
// marked.
func (h *handler) overviewOf(c *census, current string) *overview {
	o := &overview{AsOf: c.at.UTC(), Total: len(c.items), Nodes: c.nodes, NodesError: c.nodesErr,
		HasNodes: h.o.Nodes != nil, Chart: c.chart, Warning: c.warning}
	for i, d := range stateDefs {
		n := c.counts[i]
		o.Counts = append(o.Counts, stateCount{State: d.key, Count: n, URL: "./" + listQuery(filter{State: d.key}, 1),
			Label: d.label, Title: d.title, Current: d.key == current,
			Alarm: n > 0 && (d.bit&(stFailing|stLate|stRefused) != 0)})
	}
	return o
}

// overviewPage serves api/overview.
func (h *handler) overviewPage(w http.ResponseWriter, r *http.Request) {
	c := h.cens.get(r.Context())
	writeJSON(w, http.StatusOK, h.overviewOf(c, ""))
}

// LiveNodes counts the nodes of o that are live.
func (o *overview) LiveNodes() int {
	n := 0
	for _, nd := range o.Nodes {
		if nd.Live {
			n++
		}
	}
	return n
}

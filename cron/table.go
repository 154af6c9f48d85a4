package cron

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// A Handler runs the tasks that name it, with each task's business id.
type Handler func(ctx context.Context, businessID string, r schedule.Run) error

// A Table runs user-defined tasks, one schedule.Job each, and applies
// changed sets of definitions while they run: Apply changes only what
// changed. It reports what it runs (Tasks), runs, pauses and resumes a
// task on demand (RunNow, Pause, Resume), and may follow a Source of
// definitions that replicas share (Follow).
//
// All its jobs share one Store, so that a job that replaces another of the
// same name neither runs a slot the other ran nor misses one: it starts
// from the other's last record, under its misfire policy.
//
// A Table is safe for concurrent use, from its Handlers and Observers too,
// except that neither may call Stop with a context that outlives it: Stop
// waits for the Handler to return, and for the Apply or run that called
// the Observer. Its zero value is not usable: make one with NewTable.
type Table struct {
	handlers map[string]Handler
	loc      *time.Location
	store    schedule.Store
	flying   *tracker       // the runs in flight of every job, by name
	hand     schedule.Store // store, as the jobs see it (handover)
	jobOpts  []schedule.Option
	log      *slog.Logger // WithLogger's, nil for slog.Default()

	specs  sync.Map     // the Schedules of the specs read, by specKey: a spec the tasks share is read once
	nspecs atomic.Int64 // specs read

	mu       sync.Mutex // guards the fields below
	tasks    map[string]*entry
	names    []string          // the names in tasks, sorted, never modified; nil until asked for, and once a name came or went
	renames  uint64            // counts the names that came or went in tasks
	last     map[string]*entry // the latest entry of each name that was removed and whose job has not stopped yet
	draining map[*entry]bool   // removed or replaced, until their job has stopped
	stopped  bool
	gen      uint32             // the latest Apply's
	bg       sync.WaitGroup     // drains, and starts waiting for them; added to holding mu, while not stopped
	follow   *follower          // the Source followed, once Follow has read it; nil if none
	joining  bool               // a Follow is under way
	controls uint64             // counts the Pauses and Resumes made on the Source followed
	refused  map[string]refusal // the definitions the latest Apply refused, by name; nil if none
	fills    map[string]*fill   // the latest backfill of each task (Backfill); nil until the first
	cals     calendarSet        // the calendars known, never modified: a change replaces it
}

// An entry is a task loaded in a Table: its job and its definition. It
// takes 48 bytes.
type entry struct {
	t       *Table
	job     *schedule.Job
	c       atomic.Pointer[compiled] // written by Apply, read by the job's runs
	after   *entry                   // the previous entry of the name, whose job must stop before this one starts
	applied uint32                   // the latest Apply whose definitions named the task; guarded by Table.mu
	done    bool                     // its job has stopped, and after's has; guarded by Table.mu
	held    bool                     // the task is paused: its job is to be paused (hold); guarded by Table.mu
	stopped chan struct{}            // closed when done, made by the first who waits; guarded by Table.mu
}

// Changes lists the tasks an Apply added, changed and removed, by name, in
// order.
type Changes struct {
	Added, Changed, Removed []string
}

// ErrTableStopped is returned by Apply on a stopped Table.
var ErrTableStopped = errors.New("cron: table stopped")

// NewTable returns an empty Table whose tasks run the given handlers, by
// name. NewTable panics if a handler is nil.
func NewTable(handlers map[string]Handler, opts ...TableOption) *Table {
	t := &Table{handlers: make(map[string]Handler, len(handlers)), loc: time.Local,
		flying: newTracker(), tasks: map[string]*entry{}, last: map[string]*entry{}, draining: map[*entry]bool{}}
	for name, h := range handlers {
		if h == nil {
			panic("cron: NewTable with a nil Handler " + strconv.Quote(name))
		}
		t.handlers[name] = h
	}
	for _, o := range opts {
		o.apply(t)
	}
	if t.store == nil {
		t.store = schedule.NewMemoryStore(100)
	}
	t.hand = handover(t)
	return t
}

// Handlers returns the names of the Table's handlers, sorted: those a
// task's Handler may name.
func (t *Table) Handlers() []string {
	names := make([]string, 0, len(t.handlers))
	for name := range t.handlers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Next returns the due time of the next slot of the task name, and
// whether the Table runs that task (with a jitter, WithJobOptions and
// schedule.WithJitter, the slot starts later). It is the zero Time if the
// task has no run left, or its job waits for the job it replaces to stop.
func (t *Table) Next(name string) (time.Time, bool) {
	t.mu.Lock()
	e, ok := t.tasks[name]
	t.mu.Unlock()
	if !ok {
		return time.Time{}, false
	}
	return e.job.Next(), true
}

// Stop stops every task, as schedule.Job.Stop does: no slot falls due
// any more, the runs in flight are cancelled, also those of removed tasks,
// and Stop waits for them to return. On a schedule.SharedStore with a
// lease (schedule/sqlstore), the runs Stop cuts short are handed over: a
// replica that follows the same definitions takes each slot over at once.
// Shutdown lets them finish first. Stop ends the following of a Source
// (Follow) too, and waits for its look under way. It returns nil then, or
// ctx.Err() if ctx is done first. Apply then returns ErrTableStopped, also
// when a Handler that Stop cancelled calls it.
func (t *Table) Stop(ctx context.Context) error {
	t.mu.Lock()
	t.stopped = true
	jobs := make([]*schedule.Job, 0, len(t.tasks)+len(t.draining))
	for _, e := range t.tasks {
		jobs = append(jobs, e.job)
	}
	for e := range t.draining {
		jobs = append(jobs, e.job)
	}
	f := t.follow
	t.mu.Unlock()
	var followed error
	if f != nil {
		followed = f.stop(ctx) // a look under way finds the Table stopped
	}
	// Every job is stopped, and its runs cancelled, at once (a Stop with a
	// context that is done already does that and returns); then they are
	// waited for 64 at a time: a Table of a million tasks makes no million
	// goroutines to stop them.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, j := range jobs {
		_ = j.Stop(done)
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	errs := make([]error, len(jobs))
	for range min(64, len(jobs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(jobs); i = int(next.Add(1) - 1) {
				errs[i] = jobs[i].Stop(ctx)
			}
		})
	}
	wg.Wait()
	bg := make(chan struct{})
	go func() {
		t.bg.Wait()
		close(bg)
	}()
	select {
	case <-bg:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(append(errs, followed)...)
}

// Shutdown stops every task gracefully, as a process does on a deploy:
// at once, no slot falls due and no claim is taken over any more; the runs
// in flight, also those of removed tasks, finish until ctx is done; then
// those left are cancelled and handed over, each as its Handler returns,
// for a replica that follows the same definitions to take its slot over
// at once (see schedule.ShutdownAll). It ends the following of a Source
// too. It returns nil if every run finished before ctx was done, and
// ctx.Err() otherwise; Apply then returns ErrTableStopped.
func (t *Table) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	t.stopped = true
	jobs := make([]*schedule.Job, 0, len(t.tasks)+len(t.draining))
	for _, e := range t.tasks {
		jobs = append(jobs, e.job)
	}
	for e := range t.draining {
		jobs = append(jobs, e.job)
	}
	f := t.follow
	t.mu.Unlock()
	var followed error
	if f != nil {
		followed = f.stop(ctx)
	}
	err := schedule.ShutdownAll(ctx, jobs...)
	// The drains of removed tasks end once their runs have: the runs have
	// ended, or were cancelled and waited for, unless a Handler deaf to
	// its context outlives its lease.
	wait := ctx
	if ctx.Err() != nil {
		// As schedule.ShutdownAll waits: a lease more, or a second.
		bound := time.Second
		if ls, ok := t.store.(schedule.SharedStore); ok && ls.Lease() > 0 {
			bound = max(bound, ls.Lease())
		}
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(context.Background(), bound)
		defer cancel()
	}
	bg := make(chan struct{})
	go func() {
		t.bg.Wait()
		close(bg)
	}()
	select {
	case <-bg:
	case <-wait.Done():
		err = errors.Join(err, wait.Err())
	}
	return errors.Join(err, followed)
}

// unjoin returns the errors err joins, or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

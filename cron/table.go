package cron

import (
	"context"
	"errors"
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
// changed sets of definitions while they run: Apply updates only what
// changed.
//
// All its jobs share one Store, so that a job replaced by Apply (its
// overlap or misfire policy changed) neither runs a slot its predecessor
// ran nor misses one: the new job starts from the last record of the old.
//
// A Table is safe for concurrent use. Its zero value is not usable: make
// one with NewTable.
type Table struct {
	handlers map[string]Handler
	loc      *time.Location
	store    *tracker
	jobOpts  []schedule.Option

	applyMu sync.Mutex // held by Apply and Stop: one at a time

	mu      sync.Mutex // guards the fields below; Apply writes, Next reads
	tasks   map[string]*entry
	stopped bool
}

// An entry is a task loaded in a Table: its job and its definition.
type entry struct {
	job  *schedule.Job
	c    atomic.Pointer[compiled] // written by Apply, read by the job's runs
	seen time.Time                // when the Table first loaded the task: a Once task's anchor
}

// Changes lists the tasks an Apply added, changed and removed, by name, in
// order.
type Changes struct {
	Added, Changed, Removed []string
}

// ErrTableStopped is returned by Apply on a stopped Table.
var ErrTableStopped = errors.New("cron: table stopped")

// A TableOption configures a Table in NewTable.
type TableOption interface {
	apply(*Table)
}

type tableOption func(*Table)

func (f tableOption) apply(t *Table) { f(t) }

// WithLocation sets the zone in which the specs of tasks without a Zone
// are read (default time.Local).
func WithLocation(loc *time.Location) TableOption {
	return tableOption(func(t *Table) {
		if loc != nil {
			t.loc = loc
		}
	})
}

// WithStore sets the Store of the tasks' records (default a
// schedule.MemoryStore keeping 100 records per task). Tables of several
// replicas sharing a Store run each slot once between them.
func WithStore(s schedule.Store) TableOption {
	return tableOption(func(t *Table) { t.store = track(s) })
}

// WithJobOptions adds options to every task's schedule.Job, such as
// schedule.WithScheduler (one wheel for all tasks), schedule.WithObserver
// or schedule.WithTimeout. The Table sets WithStore, WithOverlap and
// WithMisfire itself: such options here are overridden.
func WithJobOptions(opts ...schedule.Option) TableOption {
	return tableOption(func(t *Table) { t.jobOpts = append(t.jobOpts, opts...) })
}

// NewTable returns an empty Table whose tasks run the given handlers, by
// name. NewTable panics if a handler is nil.
func NewTable(handlers map[string]Handler, opts ...TableOption) *Table {
	t := &Table{handlers: make(map[string]Handler, len(handlers)), loc: time.Local, tasks: map[string]*entry{}}
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
		t.store = track(schedule.NewMemoryStore(100))
	}
	return t
}

// Apply makes the Table run the enabled tasks of defs, and only those,
// changing only what differs from what it runs:
//
//   - a new task starts;
//   - a task whose times changed (spec, zone, start, end, permanent,
//     once) takes them at once: its next run is the first of the new
//     times after now;
//   - a task whose handler or business id changed runs with them from
//     its next run;
//   - a task whose overlap or misfire policy changed gets a new job, once
//     the old one's run in flight has returned; the new one applies its
//     misfire policy to the slots missed meanwhile;
//   - a task that is absent or disabled stops: its slots stop falling
//     due, Apply waits for its run in flight to return, not cancelled,
//     and then stops its job.
//
// A definition that is not valid gets a *TaskError, joined with the others
// in the returned error; the Table keeps running the task's previous
// definition, if any. Apply returns when every change is made, or with
// ctx.Err() if ctx is done first: the stops it was waiting for then cancel
// their runs in flight. Calls to Apply run one at a time.
func (t *Table) Apply(ctx context.Context, defs []Task) (Changes, error) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	t.mu.Lock()
	stopped := t.stopped
	t.mu.Unlock()
	if stopped {
		return Changes{}, ErrTableStopped
	}

	var errs []error
	want := map[string]*compiled{}
	keep := map[string]bool{} // tasks whose new definition is not valid
	seen := map[string]bool{}
	for _, d := range defs {
		if seen[d.Name] && d.Name != "" {
			errs = append(errs, &TaskError{Task: d.Name, Field: "name", Err: errors.New("defined twice")})
			continue
		}
		seen[d.Name] = true
		if !d.Enabled {
			continue
		}
		c, err := compile(d, t.handlers, t.loc)
		if err != nil {
			errs = append(errs, err)
			keep[d.Name] = true
			continue
		}
		want[d.Name] = c
	}

	now := time.Now()
	var ch Changes
	var wg sync.WaitGroup
	var errMu sync.Mutex
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	t.mu.Lock()
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range t.tasks {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		e := t.tasks[name]
		c, ok := want[name]
		delete(want, name)
		old := e.c.Load()
		switch {
		case !ok && keep[name]:
		case !ok:
			ch.Removed = append(ch.Removed, name)
			delete(t.tasks, name)
			wg.Go(func() {
				if err := t.drain(ctx, e); err != nil {
					fail(err)
				}
			})
		case c.overlap != old.overlap || c.misfire != old.misfire:
			ch.Changed = append(ch.Changed, name)
			next := t.newEntry(c, e.seen)
			t.tasks[name] = next
			wg.Go(func() {
				if err := t.drain(ctx, e); err != nil {
					fail(err)
				}
				// Started even if ctx is done, since the old job is
				// stopped: the task must go on.
				if err := next.job.Start(context.WithoutCancel(ctx)); err != nil {
					fail(&TaskError{Task: name, Field: "start", Err: err})
				}
			})
		case !sameSchedule(c.def, old.def):
			ch.Changed = append(ch.Changed, name)
			e.c.Store(c)
			e.job.SetSchedule(c.schedule(e.seen))
		case c.def.Handler != old.def.Handler || c.def.BusinessID != old.def.BusinessID:
			ch.Changed = append(ch.Changed, name)
			e.c.Store(c)
		}
	}
	added := slices.Sorted(func(yield func(string) bool) {
		for name := range want {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range added {
		e := t.newEntry(want[name], now)
		if err := e.job.Start(ctx); err != nil {
			errs = append(errs, &TaskError{Task: name, Field: "start", Err: err})
			continue
		}
		t.tasks[name] = e
		ch.Added = append(ch.Added, name)
	}
	t.mu.Unlock()
	wg.Wait()
	return ch, errors.Join(errs...)
}

// newEntry returns an entry, with its job not started, for c.
func (t *Table) newEntry(c *compiled, seen time.Time) *entry {
	e := &entry{seen: seen}
	e.c.Store(c)
	opts := append(slices.Clip(t.jobOpts),
		schedule.WithStore(t.store.jobStore()), schedule.WithOverlap(c.overlap), schedule.WithMisfire(c.misfire))
	e.job = schedule.NewJob(c.def.Name, c.schedule(seen), func(ctx context.Context, r schedule.Run) error {
		c := e.c.Load()
		return t.handlers[c.def.Handler](ctx, c.def.BusinessID, r)
	}, opts...)
	return e
}

// drain stops e's slots from falling due, waits for its run in flight to
// return, and stops its job.
func (t *Table) drain(ctx context.Context, e *entry) error {
	e.job.Pause()
	err := t.store.wait(ctx, e.job.Name())
	return errors.Join(err, e.job.Stop(ctx))
}

// Next returns the time of the next run of the task name, and whether the
// Table runs that task. It is the zero Time if the task has no run left.
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
// any more, the runs in flight are cancelled, and Stop waits for them to
// return, or for ctx. Apply then returns ErrTableStopped.
func (t *Table) Stop(ctx context.Context) error {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	t.mu.Lock()
	t.stopped = true
	tasks := t.tasks
	t.tasks = map[string]*entry{}
	t.mu.Unlock()
	var wg sync.WaitGroup
	errs := make(chan error, len(tasks))
	for _, e := range tasks {
		wg.Go(func() { errs <- e.job.Stop(ctx) })
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

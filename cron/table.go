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

	specs  sync.Map     // the Schedules of the specs read, by specKey: a spec the tasks share is read once
	nspecs atomic.Int64 // specs read

	mu       sync.Mutex // guards the fields below
	tasks    map[string]*entry
	last     map[string]*entry // the latest entry of each name that was removed and whose job has not stopped yet
	draining map[*entry]bool   // removed or replaced, until their job has stopped
	stopped  bool
	gen      uint32         // the latest Apply's
	bg       sync.WaitGroup // drains, and starts waiting for them; added to holding mu, while not stopped
	follow   *follower      // the Source followed, once Follow has read it; nil if none
	joining  bool           // a Follow is under way
	controls uint64         // counts the Pauses and Resumes made on the Source followed
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

// Apply makes the Table run the tasks of defs, and only those, changing
// only what differs from what it runs:
//
//   - a new task starts (paused, if its definition says so);
//   - a task whose times changed (spec, zone, start, end, permanent,
//     once) takes them at once: its next run is the first of the new
//     times after now;
//   - a task whose handler or business id changed runs with them from
//     its next run;
//   - a task whose Paused changed is paused or resumed, as Pause and
//     Resume do; a task paused by Pause stays paused through the Applies
//     that leave its Paused as it was;
//   - a task that is absent stops: its slots stop falling due at once,
//     its run in flight goes on, not cancelled, and its job stops when
//     that run has returned;
//   - a task whose overlap, misfire, timeout or retry policy changed gets
//     a new job, which starts when the old one has stopped, as above, and
//     applies its misfire policy to the slots missed meanwhile. So does a
//     task removed and added again while its run is in flight.
//
// A task that has no record in the store yet owes the slots due since its
// Created, or, without one, since the Table first loaded it, by its
// misfire policy: a new task, or one whose job is replaced before it ran,
// loses no slot for want of a record.
//
// Apply does not wait for runs in flight. A definition that is not valid
// (see Task.Validate; its Handler must also be one of the Table's, and its
// Name one the Store can hold) gets a *TaskError, joined with the others
// in the returned error; the Table keeps running the task's previous
// definition, if any. A definition is checked when it is new or changed:
// a task whose End passes while it is loaded stays loaded, with no run
// left, until its definition changes or goes. ctx bounds the reads of the
// store by the jobs that start. Concurrent calls take effect one after
// the other, in some order; Handlers and Observers may call Apply, and the
// Table's other methods: Apply calls no Observer while it holds the
// Table's lock. If the tasks' Scheduler refuses their timers (a stopped
// wheel.Wheel), Apply carries out the whole change, then passes the
// Scheduler's panic on to its caller; the Table stays usable, and Stop
// returns.
func (t *Table) Apply(ctx context.Context, defs []Task) (Changes, error) {
	return t.apply(ctx, defs, false, 0)
}

// apply is Apply. With fromSource, defs are the Source's, read when
// t.controls was epoch: if no Pause or Resume changed the Source since,
// each task is paused exactly when its definition says so, whatever
// Pause and Resume did here (the Source is where they act). Otherwise, a
// Pause or Resume here holds until the definition's Paused changes, so
// that a read of the Source older than a Pause does not undo it.
func (t *Table) apply(ctx context.Context, defs []Task, fromSource bool, epoch uint64) (Changes, error) {
	// Read the definitions in force, so that an unchanged definition is
	// not compiled again: with a million tasks, only what changed costs.
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return Changes{}, ErrTableStopped
	}
	cur := make([]*compiled, len(defs))
	for i := range defs {
		if e := t.tasks[defs[i].Name]; e != nil {
			cur[i] = e.c.Load()
		}
	}
	t.mu.Unlock()
	now := time.Now()
	var errs []error
	want := make([]*compiled, len(defs)) // nil: not valid
	for i, d := range defs {
		if cur[i] != nil && cur[i].same(d) {
			want[i] = cur[i]
			continue
		}
		var seen int64
		if cur[i] != nil {
			seen = cur[i].seen
		}
		c, err := t.compile(d, now, seen)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		want[i] = c
	}

	// Decide, holding t.mu, so that each Apply sees the one before whole.
	// The jobs are paused, rescheduled and started after, not holding it:
	// their Observers may call the Table.
	var ch Changes
	var drains, starts, moves, holds []*entry
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return Changes{}, ErrTableStopped
	}
	t.gen++
	gen := t.gen
	enforce := fromSource && t.controls == epoch
	presets := map[policy]schedule.Option{}
	var fresh map[string]bool // the names without an entry that came, to find a second definition
	for i, d := range defs {
		name := d.Name
		e := t.tasks[name]
		if (e != nil && e.applied == gen) || (e == nil && fresh[name]) {
			if name != "" {
				errs = append(errs, &TaskError{Task: name, Field: "name", Err: errors.New("defined twice")})
			}
			continue
		}
		c := want[i]
		if e == nil {
			if fresh == nil {
				fresh = map[string]bool{}
			}
			fresh[name] = true
			if c != nil {
				if d.Created.IsZero() {
					c = c.withSeen(now.UnixNano(), c != cur[i]) // new to the Table: loaded now
				}
				e = t.newEntryLocked(name, c, c.paused, presets)
				starts = append(starts, e)
				ch.Added = append(ch.Added, name)
				e.applied = gen
			}
			continue
		}
		e.applied = gen
		if c == nil {
			continue // not valid: the previous definition stays in force
		}
		old := e.c.Load()
		if c != old && d.Created.IsZero() {
			// A Once task keeps the time the Table first loaded it.
			c = c.withSeen(old.seen, c != cur[i])
		}
		held := e.held
		if c.paused != old.paused || enforce {
			held = c.paused // the definition's change wins over Pause and Resume
		}
		switch {
		case c == old:
			if held != e.held {
				e.held = held
				holds = append(holds, e)
			}
		case c.policy() != old.policy():
			ch.Changed = append(ch.Changed, name)
			drains = append(drains, e)
			e = t.newEntryLocked(name, c, held, presets)
			starts = append(starts, e)
			e.applied = gen
		default:
			ch.Changed = append(ch.Changed, name)
			e.c.Store(c)
			if !c.sameTimes(old) {
				moves = append(moves, e)
			}
			if held != e.held {
				e.held = held
				holds = append(holds, e)
			}
		}
	}
	for name, e := range t.tasks {
		if e.applied != gen {
			ch.Removed = append(ch.Removed, name)
			delete(t.tasks, name)
			drains = append(drains, e)
		}
	}
	slices.Sort(ch.Added)
	slices.Sort(ch.Changed)
	slices.Sort(ch.Removed)
	for _, e := range drains {
		t.draining[e] = true
		t.bg.Add(1) // holding t.mu, before Stop can set t.stopped and wait for bg
		if name := e.job.Name(); t.tasks[name] == nil {
			t.last[name] = e // removed: a task of the name added later waits for it
		}
	}
	for _, e := range starts {
		if e.after != nil {
			t.bg.Add(1)
		}
	}
	t.mu.Unlock()

	// A Scheduler that refuses timers (a stopped wheel.Wheel) makes
	// SetSchedule, Resume and Start panic. The Apply is carried out all
	// the same, so that the Table stays whole, and the first panic then
	// reaches the caller, as schedule.WithScheduler promises.
	var refused any
	refuse := func() {
		if v := recover(); v != nil && refused == nil {
			refused = v
		}
	}
	defer func() {
		if refused != nil {
			panic(refused)
		}
	}()
	for _, e := range drains {
		e.job.Pause()
		go t.drain(e)
	}
	for _, e := range moves {
		func() {
			defer refuse()
			t.reschedule(e)
		}()
	}
	for _, e := range holds {
		func() {
			defer refuse()
			t.hold(e)
		}()
	}
	byJob := map[*schedule.Job]*entry{}
	var jobs []*schedule.Job
	for _, e := range starts {
		// A paused task's job starts paused. Pause or Resume may have
		// changed e.held since: hold follows the latest.
		t.mu.Lock()
		held := e.held
		t.mu.Unlock()
		if held {
			func() {
				defer refuse()
				t.hold(e)
			}()
		}
		if e.after != nil {
			go t.startAfter(context.WithoutCancel(ctx), e)
			continue
		}
		byJob[e.job] = e
		jobs = append(jobs, e.job)
	}
	// The jobs read their last records together, if the store can.
	var started error
	func() {
		defer refuse()
		started = schedule.StartAll(ctx, jobs...)
	}()
	for _, err := range unjoin(started) {
		var se *schedule.StartError
		if !errors.As(err, &se) {
			continue
		}
		err = se.Err
		if errors.Is(err, schedule.ErrStopped) || errors.Is(err, schedule.ErrStarted) {
			// ErrStopped: a concurrent Apply drained the task, or Stop
			// stopped the Table, while the job read the store. The task
			// was applied, then removed; whoever stopped it owns it. No
			// one else starts e's job: ErrStarted cannot happen, but
			// would not be this Apply's to undo either.
			continue
		}
		e := byJob[se.Job]
		name := e.job.Name()
		errs = append(errs, &TaskError{Task: name, Field: "start", Err: err})
		t.mu.Lock()
		if t.tasks[name] == e { // not drained meanwhile: no one else marks e stopped
			delete(t.tasks, name)
			t.markStoppedLocked(e)
			if i := slices.Index(ch.Added, name); i >= 0 {
				ch.Added = slices.Delete(ch.Added, i, i+1)
			}
		}
		t.mu.Unlock()
	}
	return ch, errors.Join(errs...)
}

// reschedule gives e's job the times of its definition. Concurrent Applies
// may reschedule one job in either order: each one sets the schedule of the
// definition in force as it ends, so that the latest Apply's times win.
func (t *Table) reschedule(e *entry) {
	for {
		c := e.c.Load()
		e.job.SetSchedule(t.scheduleOf(c))
		if e.c.Load() == c {
			return
		}
	}
}

// newEntryLocked makes an entry for c, the task name, paused if held,
// with its job not started, the task's in t.tasks. It is to start once the
// previous entry of the name, if any, has stopped. The jobs of one Apply
// with the same policy share their settings (schedule.Preset), made once
// in presets. The caller holds t.mu.
func (t *Table) newEntryLocked(name string, c *compiled, held bool, presets map[policy]schedule.Option) *entry {
	e := &entry{t: t, after: t.tasks[name], held: held} // replaced: drains has it
	if e.after == nil {
		e.after = t.last[name] // removed earlier, and draining
	}
	if e.after != nil && e.after.done {
		e.after = nil // stopped: nothing to wait for
	}
	t.tasks[name] = e
	e.c.Store(c)
	key := c.policy()
	p := presets[key]
	if p == nil {
		p = schedule.Preset(append(append(slices.Clip(t.jobOpts), schedule.WithStore(t.hand)), key.options()...)...)
		presets[key] = p
	}
	e.job = schedule.NewJob(name, t.scheduleOf(c), e.run, p)
	return e
}

// run is the Func of e's job: the handler of the definition in force.
func (e *entry) run(ctx context.Context, r schedule.Run) error {
	t := e.t
	t.flying.enter(r.Job)
	defer t.flying.exit(r.Job)
	c := e.c.Load()
	return t.handlers[c.handler](ctx, c.businessID, r)
}

// markStoppedLocked notes that e's job has stopped, and wakes those who
// wait for it. The caller holds t.mu.
func (t *Table) markStoppedLocked(e *entry) {
	e.done = true
	if e.stopped != nil {
		close(e.stopped)
	}
}

// waitStopped waits until e's job has stopped.
func (t *Table) waitStopped(e *entry) {
	t.mu.Lock()
	if e.done {
		t.mu.Unlock()
		return
	}
	if e.stopped == nil {
		e.stopped = make(chan struct{})
	}
	ch := e.stopped
	t.mu.Unlock()
	<-ch
}

// startAfter starts e's job once the job it replaces has stopped, unless e
// was drained or the Table stopped meanwhile. It is one of t.bg.
func (t *Table) startAfter(ctx context.Context, e *entry) {
	defer t.bg.Done()
	t.waitStopped(e.after)
	t.mu.Lock()
	current := t.tasks[e.job.Name()] == e && !t.stopped
	t.mu.Unlock()
	if current {
		// If a drain or Stop comes now, Start makes a paused job or
		// returns ErrStarted: either is right. A Scheduler that refuses
		// the job's timer leaves it with no next run; there is no caller
		// to pass the panic to.
		defer func() { _ = recover() }()
		_ = e.job.Start(ctx)
	}
}

// drain waits for the runs in flight of e, a paused job, and for the job
// it replaced, if any, to stop; then it stops e's job. It is one of t.bg.
func (t *Table) drain(e *entry) {
	defer t.bg.Done()
	if e.after != nil {
		t.waitStopped(e.after) // e's job may have been started after it
	}
	_ = t.flying.wait(context.Background(), e.job.Name())
	// No Func of the job is running. Stop cancels a run that its runner
	// took before Pause but has not called the Func for yet, and waits for
	// it; the job replacing e starts only then.
	_ = e.job.Stop(context.Background())
	t.mu.Lock()
	delete(t.draining, e)
	if t.last[e.job.Name()] == e {
		delete(t.last, e.job.Name())
	}
	t.markStoppedLocked(e)
	t.mu.Unlock()
}

// Next returns the time of the next run of the task name, and whether the
// Table runs that task. It is the zero Time if the task has no run left,
// or its job waits for the job it replaces to stop.
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
// and Stop waits for them to return. It ends the following of a Source
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

package cron

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// Apply makes the Table run the tasks of defs, and only those, changing
// only what differs from what it runs:
//
//   - a new task starts (paused, if its definition says so);
//   - a task whose times changed (spec, zone, start, end, permanent,
//     once, calendars, or the days of a calendar it names) takes them at
//     once: its next run is the first of the new times after now;
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
// (see Task.Validate; its Handler must also be one of the Table's, its
// Calendars ones the Table knows, see SetCalendars, and its Name one the
// Store can hold) gets a *TaskError, joined with the others
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
	return t.apply(ctx, defs, nil, false, 0)
}

// apply is Apply. With fromSource, defs are the Source's, read when
// t.controls was epoch: if no Pause or Resume changed the Source since,
// each task is paused exactly when its definition says so, whatever
// Pause and Resume did here (the Source is where they act). Otherwise, a
// Pause or Resume here holds until the definition's Paused changes, so
// that a read of the Source older than a Pause does not undo it.
//
// With cals not nil, the Source's calendars (its *[]Calendar, which may
// be empty) replace those t knows; with nil, the tasks resolve their
// calendars in those t knows, and the apply starts again if SetCalendars
// changed them meanwhile.
func (t *Table) apply(ctx context.Context, defs []Task, cals *[]Calendar, fromSource bool, epoch uint64) (Changes, error) {
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
	known := t.cals
	t.mu.Unlock()
	now := time.Now()
	var errs []error
	set := known
	if cals != nil {
		var calErrs []error
		set, calErrs = known.with(*cals)
		errs = append(errs, calErrs...)
	}
	refused := map[string]refusal{}      // the definitions refused, by name
	want := make([]*compiled, len(defs)) // nil: not valid
	for i, d := range defs {
		if cur[i] != nil && cur[i].same(d) && set.resolves(cur[i].cals, d.Calendars) {
			want[i] = cur[i]
			continue
		}
		var seen int64
		if cur[i] != nil {
			seen = cur[i].seen
		}
		c, err := t.compile(d, now, seen, set)
		if err != nil {
			errs = append(errs, err)
			refused[d.Name] = refusal{d, err}
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
	if cals == nil && !sameSet(t.cals, known) {
		t.mu.Unlock()
		return t.apply(ctx, defs, nil, fromSource, epoch) // compiled with calendars no longer known
	}
	t.cals = set
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
				err := &TaskError{Task: name, Field: "name", Err: errors.New("defined twice")}
				errs = append(errs, err)
				refused[name] = refusal{d, err}
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
		// A definition paused with another note or end pauses its job
		// again, with them.
		renote := held && c.paused && old.paused && !c.samePause(old.note)
		switch {
		case c == old:
			if held != e.held || renote {
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
			if held != e.held || renote {
				e.held = held
				holds = append(holds, e)
			}
		}
	}
	for name, e := range t.tasks {
		if e.applied != gen {
			ch.Removed = append(ch.Removed, name)
			t.removeLocked(name)
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
	newly := t.refuseLocked(refused)
	t.mu.Unlock()
	t.logRefused(newly)

	// A Scheduler that refuses timers (a stopped wheel.Wheel) makes
	// SetSchedule, Resume and Start panic. The Apply is carried out all
	// the same, so that the Table stays whole, and the first panic then
	// reaches the caller, as schedule.WithScheduler promises.
	var panicked any
	refuse := func() {
		if v := recover(); v != nil && panicked == nil {
			panicked = v
		}
	}
	defer func() {
		if panicked != nil {
			panic(panicked)
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
			t.hold(e, e.c.Load().pauseOptions()...)
		}()
	}
	byJob := map[*schedule.Job]*entry{}
	var jobs []*schedule.Job
	// A paused task's job starts paused. Pause or Resume may change e.held
	// after this look: hold follows the latest.
	held := make([]bool, len(starts))
	t.mu.Lock()
	for i, e := range starts {
		held[i] = e.held
	}
	t.mu.Unlock()
	for i, e := range starts {
		if held[i] {
			func() {
				defer refuse()
				t.hold(e, e.c.Load().pauseOptions()...)
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
	var unstarted []refusal // the tasks whose jobs could not start
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
		terr := &TaskError{Task: name, Field: "start", Err: err}
		errs = append(errs, terr)
		t.mu.Lock()
		if t.tasks[name] == e { // not drained meanwhile: no one else marks e stopped
			t.removeLocked(name)
			t.markStoppedLocked(e)
			if i := slices.Index(ch.Added, name); i >= 0 {
				ch.Added = slices.Delete(ch.Added, i, i+1)
			}
			if t.gen == gen {
				if t.refused == nil {
					t.refused = map[string]refusal{}
				}
				t.refused[name] = refusal{e.c.Load().task(name), terr}
				t.renamedLocked()
				unstarted = append(unstarted, t.refused[name])
			}
		}
		t.mu.Unlock()
	}
	t.logRefused(unstarted)
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
	if t.tasks[name] == nil {
		t.renamedLocked()
	}
	t.tasks[name] = e
	e.c.Store(c)
	key := c.policy()
	p := presets[key]
	if p == nil {
		p = schedule.Preset(append(append(slices.Clip(t.jobOpts), schedule.WithStore(t.hand)), key.options(t.pausedItself)...)...)
		presets[key] = p
	}
	e.job = schedule.NewJob(name, t.scheduleOf(c), e.run, p)
	return e
}

// A refusal is a definition that the latest Apply refused, and why.
type refusal struct {
	task Task
	err  error
}

// refuseLocked makes refused the definitions the latest Apply refused,
// and returns those that were not refused for the same reason before, to
// log. The caller holds t.mu.
func (t *Table) refuseLocked(refused map[string]refusal) []refusal {
	fresh := t.freshRefusalsLocked(refused)
	if len(refused) == 0 {
		refused = nil
	}
	// The names of the refused tasks that t does not run are in Names: a
	// change of them is a change of the names.
	for name := range t.refused {
		if _, ok := refused[name]; !ok && t.tasks[name] == nil {
			t.renamedLocked()
		}
	}
	for name := range refused {
		if _, ok := t.refused[name]; !ok && t.tasks[name] == nil {
			t.renamedLocked()
		}
	}
	t.refused = refused
	return fresh
}

package cron

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/circulation-go/circulation/schedule"
)

// Tasks returns every task t runs, sorted by name: its definition in
// force, its next run, its latest record in the Table's Store, its runs
// in flight, and why the latest Apply refused its definition, if it did
// (see TaskState); and every task whose only definition it refused. A
// task whose latest record the Store could not read has a zero Last;
// TasksContext reports the Store's error.
//
// Tasks is shorthand for TasksContext(context.Background()), its error
// aside.
func (t *Table) Tasks() []TaskState {
	ts, _ := t.TasksContext(context.Background())
	return ts
}

// TasksContext is Tasks, with ctx bounding the read of the Store. It reads
// the latest records of all the tasks in one call if the Store is a
// schedule.LastReader (schedule/sqlstore reads a thousand a statement),
// and one at a time otherwise; what it reports of a task's job, the Table
// holds. It returns every task even if the Store fails: then those whose
// records it could not read have a zero Last, and the error is the
// Store's.
//
// The states are read one task after the other, not at one instant: a
// task changed by a concurrent Apply is reported before or after the
// change. After Stop, Tasks reports the tasks as they were, with no Next.
func (t *Table) TasksContext(ctx context.Context) ([]TaskState, error) {
	return t.TasksOf(ctx, t.sortedNames()...)
}

// TasksOf is TasksContext for the tasks of names only: it returns the
// state of each of them that t runs, in the order of names, and leaves
// out those it does not run. With Names, it serves an inventory a page
// at a time: a page of names costs one call of a Store that is a
// schedule.LastReader, whatever the number of tasks.
func (t *Table) TasksOf(ctx context.Context, names ...string) ([]TaskState, error) {
	type item struct {
		name    string
		e       *entry // nil for a task refused that t does not run
		held    bool
		refused refusal
		fill    *BackfillState
	}
	items := make([]item, 0, len(names))
	t.mu.Lock()
	for _, name := range names {
		e := t.tasks[name]
		r, refused := t.refused[name]
		if e != nil || refused {
			it := item{name: name, e: e, refused: r}
			if e != nil {
				it.held = e.held
				it.fill = t.backfillOfLocked(name, e)
			}
			items = append(items, it)
		}
	}
	t.mu.Unlock()
	if len(items) < len(names) {
		names = make([]string, len(items))
		for i, it := range items {
			names[i] = it.name
		}
	}
	running := t.flying.counts(names)
	lasts, err := schedule.LastOf(ctx, t.store, names)
	if err != nil && len(names) > 0 {
		err = fmt.Errorf("cron: Tasks: reading the last records: %w", err)
	}
	ts := make([]TaskState, len(items))
	for i, it := range items {
		s := &ts[i]
		if it.e == nil {
			s.Task = it.refused.task
		} else {
			s.Task = it.e.c.Load().task(it.name)
			n, paused := it.e.job.PauseNote()
			s.Task.Paused = it.held && paused // a pause whose end has come is over
			s.Task.PauseNote, s.Task.PausedUntil = n.Note, n.Until
			s.Next = it.e.job.Next()
			if n, ok := it.e.job.Remaining(); ok {
				s.Remaining = n
			}
		}
		s.Refused = it.refused.err
		s.Backfill = it.fill
		s.Last = lasts[it.name]
		s.Running = running[i]
	}
	return ts, err
}

// Names returns the names of the tasks t runs, and of those whose only
// definition the latest Apply refused, sorted. The Table keeps them sorted
// once asked, until a task comes or goes: a call then costs a copy of the
// names.
func (t *Table) Names() []string {
	return slices.Clone(t.sortedNames())
}

// Len returns the number of tasks t runs: those of the definitions in
// force, not the definitions refused, nor the jobs of removed tasks whose
// run in flight goes on; after Stop, those it ran. It copies nothing, as
// Names does: a gauge may read it at every scrape.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.tasks)
}

// sortedNames returns t.names, sorting the names of t.tasks again if they
// changed. The caller must not modify it.
func (t *Table) sortedNames() []string {
	t.mu.Lock()
	if names := t.names; names != nil {
		t.mu.Unlock()
		return names
	}
	renames := t.renames
	names := make([]string, 0, len(t.tasks)+len(t.refused))
	for name := range t.tasks {
		names = append(names, name)
	}
	for name := range t.refused {
		if t.tasks[name] == nil {
			names = append(names, name)
		}
	}
	t.mu.Unlock()
	slices.Sort(names) // not holding t.mu: a hundred thousand names take milliseconds
	if testHookSort != nil {
		testHookSort()
	}
	t.mu.Lock()
	if t.renames == renames {
		t.names = names
	}
	t.mu.Unlock()
	return names
}

// renamedLocked notes that a name came to t.tasks or left it. The caller
// holds t.mu.
func (t *Table) renamedLocked() {
	t.names = nil
	t.renames++
}

// removeLocked removes the task name from t.tasks. The caller holds t.mu.
func (t *Table) removeLocked(name string) {
	delete(t.tasks, name)
	delete(t.fills, name)
	t.renamedLocked()
}

// RunNow runs the task name at once, as a run with Reason schedule.Manual
// under its overlap policy (schedule.Job.RunNow): under "skip", it is
// Skipped if a run of the task is in flight. RunNow does not wait for the
// run; its record reaches the Store and the Observer as any other.
//
// RunNow returns an error wrapping ErrUnknownTask if t does not run the
// task, ErrTaskPaused if the task is paused (its run would be Skipped),
// and ErrTableStopped after Stop. It does nothing, and returns nil, while
// the task's job waits for the job it replaces to stop (see Apply).
func (t *Table) RunNow(name string) error {
	t.mu.Lock()
	e, stopped := t.tasks[name], t.stopped
	held := e != nil && e.held
	t.mu.Unlock()
	switch {
	case stopped:
		return ErrTableStopped
	case e == nil:
		return unknown(name)
	case held && e.job.Paused(): // not a pause whose end has come
		return ErrTaskPaused
	}
	e.job.RunNow()
	return nil
}

// ErrTaskPaused is returned by RunNow for a paused task.
var ErrTaskPaused = errors.New("cron: task paused")

// Pause pauses the task name: its slots stop falling due until Resume,
// and a slot due meanwhile neither runs nor is caught up after
// (schedule.Job.Pause); runs in flight go on. Tasks reports it with
// Paused set. Its options give the pause a note (schedule.Because) and an
// end (schedule.ResumeAt), which Tasks reports as the task's PauseNote
// and PausedUntil; at its end the task resumes by itself. Pause on a
// paused task changes what its options give, and nothing else.
//
// On a Table that follows a Source (Follow), Pause pauses the task's
// definition in the Source (Source.SetPaused), so that every Table
// following it pauses the task, and then the task here at once, without
// waiting for the Source's next look, which it asks for. The Source is the
// authority: each look pauses or resumes every task as its definition
// says, except that a look that read the Source before a Pause does not
// undo it. The Source decides which names it knows: its error, such as one
// wrapping ErrUnknownTask, is returned, and the task is not paused.
//
// Without a Source, Pause acts on this Table: the task stays paused
// through the Applies that leave its definition's Paused as it was, until
// Resume, or until an Apply changes its Paused, which then wins. It
// returns an error wrapping ErrUnknownTask if t does not run the task.
//
// Pause returns ErrTableStopped after Stop. It may be called from
// Handlers and Observers.
func (t *Table) Pause(name string, opts ...schedule.PauseOption) error {
	return t.setPaused(name, true, opts)
}

// Resume resumes the task name, paused by its definition or by Pause: its
// next slot is the first after now (schedule.Job.Resume). Resume on a task
// that is not paused does nothing. It acts, and fails, as Pause does: on
// the Source's definition, if t follows one, and else on this Table.
func (t *Table) Resume(name string) error { return t.setPaused(name, false, nil) }

// setPaused is Pause with opts if paused, Resume if not.
func (t *Table) setPaused(name string, paused bool, opts []schedule.PauseOption) error {
	t.mu.Lock()
	f, stopped := t.follow, t.stopped
	t.mu.Unlock()
	if stopped {
		return ErrTableStopped
	}
	if f != nil {
		var note schedule.PauseNote
		if paused {
			note = t.noteOf(name).With(opts...)
		}
		if err := f.src.SetPaused(f.ctx, name, paused, note); err != nil {
			return err
		}
		defer f.trig.Fire() // and every other change of the Source since its last look
	}
	t.mu.Lock()
	if f != nil {
		t.controls++ // a read of the Source before SetPaused must not undo it
	}
	e := t.tasks[name]
	switch {
	case t.stopped:
		t.mu.Unlock()
		return ErrTableStopped
	case e == nil && f != nil:
		t.mu.Unlock()
		return nil // not loaded here yet, or refused: the Source has it, and the next look applies it
	case e == nil:
		t.mu.Unlock()
		return unknown(name)
	}
	e.held = paused
	t.mu.Unlock()
	t.hold(e, opts...)
	return nil
}

// noteOf returns the note of the pause of the task name, if it is paused:
// a Pause of a paused task keeps what its options do not change.
func (t *Table) noteOf(name string) schedule.PauseNote {
	t.mu.Lock()
	e := t.tasks[name]
	t.mu.Unlock()
	if e == nil {
		return schedule.PauseNote{}
	}
	n, _ := e.job.PauseNote()
	return n
}

// pausedItself is told of a task's job that paused itself, with note
// (PauseOnFailures): the task is paused, here and, if t follows a Source,
// in its definition, for every replica.
func (t *Table) pausedItself(j *schedule.Job, note schedule.PauseNote) {
	name := j.Name()
	t.mu.Lock()
	e, f := t.tasks[name], t.follow
	if e == nil || e.job != j || t.stopped {
		t.mu.Unlock()
		return
	}
	e.held = true
	if f != nil {
		t.controls++ // a read of the Source before SetPaused must not undo it
	}
	t.mu.Unlock()
	if f == nil {
		return
	}
	if err := f.src.SetPaused(f.ctx, name, true, note); err != nil && f.ctx.Err() == nil {
		t.logPauseNotKept(name, err)
		if f.onErr != nil {
			f.onErr(fmt.Errorf("cron: pausing task %q after its failures: %w", clip(name), err))
		}
	}
	f.trig.Fire()
}

func unknown(name string) error {
	return &unknownTask{name}
}

// unknownTask is the error of a name a Table does not run.
type unknownTask struct{ name string }

func (e *unknownTask) Error() string { return "cron: unknown task " + strconv.Quote(clip(e.name)) }
func (e *unknownTask) Unwrap() error { return ErrUnknownTask }

// hold pauses or resumes e's job, as e.held says. Calls of hold for one
// entry, concurrent with changes of e.held, leave the job as e.held says
// once the last of them returns: each looks at e.held again after it
// paused the job, and resumes it if that changed. Resume is called holding
// t.mu (it calls no Observer), and only while e is its task's entry, so
// that a job that Apply drained, or Stop stopped, is never resumed. Pause
// calls Observers, so it is called without t.mu; it does no harm to a job
// being drained, which is paused already.
func (t *Table) hold(e *entry, opts ...schedule.PauseOption) {
	if testHookHold != nil {
		testHookHold("start", e.job.Name())
	}
	for {
		t.mu.Lock()
		if !e.held {
			defer t.mu.Unlock() // Resume panics if the Scheduler refuses the job's timer
			if !t.stopped && t.tasks[e.job.Name()] == e {
				e.job.Resume()
			}
			return
		}
		t.mu.Unlock()
		if testHookHold != nil {
			testHookHold("pause", e.job.Name())
		}
		e.job.Pause(opts...)
		t.mu.Lock()
		held := e.held
		t.mu.Unlock()
		if held {
			return
		}
	}
}

// definitions returns the definition in force of the task of each of jobs,
// nil for those t does not know, looking them up under one lock.
func (t *Table) definitions(jobs ...string) []*compiled {
	es := make([]*entry, len(jobs))
	t.mu.Lock()
	for i, j := range jobs {
		es[i] = t.entryLocked(j)
	}
	t.mu.Unlock()
	cs := make([]*compiled, len(jobs))
	for i, e := range es {
		if e != nil {
			cs[i] = e.c.Load()
		}
	}
	return cs
}

// entryLocked returns the entry of the task name, or the latest removed
// one whose job has not stopped yet, or nil. The caller holds t.mu.
func (t *Table) entryLocked(name string) *entry {
	if e := t.tasks[name]; e != nil {
		return e
	}
	return t.last[name]
}

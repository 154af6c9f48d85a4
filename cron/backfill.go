package cron

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// A BackfillState is where the latest backfill of a task (Table.Backfill)
// stands: its progress, whether it is under way, and why it ended before
// its last slot, if it did.
type BackfillState struct {
	schedule.BackfillProgress
	// Running says the backfill is under way.
	Running bool
	// Err is why the backfill ended before handling its last slot: the
	// task was paused or its job stopped (schedule.ErrPaused,
	// schedule.ErrStopped; an Apply that changes the task's definition
	// stops its job), a claim failed, or CancelBackfill
	// (context.Canceled). It is nil while Running, and once every slot was
	// handled.
	Err error
}

// A fill is a task's latest backfill. Its fields are guarded by Table.mu.
type fill struct {
	job    *schedule.Job
	cancel context.CancelFunc
	state  BackfillState // Running until the backfill returns
}

// Backfill runs every slot of the task name's schedule in [from, to),
// oldest first, one at a time, with Reason schedule.Backfill, in the
// background (schedule.Job.Backfill, given opts): each slot is claimed in
// the Table's Store, so that a slot that has a record, of an earlier run
// or of another Table's, does not run again, unless opts hold
// schedule.RunAgain (its finished records run again: see RunAgain, and
// BackfillProgress.RanAgain); a slot waits until the task's overlap
// policy would start it at once, and then runs under it. Slots after the
// call are left to the schedule. Across a daylight-saving change the
// slots are the schedule's: the fall-back hour's slot runs once.
//
// Backfill returns once the backfill has started: Tasks reports its
// progress in TaskState.Backfill, and CancelBackfill ends it. It returns
// an error, and runs nothing, if t does not run the task (wrapping
// ErrUnknownTask), the task is paused (ErrTaskPaused), t is stopped
// (ErrTableStopped), the task has a backfill under way (wrapping
// schedule.ErrBackfilling), from or to is zero, from is after to, or the
// range holds more than schedule.MaxBackfill slots (wrapping
// schedule.ErrBackfillTooLong), or opts hold RunAgain and the Table's
// Store is not a schedule.AgainStore. A backfill ends, with its Err set, if the
// task is paused, its definition changed by an Apply, or t stopped.
func (t *Table) Backfill(name string, from, to time.Time, opts ...schedule.BackfillOption) error {
	t.mu.Lock()
	e, stopped := t.tasks[name], t.stopped
	held := e != nil && e.held
	var busy bool
	if f := t.fills[name]; f != nil && e != nil && f.job == e.job {
		busy = f.state.Running
	}
	t.mu.Unlock()
	switch {
	case stopped:
		return ErrTableStopped
	case e == nil:
		return unknown(name)
	case held:
		return ErrTaskPaused
	case busy:
		return fmt.Errorf("cron: Backfill of task %q: %w", clip(name), schedule.ErrBackfilling)
	}
	// A done context checks the range and the job without running a slot.
	check, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.job.Backfill(check, from, to, opts...); !errors.Is(err, context.Canceled) {
		if err == nil {
			return nil // no slot in the range
		}
		return fmt.Errorf("cron: task %q: %w", clip(name), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &fill{job: e.job, cancel: cancel, state: BackfillState{Running: true,
		BackfillProgress: schedule.BackfillProgress{From: from, To: to}}}
	t.mu.Lock()
	switch {
	case t.stopped:
		t.mu.Unlock()
		cancel()
		return ErrTableStopped
	case t.fills[name] != nil && t.fills[name].job == e.job && t.fills[name].state.Running:
		t.mu.Unlock()
		cancel()
		return fmt.Errorf("cron: Backfill of task %q: %w", clip(name), schedule.ErrBackfilling)
	}
	if t.fills == nil {
		t.fills = map[string]*fill{}
	}
	t.fills[name] = f
	t.bg.Add(1) // holding t.mu, before Stop can set t.stopped and wait for bg
	t.mu.Unlock()
	go func() {
		defer t.bg.Done()
		defer cancel()
		p, err := e.job.Backfill(ctx, from, to, opts...)
		t.mu.Lock()
		f.state = BackfillState{BackfillProgress: p, Err: err}
		t.mu.Unlock()
	}()
	return nil
}

// CancelBackfill ends the backfill under way of the task name, if any:
// its run in flight goes on, and no slot after it runs; its state reports
// context.Canceled. It returns an error wrapping ErrUnknownTask if t does
// not run the task.
func (t *Table) CancelBackfill(name string) error {
	t.mu.Lock()
	e, f := t.tasks[name], t.fills[name]
	t.mu.Unlock()
	if e == nil {
		return unknown(name)
	}
	if f != nil {
		f.cancel()
	}
	return nil
}

// backfillOfLocked returns the state of the latest backfill of the task
// name, whose entry is e, if it has one: a backfill under way of a job
// that e's replaced is not e's. The caller holds t.mu.
func (t *Table) backfillOfLocked(name string, e *entry) *BackfillState {
	f := t.fills[name]
	if f == nil || e == nil || f.job != e.job && f.state.Running {
		return nil
	}
	s := f.state
	if s.Running {
		if p, ok := f.job.Backfilling(); ok {
			s.BackfillProgress = p
		}
	}
	return &s
}

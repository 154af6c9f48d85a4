package cron

import (
	"context"

	"github.com/circulation-go/circulation/schedule"
)

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
	// No Func of the job is running. Cancel cancels a run that its runner
	// took before Pause but has not called the Func for yet, and waits for
	// it; the job replacing e starts only then. The task is removed or
	// redefined, a decision about it: that run is Canceled, not handed
	// over to a replica that may no longer run the task.
	_ = e.job.Cancel(context.Background())
	t.mu.Lock()
	delete(t.draining, e)
	if t.last[e.job.Name()] == e {
		delete(t.last, e.job.Name())
	}
	t.markStoppedLocked(e)
	t.mu.Unlock()
}

package schedule

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/circulation-go/circulation"
)

// Pause stops the job's slots from falling due until Resume: slots during
// a pause are neither run nor missed. Runs in flight go on, but a retry
// waiting for its pause (WithRetry) does not start: its slot keeps the
// outcome of its last attempt. Runs waiting to follow them
// (OverlapBufferOne, OverlapReplace, catch-ups), and the slot due at the
// moment of Pause if its run has not started, are Skipped; slots handed
// to their owner on another node (Sharer) are dropped, with no record, the
// owner's to run. A paused job's
// RunNow is Skipped. Pause before Start makes the job start paused.
//
// Its options give the pause a note (Because), which PauseNote reports,
// and an end (ResumeAt), when the job resumes as by Resume. A Pause of a
// paused job changes the note or the end it is given, and keeps the
// other. A Pause whose end is not after now pauses nothing, and resumes a
// paused job, at once.
func (j *Job) Pause(opts ...PauseOption) { j.pause(false, opts) }

// pause is Pause; if fresh, only of a job neither paused nor stopped. It
// reports whether it paused the job.
func (j *Job) pause(fresh bool, opts []PauseOption) bool {
	var obs []Record
	j.mu.Lock()
	now := time.Now().Round(0)
	if j.state == jobStopped || fresh && j.paused() {
		j.mu.Unlock()
		return false
	}
	if over := j.notePauseLocked(now, opts); over {
		j.mu.Unlock()
		j.Resume()
		return false
	}
	if !j.paused() {
		obs = j.handDueLocked(now, true)
		j.flags |= jobPaused
		j.next = time.Time{}
		j.setTimerLocked(time.Time{})
		obs = append(obs, j.dropQueueLocked(ErrPaused)...)
		if x := j.x; x != nil {
			x.endRetriesLocked(ErrPaused)
			x.stopWaitingLocked(ErrPaused)
		}
		j.dropHoldsLocked()
		j.fillWakeLocked()
	}
	j.tellLocked(obs)
	j.mu.Unlock()
	j.resync()
	j.told(obs)
	return true
}

// Resume ends a pause: the job's next slot is the first strictly after
// now, which Next reports once Resume returns.
func (j *Job) Resume() {
	if refused := j.resume(nil); refused != nil {
		panic(refused)
	}
}

// resume is Resume; with end, only if the job's pause is still the one
// whose end it is, and the job is not stopped. It returns what the
// Scheduler panicked with, if it refused the job's timer.
func (j *Job) resume(end *pausing) (refused any) {
	j.mu.Lock()
	if !j.paused() || end != nil && (j.state == jobStopped || j.x == nil || j.x.r == nil || j.x.r.pause != end) {
		j.mu.Unlock()
		return nil
	}
	j.flags &^= jobPaused
	j.forgetPauseLocked(true)
	now := time.Now().Round(0)
	if j.cfg.pauseOn > 0 {
		r := j.rareLocked(now)
		r.resumed, r.failed = now, 0 // the failures before count no more
	}
	if j.state == jobStarted {
		j.noCatchUpBeforeLocked(now)
		refused = j.armLocked(now)
		if x := j.x; x != nil && x.look && !x.reclaiming && j.freeLocked(x) {
			j.takeOverLocked(x) // a claim offered while paused
		}
	}
	j.mu.Unlock()
	j.resync()
	return refused
}

// Paused reports whether the job is paused: Pause was called, and no
// Resume since.
func (j *Job) Paused() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.paused()
}

// SetSchedule makes s the job's schedule: its next slot is the first of s
// strictly after now, which Next reports once SetSchedule returns. A slot
// of the old schedule due by now is handled first, as it would have been.
// The latest call wins. A job whose schedule had ended runs again on s.
// A job started with WithMaxRuns counts the slots of s from the time it
// counted those of its old schedule from. SetSchedule panics if s is nil.
func (j *Job) SetSchedule(s Schedule) {
	if s == nil {
		panic("schedule: SetSchedule with a nil Schedule")
	}
	var obs []Record
	var refused any
	j.mu.Lock()
	if f, ok := j.sched.(*first); ok && f.job {
		g := j.limitLocked(s, f.after)
		g.held = f.held // recoverStart counts it from the store's time
		s = g
	}
	if j.state == jobStarted && !j.paused() {
		now := time.Now().Round(0)
		obs = j.handDueLocked(now, true)
		j.sched = s
		j.noCatchUpBeforeLocked(now)
		refused = j.armLocked(now)
	} else {
		j.sched = s
	}
	j.tellLocked(obs)
	j.mu.Unlock()
	j.resync()
	j.told(obs)
	if refused != nil {
		panic(refused)
	}
}

// RunNow runs the job now, with Reason Manual, under the overlap policy.
// Its Due is the current time, or a nanosecond after the latest Due the
// job handed out if that is not before now, so that each run of the job
// has its own (Job, Due). If another replica sharing the store claimed
// that Due first, the run is Skipped. RunNow does nothing before Start or
// after Stop.
func (j *Job) RunNow() {
	var obs []Record
	j.mu.Lock()
	if j.state == jobStarted {
		now := time.Now().Round(0)
		obs = j.handDueLocked(now, true) // a slot due now goes first, with its own Due
		x := j.active(now)
		due := now
		if !due.After(x.handed) {
			due = x.handed.Add(1)
		}
		x.handed = due
		r := Run{Job: j.name, Due: due, Reason: Manual}
		if j.paused() {
			obs = append(obs, j.record(r, Skipped, ErrPaused))
		} else {
			obs = j.submitLocked([]pending{{run: r}}, obs)
		}
	}
	j.tellLocked(obs)
	j.mu.Unlock()
	j.told(obs)
}

// Stop ends the job: no slot falls due any more, the context of every run
// in flight is cancelled (a retry waiting for its pause, WithRetry, does
// not start), and Stop waits until they have returned and nothing of the
// job's is pending, including a Renew that hangs, deaf to its context,
// after its run gave the lease up, and the records that calls of the job's
// methods made before it pass to the Observer: none reaches the Observer
// once Stop returned. It returns nil then, or ctx.Err() if ctx is done
// first.
//
// A stopping process is a deploy, not a decision about the slots it runs:
// on a SharedStore with a lease, each run Stop cuts short is Released, and
// a node that shares the store takes its slot over at once and runs it
// again (Recovered, Attempt + 1), as after a crash but without the wait
// for its lease; a run whose Func returns nil once cancelled is taken to
// have done its work, and is Succeeded. On any other store, and after
// Cancel, such a run is Canceled, and its slot is not run again.
// Shutdown lets the runs in flight finish first.
//
// Stop on a job that was never started, that was stopped before, or whose
// schedule has ended, returns nil once nothing of the job's runs. Stop
// must not be called from the Func or the Observer with a context that
// outlives them: it would wait for itself. (The Func's own context is
// cancelled by Stop, so Stop(ctx) with it returns at once.)
func (j *Job) Stop(ctx context.Context) error {
	var obs []Record
	j.mu.Lock()
	j.state = jobStopped
	j.next = time.Time{}
	j.setTimerLocked(time.Time{})
	j.forgetPauseLocked(false)
	x := j.x
	if x != nil {
		obs = j.dropQueueLocked(errStopped)
		obs = append(obs, j.dropWaitingLocked(errStopped)...)
		j.fillWakeLocked()
	}
	j.tellLocked(obs) // a Stop beside this one waits for them too
	j.mu.Unlock()
	j.w.sync(j)
	// The records of the runs that will not run reach the Observer before
	// the runs in flight are cancelled, and so before their own records.
	j.told(obs)
	if x != nil {
		j.mu.Lock()
		for _, f := range x.runs {
			f.cancel(errStopped)
		}
		j.mu.Unlock()
	}
	err := j.w.quiesce(ctx)
	if t := j.delist(); t != nil {
		err = errors.Join(err, t.Stop(ctx))
	}
	if x != nil {
		j.mu.Lock()
		var t *circulation.Trigger
		if x.r != nil {
			t = x.r.recover
		}
		j.mu.Unlock()
		if t != nil {
			err = errors.Join(err, t.Stop(ctx))
		}
	}
	if err != nil {
		return err
	}
	if err := j.wait(ctx); err != nil {
		return err
	}
	// A run that claimed as the job stopped may have enlisted it since
	// (enlistLate).
	if t := j.delist(); t != nil {
		if err := t.Stop(ctx); err != nil {
			return err
		}
	}
	if err := j.flushNotes(ctx); err != nil {
		return err
	}
	if x == nil {
		return nil
	}
	// Renewals of leases given up while their Renew hung end when it
	// returns.
	j.mu.Lock()
	var hung []*circulation.Trigger
	if x.r != nil {
		hung, x.r.hung = x.r.hung, nil
	}
	j.mu.Unlock()
	for _, t := range hung {
		if err := t.Stop(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Cancel is Stop, except that the runs it cuts short are Canceled, on
// every store: their slots are decided, and no node runs them again. It is
// for a job that ends for good (a task deleted), where Stop is for a
// process that ends.
func (j *Job) Cancel(ctx context.Context) error {
	j.mu.Lock()
	j.flags |= jobCancel
	j.mu.Unlock()
	return j.Stop(ctx)
}

// Shutdown ends the job gracefully, as a process does on a deploy: no slot
// falls due any more and the job takes no claim over, at once, and
// Shutdown waits for the runs in flight to finish, until ctx is done. It
// then cancels those left, and each is Released as its Func returns, for a
// node that shares the store to take its slot over at once and run it
// again (Recovered, Attempt + 1): on any SharedStore, MemoryStore
// included; on any other store, they are Canceled. A run that fails with
// attempts left (WithRetry) while the job shuts down is handed over too.
// Shutdown waits for the runs it cancelled to return, and for what Stop
// waits for, for at most one lease more on a store with a lease (a second
// on any other): a Func deaf to its context keeps its claim past that, and
// its slot is taken over once the claim's lease expires.
//
// Shutdown returns nil if every run finished before ctx was done, and
// ctx.Err() otherwise. Like Stop, it must not be called from the Func or
// the Observer with a context that outlives them. Shutdown is ShutdownAll
// of the one job.
func (j *Job) Shutdown(ctx context.Context) error {
	return ShutdownAll(ctx, j)
}

// ShutdownAll shuts each of jobs down as Shutdown does, together: none
// takes a slot or a claim from the moment ShutdownAll is called, the runs
// in flight of all of them finish until ctx is done, and then those left
// are cancelled and handed over. It returns nil if every run finished
// before ctx was done, and ctx.Err() otherwise, joined with the errors of
// the jobs' Stops after that. Nil jobs are skipped.
func ShutdownAll(ctx context.Context, jobs ...*Job) error {
	jobs = slices.DeleteFunc(slices.Clone(jobs), func(j *Job) bool { return j == nil })
	var reclaimers []*circulation.Trigger
	for _, j := range jobs {
		if t := j.quit(); t != nil {
			reclaimers = append(reclaimers, t)
		}
	}
	// The runs in flight finish until ctx is done.
	graceful := true
	for _, j := range jobs {
		if j.wait(ctx) != nil {
			graceful = false
			break
		}
	}
	after := ctx
	if !graceful {
		// Cut short: those left are released as they return, for at most
		// a lease more (their leases are renewed meanwhile), or
		// shutdownWait on a store without a lease.
		wait := shutdownWait
		for _, j := range jobs {
			j.cancelFlights(errShutdown)
			if ls := j.cfg.lease; ls != nil {
				wait = max(wait, ls.Lease())
			}
		}
		var cancel context.CancelFunc
		after, cancel = context.WithTimeout(context.Background(), wait)
		defer cancel()
	}
	var errs []error
	if !graceful {
		errs = append(errs, ctx.Err())
	}
	for _, t := range reclaimers {
		if err := t.Stop(after); err != nil && after.Err() == nil {
			errs = append(errs, err)
		}
	}
	stopped := false // after's end is reported once
	for _, j := range jobs {
		if err := j.Stop(after); err != nil && !stopped {
			errs = append(errs, err)
			stopped = after.Err() != nil
		}
	}
	return errors.Join(errs...)
}

// shutdownWait bounds how long Shutdown waits, once its context is done,
// for the runs it cancelled to return, on a store without a lease: their
// Funcs run in this process, and a Func deaf to its context would hold
// Shutdown for good.
const shutdownWait = time.Second

// quit is what Shutdown does at once: the job is stopped, so that no slot
// falls due and no claim is taken over any more, the runs that have not
// started are dropped, and those waiting for the job's runs on other nodes
// to end stop waiting; the runs in flight go on. It returns the Trigger of
// the job's reclaimer, if the job was its last, for Shutdown to wait for.
func (j *Job) quit() *circulation.Trigger {
	var obs []Record
	j.mu.Lock()
	j.state = jobStopped
	j.flags |= jobShutdown
	j.next = time.Time{}
	j.setTimerLocked(time.Time{})
	j.forgetPauseLocked(false)
	if x := j.x; x != nil {
		obs = j.dropQueueLocked(errStopped)
		obs = append(obs, j.dropWaitingLocked(errStopped)...)
		x.stopWaitingLocked(errStopped)
		j.fillWakeLocked()
	}
	j.tellLocked(obs)
	j.mu.Unlock()
	j.w.sync(j)
	j.told(obs)
	return j.delist()
}

// cancelFlights cancels the context of every run in flight with cause.
func (j *Job) cancelFlights(cause error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if x := j.x; x != nil {
		for _, f := range x.runs {
			f.cancel(cause)
		}
	}
}

// stopWaitingLocked cancels, with why, the runs that wait for the job's
// runs in flight on other nodes to end: they have not claimed their slots,
// and are dropped as queued runs are. The caller holds the job's lock.
func (x *active) stopWaitingLocked(why error) {
	for i := range x.runs {
		if f := &x.runs[i]; f.waiting {
			f.waiting = false
			f.cancel(why)
		}
	}
}

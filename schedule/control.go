package schedule

import (
	"context"
	"errors"
	"time"

	"github.com/circulation-go/circulation"
)

// Pause stops the job's slots from falling due until Resume: slots during
// a pause are neither run nor missed. Runs in flight go on, but a retry
// waiting for its pause (WithRetry) does not start: its slot keeps the
// outcome of its last attempt. Runs waiting to follow them
// (OverlapBufferOne, OverlapReplace, catch-ups), and the slot due at the
// moment of Pause if its run has not started, are Skipped. A paused job's
// RunNow is Skipped. Pause before Start makes the job start paused.
func (j *Job) Pause() {
	var obs []Record
	j.mu.Lock()
	if !j.paused() && j.state != jobStopped {
		obs = j.handDueLocked(time.Now().Round(0))
		j.flags |= jobPaused
		j.next = time.Time{}
		j.setTimerLocked(time.Time{})
		obs = append(obs, j.dropQueueLocked(errPaused)...)
		if x := j.x; x != nil {
			x.endRetriesLocked(errPaused)
		}
	}
	j.mu.Unlock()
	j.resync()
	j.observe(obs)
}

// Resume ends a pause: the job's next slot is the first strictly after
// now, which Next reports once Resume returns.
func (j *Job) Resume() {
	j.mu.Lock()
	if !j.paused() {
		j.mu.Unlock()
		return
	}
	j.flags &^= jobPaused
	var refused any
	if j.state == jobStarted {
		now := time.Now().Round(0)
		j.noCatchUpBeforeLocked(now)
		refused = j.armLocked(now)
	}
	j.mu.Unlock()
	j.resync()
	if refused != nil {
		panic(refused)
	}
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
// SetSchedule panics if s is nil.
func (j *Job) SetSchedule(s Schedule) {
	if s == nil {
		panic("schedule: SetSchedule with a nil Schedule")
	}
	var obs []Record
	var refused any
	j.mu.Lock()
	if j.state == jobStarted && !j.paused() {
		now := time.Now().Round(0)
		obs = j.handDueLocked(now)
		j.sched = s
		j.noCatchUpBeforeLocked(now)
		refused = j.armLocked(now)
	} else {
		j.sched = s
	}
	j.mu.Unlock()
	j.resync()
	j.observe(obs)
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
		obs = j.handDueLocked(now) // a slot due now goes first, with its own Due
		x := j.active(now)
		due := now
		if !due.After(x.handed) {
			due = x.handed.Add(1)
		}
		x.handed = due
		r := Run{Job: j.name, Due: due, Reason: Manual}
		if j.paused() {
			obs = append(obs, j.record(r, Skipped, errPaused))
		} else {
			obs = j.submitLocked([]pending{{run: r}}, obs)
		}
	}
	j.mu.Unlock()
	j.observe(obs)
}

// Stop ends the job: no slot falls due any more, the context of every run
// in flight is cancelled (their Records are Canceled; a retry waiting for
// its pause, WithRetry, does not start, and its slot keeps the outcome of
// its last attempt), and Stop waits until they have returned and nothing
// of the job's is pending, including a Renew of a LeaseStore that hangs,
// deaf to its context, after its run gave the lease up. It returns nil
// then, or ctx.Err() if ctx is done first. Stop on a job that was never
// started, that was stopped before, or whose schedule has ended, returns
// nil once nothing of the job's runs. Stop must not be called from the
// Func or the Observer with a context that outlives them: it would wait
// for itself. (The Func's own context is cancelled by Stop, so Stop(ctx)
// with it returns at once.)
func (j *Job) Stop(ctx context.Context) error {
	var obs []Record
	j.mu.Lock()
	j.state = jobStopped
	j.next = time.Time{}
	j.setTimerLocked(time.Time{})
	x := j.x
	if x != nil {
		obs = j.dropQueueLocked(errStopped)
		obs = append(obs, j.dropWaitingLocked(errStopped)...)
	}
	j.mu.Unlock()
	j.w.sync(j)
	// The records of the runs that will not run reach the Observer before
	// the runs in flight are cancelled, and so before their own records.
	j.observe(obs)
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

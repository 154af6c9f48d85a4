package schedule

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/circulation-go/circulation"
)

// Func runs one slot of a job. Its context is cancelled when the job is
// stopped (Stop, Shutdown, Cancel), when the run is replaced
// (OverlapReplace, ErrReplaced, here or on another node), when it times
// out (WithTimeout), and on a SharedStore when its lease is lost
// (ErrLeaseLost) or could not be renewed for a full Lease()
// (ErrLeaseNotRenewed); context.Cause says which. A nil error makes the
// run Succeeded, an error or a panic Failed; a run that a stopping job cut
// short is Released on a SharedStore (see Stop), unless its Func returned
// nil. A Func that calls runtime.Goexit leaves its run without an outcome:
// its record stays Running, and on a SharedStore with a lease its lease is
// no longer renewed, so that a replica takes the slot over once it
// expires; on a SharedStore without one, whose claims never expire, the
// run is Failed.
type Func func(ctx context.Context, r Run) error

// A Run is one execution of a job, identified by (Job, Due).
type Run struct {
	Job    string
	Due    time.Time // the slot: the time the Schedule gave, or the time of RunNow
	Reason Reason
	// Attempt is the run's Record.Attempt: 1 for a slot the job claimed,
	// one more for each retry of it (WithRetry), and for a Recovered run,
	// whose slot a LeaseStore handed over from another node, the claim's.
	// (Job, Due, Attempt) names this attempt alone: a Func can pass it with
	// its side effects so that those of an earlier attempt, still running
	// on a node that lost its lease, are refused (fencing).
	Attempt int
}

// A Job runs a Func at the times of a Schedule, at most once per slot
// across every Job of the same name sharing its Store.
//
// A Job must be created with NewJob; the zero value is not usable. Its
// methods are safe for concurrent use, including from the Func and from the
// Observer. A Job starts once: after Stop, make a new one.
type Job struct {
	mu    sync.Mutex
	state uint8  // jobNew, jobStarting, jobStarted or jobStopped
	flags uint8  // jobPaused, jobBusy, jobDirty, jobListed
	idx   int32  // jobListed: the job's index in w.jobs, plus one; guarded by w.mu
	gen   uint64 // the arming of timer: a callback of another one does nothing
	name  string
	f     Func
	cfg   *config // shared with the jobs of equal options (see config)
	w     *watch  // the Scheduler of the job's timer, and its watch
	sched Schedule
	next  time.Time         // the next slot; zero if none, or not started, stopped or paused
	timer circulation.Timer // the job's clock, armed for next; nil if not armed, or its callback started
	x     *active           // nil until the job first needs it (a run, a store error, a lease)
}

const (
	jobNew      uint8 = iota
	jobStarting       // Start is reading the store
	jobStarted
	jobStopped
)

// Job.flags
const (
	jobPaused   uint8 = 1 << iota
	jobBusy           // the callback of the job's timer has started, or will (its Stop reported false)
	jobDirty          // the job changed while jobBusy: the callback arms the timer again as it ends
	jobListed         // in w.jobs
	jobCancel         // ended by Cancel: the runs it cuts short are Canceled, not handed over
	jobShutdown       // ended by Shutdown: a run that fails with attempts left is handed over
)

// NewJob returns a Job that runs f, as name, at the times of s. It does
// nothing until Start. NewJob panics if name is empty, or s or f is nil.
func NewJob(name string, s Schedule, f Func, opts ...Option) *Job {
	switch {
	case name == "":
		panic("schedule: NewJob with an empty name")
	case s == nil:
		panic("schedule: NewJob with a nil Schedule")
	case f == nil:
		panic("schedule: NewJob with a nil Func")
	}
	if len(opts) == 1 {
		if p, ok := opts[0].(preset); ok {
			return &Job{name: name, f: f, sched: s, cfg: p.shared(), w: watchFor(p.c.sched)}
		}
	}
	c := *defaultConfig
	for _, o := range opts {
		o.apply(&c)
	}
	c.limitFromStore()
	j := &Job{name: name, f: f, sched: s, cfg: defaultConfig, w: watchFor(c.sched)}
	if !c.isDefault() {
		j.cfg = share(&c)
	}
	return j
}

// Name returns the job's name.
func (j *Job) Name() string { return j.name }

// armLocked sets the job's next slot, the first after now, and arms its
// timer for it, or disarms it if there is none. It returns what the
// Scheduler panicked with, if it refused the timer (see setTimerLocked).
func (j *Job) armLocked(now time.Time) (refused any) {
	j.next = next(j.sched, now)
	return j.setTimerLocked(now)
}

// armedLocked reports whether the job's timer should be armed: the job is
// started, not paused, and has a next slot.
func (j *Job) armedLocked() bool {
	return j.state == jobStarted && j.flags&jobPaused == 0 && !j.next.IsZero()
}

func (j *Job) paused() bool { return j.flags&jobPaused != 0 }

// setTimerLocked arms the job's timer for its next slot, by the wall
// clock at now (for the end of its hand-off once it is due, if another
// node owns it: wakeAtLocked), if armedLocked, and disarms it otherwise.
// The latest call wins. A timer whose callback has started (or, its Stop
// reporting false, will start) is not replaced: that callback arms the
// timer as it ends, so that the job never has two.
//
// Each arming has its own gen, and a callback that is not the current
// arming's, or comes a second time, does nothing: a Scheduler that calls
// back twice, late, or after a Stop that reported true never makes the
// job wake twice for one arming.
//
// A Scheduler whose AfterFunc panics (a stopped wheel.Wheel) arms
// nothing: the job is left with no next slot, as if its schedule had
// ended, and setTimerLocked returns the panic's value, for the caller of
// Start, Resume or SetSchedule to receive once it has let go of the job.
func (j *Job) setTimerLocked(now time.Time) (refused any) {
	if j.flags&jobBusy != 0 {
		j.flags |= jobDirty
		return nil
	}
	if t := j.timer; t != nil {
		j.timer = nil
		if !t.Stop() && testMutant != mutantArmOverBusy {
			j.flags |= jobBusy | jobDirty // its callback is the current arming's
			return nil
		}
		j.gen++
	}
	if j.armedLocked() {
		d := max(j.wakeAtLocked(now).Sub(now), 0) // before the recover: a Sharer's panic is not the Scheduler's refusal
		j.gen++
		gen := j.gen
		defer func() {
			if refused = recover(); refused != nil {
				j.next = time.Time{}
			}
		}()
		j.timer = j.w.sched.AfterFunc(d, func() { j.wake(gen) })
	}
	return nil
}

// rearm arms the job's timer again for its next slot by the wall clock
// now: the job's watch calls it when the wall clock jumped.
func (j *Job) rearm() {
	j.mu.Lock()
	_ = j.setTimerLocked(time.Now().Round(0)) // no caller to tell: the job rests
	j.mu.Unlock()
}

// resync updates the job's place in its watch if it changed. The caller
// must not hold j.mu.
func (j *Job) resync() {
	j.mu.Lock()
	changed := j.armedLocked() != (j.flags&jobListed != 0)
	j.mu.Unlock()
	if changed {
		j.w.sync(j)
	}
}

// Next returns the due time of the job's next slot, or the zero Time if
// there is none: before Start, after Stop, while paused, and once the
// Schedule has no time left. With WithJitter, the slot starts at
// Planned(Next()). On a Sharer whose slot another node owns, Next is the
// slot being handed off until its hand-off is over (see Sharer).
func (j *Job) Next() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.next
}

// ErrPaused is the error of the runs a paused job does not start, and of
// a Backfill of a paused job.
var ErrPaused = errors.New("schedule: job paused")

var (
	errStopped  = errors.New("schedule: job stopped")
	errShutdown = errors.New("schedule: job shut down")
	errOverlap  = errors.New("schedule: a run is in flight")
	errFull     = errors.New("schedule: a run is in flight, and the buffer is full (OverlapBufferAll, WithBufferLimit)")
)

// wake is the callback of the job's timer: it wakes at each slot, hands
// the slots that fell due to runners, and arms the timer for the next. It
// never runs the job's Func itself. A wake before the next slot (the timer
// was replaced after its callback started, or the wall clock was set back)
// only arms the timer again, and so does a wake during the hand-off of a
// slot another node owns (deferredLocked), for the end of it.
func (j *Job) wake(gen uint64) {
	now := time.Now().Round(0)
	j.mu.Lock()
	if gen != j.gen && testMutant != mutantNoGeneration {
		j.mu.Unlock()
		return
	}
	j.gen++ // a second call of this callback does nothing
	j.timer = nil
	var obs []Record
	if !j.deferredLocked(now) {
		obs = j.handDueLocked(now, false)
	} else if testMutant == mutantDeferNoArm {
		j.mu.Unlock()
		return
	}
	if len(obs) > 0 {
		// The Observer may call the job: it runs without the lock, and
		// the job is busy meanwhile, its timer left to this callback.
		j.flags |= jobBusy
		j.mu.Unlock()
		j.observe(obs)
		j.mu.Lock()
		now = time.Now().Round(0)
	}
	// Busy now or not, the timer is this callback's to arm: a change that
	// could not stop it while it ran left it so.
	j.flags &^= jobBusy | jobDirty
	_ = j.setTimerLocked(now) // no caller to tell: the job rests
	j.quietLocked()
	changed := j.armedLocked() != (j.flags&jobListed != 0)
	j.mu.Unlock()
	if changed {
		j.w.sync(j)
	}
}

// handDueLocked does what wake does when the job's next slot has fallen
// due by now: it hands the slots due to runners and moves the next slot
// past now. It returns the records of the slots that do not run. Pause,
// SetSchedule and RunNow call it first, so that a slot due whose wake has
// not run yet is neither dropped nor run after them. The caller re-arms
// the timer if need be; a timer still armed for the slot just finds an
// early wake. The timer's wake (early false) waits for a slot's planned
// start (WithJitter); the others (early true) hand a slot whose due time
// has passed at once, before it, so that none is lost or runs after a
// newer run.
func (j *Job) handDueLocked(now time.Time, early bool) []Record {
	if j.state != jobStarted || j.paused() || j.next.IsZero() || now.Before(j.next) {
		return nil
	}
	if !early && now.Before(j.plannedLocked(j.sched, j.next)) {
		return nil // a wake before the slot's jittered start: the timer is armed for it
	}
	obs := j.dueLocked(j.sched, j.next, now)
	j.next = next(j.sched, now)
	return obs
}

// observe passes each record of a slot that did not run to the Trace's
// NotRun and to the Observer, if any, after writing the Missed ones to the
// store (note). None of them was claimed. The caller must not hold j.mu:
// the Observer may call the job's methods.
func (j *Job) observe(rs []Record) {
	j.note(rs)
	j.logMissed(rs)
	for _, r := range rs {
		if t := j.cfg.trace; t != nil && t.NotRun != nil {
			t.NotRun(r)
		}
		if f := j.cfg.observer; f != nil {
			f(r)
		}
	}
}

// tellLocked notes that the caller, a method of the job, will pass obs to
// the Observer once it has released j.mu, which it does with told: Stop
// waits for it (quiet), so that no record of the job reaches the Observer
// once Stop returned, whatever called the job meanwhile. The caller holds
// j.mu.
func (j *Job) tellLocked(obs []Record) {
	if len(obs) > 0 {
		j.active(time.Now().Round(0)).telling++
	}
}

// told passes obs to the Observer, noted by tellLocked, and wakes a Stop
// waiting for it, even if the Observer panics.
func (j *Job) told(obs []Record) {
	if len(obs) == 0 {
		return
	}
	defer func() {
		j.mu.Lock()
		j.x.telling--
		j.quietLocked()
		j.mu.Unlock()
	}()
	j.observe(obs)
}

// record returns the Record of a slot that did not run.
func (j *Job) record(r Run, s Status, why error) Record {
	rec := Record{Job: r.Job, Due: r.Due, Reason: r.Reason, Status: s, Node: j.cfg.nodeName()}
	if why != nil {
		rec.Err = why.Error()
	}
	return rec
}

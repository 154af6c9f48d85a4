package schedule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/circulation-go/circulation"
)

// Func runs one slot of a job. Its context is cancelled when the job is
// stopped, when the run is replaced (OverlapReplace), when it times out
// (WithTimeout), and on a LeaseStore when its lease is lost
// (ErrLeaseLost) or could not be renewed for a full Lease()
// (ErrLeaseNotRenewed); context.Cause says which. A nil error makes the
// run Succeeded, an error or a panic Failed. A Func that calls
// runtime.Goexit leaves its run without an outcome: its record stays
// Running, and on a LeaseStore its lease is no longer renewed, so that a
// replica takes the slot over once it expires.
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
	cfg   *config // shared defaultConfig unless options say otherwise
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
	jobPaused uint8 = 1 << iota
	jobBusy         // the callback of the job's timer has started, or will (its Stop reported false)
	jobDirty        // the job changed while jobBusy: the callback arms the timer again as it ends
	jobListed       // in w.jobs
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
		j.cfg = &c
	}
	return j
}

// Name returns the job's name.
func (j *Job) Name() string { return j.name }

// ErrStarted is returned by Start on a Job started before.
var ErrStarted = errors.New("schedule: job already started")

// ErrStopped is returned by Start on a Job that Stop was called on, before
// Start or while Start read the store. The job never runs.
var ErrStopped = errors.New("schedule: job stopped")

// Start reads the job's last record from its store, applies the Misfire
// policy to the slots that passed since, and arms the job for its first
// slot strictly after now, which Next reports once Start returns. Catch-up
// runs start at once, on their own goroutines. A job with no record owes
// the slots since it has been scheduled (WithSince, or its first Start on
// a SinceStore), and none otherwise. The slots the Misfire policy leaves
// Missed are written to the store (see NoteStore) and reach the Observer.
//
// A store that fails here does not prevent the start: the job treats it as
// an outage and applies the Misfire policy at its first slot whose claim
// succeeds. Start returns ErrStarted if the job was started before, or
// another Start is under way; ErrStopped if Stop was called before Start
// returned; ctx.Err() if ctx is done before it reads the store (the job
// can then be started again); and the store's error if it cannot hold the
// job's name (see JobChecker).
func (j *Job) Start(ctx context.Context) error {
	return j.start(ctx, nil)
}

// lastRead is what a read of a job's last record found: the record, or
// ErrNoRecord, or the store's error.
type lastRead struct {
	rec Record
	err error
	// Of a job with no record on a SinceStore: the store's answer to
	// SinceOf, if sinceRead; zero if it failed.
	since     time.Time
	sinceRead bool
}

// start is Start, with the job's last record read already if read is not
// nil (StartAll).
func (j *Job) start(ctx context.Context, read *lastRead) error {
	j.mu.Lock()
	switch j.state {
	case jobNew:
		j.state = jobStarting
	case jobStopped:
		j.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrStopped, j.name)
	default:
		j.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrStarted, j.name)
	}
	j.mu.Unlock()
	abort := func(err error) error {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.state == jobStarting {
			j.state = jobNew
		}
		return err
	}
	if err := ctx.Err(); err != nil {
		return abort(err)
	}
	if c, ok := j.cfg.store.(JobChecker); ok {
		if err := c.CheckJob(j.name); err != nil {
			return abort(fmt.Errorf("schedule: job %.40q: %w", j.name, err))
		}
	}
	var last Record
	var since time.Time // of a job with no record: when it has been scheduled since
	known, outage := false, false
	if s := j.cfg.store; s != nil {
		if read == nil {
			read = &lastRead{}
			read.rec, read.err = s.Last(ctx, j.name)
		}
		r, err := read.rec, read.err
		switch {
		case err == nil:
			last, known = r, true
		case errors.Is(err, ErrNoRecord):
			since = j.sinceOf(ctx, time.Now().Round(0), read)
		case ctx.Err() != nil:
			return abort(ctx.Err())
		default:
			outage = true
		}
	}

	var obs []Record
	var refused any // the Scheduler's panic when arming the job's timer
	stopped := false
	func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.state != jobStarting {
			stopped = true // by Stop, which leaves nothing for the job to run
			return
		}
		j.state = jobStarted
		now := time.Now().Round(0)
		if outage {
			// Slots before the start may be owed: nothing is beneath
			// catching up. (A job that read its last record makes its
			// active state when it first needs it, as any other.)
			j.active(now).floor = time.Time{}
		}
		if j.paused() {
			return // a job started paused misses nothing before its start
		}
		if outage {
			// recoverStart reads the store's last record again, and gives
			// the slots missed before now what this Start would have.
			x := j.x
			r := x.rareLocked()
			r.gap, r.gapSched = now, j.sched
			r.recover = circulation.Bind(j.cfg.sched, j.recoverStart)
		}
		if known {
			if first := next(j.sched, last.Due); !first.IsZero() && !first.After(now) {
				obs = j.dueLocked(j.sched, first, now)
			}
		} else if !since.IsZero() && since.Before(now) {
			// The slots after since are owed, as if the job had run at
			// since: a Start owes none at its own instant either.
			if first := next(j.sched, since); !first.IsZero() && !first.After(now) {
				obs = j.dueLocked(j.sched, first, now)
			}
		}
		refused = j.armLocked(now)
	}()
	if stopped {
		return fmt.Errorf("%w: %q", ErrStopped, j.name)
	}
	j.w.sync(j)
	j.observe(obs)
	if j.cfg.lease != nil {
		j.enlist()
	}
	if outage {
		var t *circulation.Trigger
		j.mu.Lock()
		if r := j.x.r; r != nil { // nil if the job started paused
			t = r.recover
		}
		j.mu.Unlock()
		if t != nil {
			fireAfter(t, firstStartRetry)
		}
	}
	if refused != nil {
		panic(refused)
	}
	return nil
}

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
// clock at now, if armedLocked, and disarms it otherwise. The latest call
// wins. A timer whose callback has started (or, its Stop reporting false,
// will start) is not replaced: that callback arms the timer as it ends,
// so that the job never has two.
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
		j.gen++
		gen := j.gen
		defer func() {
			if refused = recover(); refused != nil {
				j.next = time.Time{}
			}
		}()
		j.timer = j.w.sched.AfterFunc(max(j.next.Sub(now), 0), func() { j.wake(gen) })
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
// Schedule has no time left.
func (j *Job) Next() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.next
}

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

var (
	errStopped  = errors.New("schedule: job stopped")
	errReplaced = errors.New("schedule: run replaced by a newer one (OverlapReplace)")
	errPaused   = errors.New("schedule: job paused")
	errOverlap  = errors.New("schedule: a run is in flight")
)

// wake is the callback of the job's timer: it wakes at each slot, hands
// the slots that fell due to runners, and arms the timer for the next. It
// never runs the job's Func itself. A wake before the next slot (the timer
// was replaced after its callback started, or the wall clock was set back)
// only arms the timer again.
func (j *Job) wake(gen uint64) {
	now := time.Now().Round(0)
	j.mu.Lock()
	if gen != j.gen && testMutant != mutantNoGeneration {
		j.mu.Unlock()
		return
	}
	j.gen++ // a second call of this callback does nothing
	j.timer = nil
	obs := j.handDueLocked(now)
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
// early wake.
func (j *Job) handDueLocked(now time.Time) []Record {
	if j.state != jobStarted || j.paused() || j.next.IsZero() || now.Before(j.next) {
		return nil
	}
	obs := j.dueLocked(j.sched, j.next, now)
	j.next = next(j.sched, now)
	return obs
}

// observe passes each record of a slot that did not run to the Observer,
// if any, after writing the Missed ones to the store (note). None of them
// was claimed. The caller must not hold j.mu: the
// Observer may call the job's methods.
func (j *Job) observe(rs []Record) {
	j.note(rs)
	for _, r := range rs {
		if f := j.cfg.observer; f != nil {
			f(r)
		}
	}
}

// record returns the Record of a slot that did not run.
func (j *Job) record(r Run, s Status, why error) Record {
	rec := Record{Job: r.Job, Due: r.Due, Reason: r.Reason, Status: s, Node: j.cfg.nodeName()}
	if why != nil {
		rec.Err = why.Error()
	}
	return rec
}

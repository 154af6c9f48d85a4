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
// run Succeeded, an error or a panic Failed.
type Func func(ctx context.Context, r Run) error

// A Run is one execution of a job, identified by (Job, Due).
type Run struct {
	Job    string
	Due    time.Time // the slot: the time the Schedule gave, or the time of RunNow
	Reason Reason
	// Attempt is the claim's Record.Attempt: 1 for a slot the job claimed,
	// more for a Recovered run, whose slot a LeaseStore handed over from
	// another node. (Job, Due, Attempt) names this claim alone: a Func can
	// pass it with its side effects so that those of an earlier attempt,
	// still running on a node that lost its lease, are refused (fencing).
	Attempt int
}

// A Job runs a Func at the times of a Schedule, at most once per slot
// across every Job of the same name sharing its Store.
//
// A Job must be created with NewJob; the zero value is not usable. Its
// methods are safe for concurrent use, including from the Func and from the
// Observer. A Job starts once: after Stop, make a new one.
type Job struct {
	name string
	f    Func
	t    *circulation.Trigger // the job's clock: its Func is tick
	cfg  *config              // shared defaultConfig unless options say otherwise

	mu     sync.Mutex
	state  uint8 // jobNew, jobStarting, jobStarted or jobStopped
	paused bool
	sched  Schedule
	next   time.Time // the next slot; zero if none, or not started, stopped or paused
	handed time.Time // the latest Due handed to a runner: a Manual run's Due is after it
	x      *active   // nil until the job first needs it (a run, a store error, a lease)
}

const (
	jobNew      uint8 = iota
	jobStarting       // Start is reading the store
	jobStarted
	jobStopped
)

// maxWait caps every wait of a job's timer, so that a slot that the
// monotonic clock would reach late (the machine slept, golang/go#35012) or
// early (the wall clock was set back) is noticed within maxWait.
const maxWait = time.Minute

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
	c := *defaultConfig
	for _, o := range opts {
		o.apply(&c)
	}
	j := &Job{name: name, f: f, sched: s, cfg: defaultConfig}
	if !c.isDefault() {
		j.cfg = &c
	}
	j.t = circulation.Bind(c.sched, j.tick)
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
// policy to the slots that passed since (a job with no record catches up
// nothing), and arms the job for its first slot strictly after now, which
// Next reports once Start returns. Catch-up runs start at once, on their
// own goroutines.
//
// A store that fails here does not prevent the start: the job treats it as
// an outage and applies the Misfire policy at its first slot whose claim
// succeeds. Start returns ErrStarted if the job was started before, or
// another Start is under way; ErrStopped if Stop was called before Start
// returned; and ctx.Err() if ctx is done before it reads the store (the
// job can then be started again).
func (j *Job) Start(ctx context.Context) error {
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
	var last Record
	known, outage := false, false
	if s := j.cfg.store; s != nil {
		r, err := s.Last(ctx, j.name)
		switch {
		case err == nil:
			last, known = r, true
		case errors.Is(err, ErrNoRecord):
		case ctx.Err() != nil:
			return abort(ctx.Err())
		default:
			outage = true
		}
	}

	var obs []Record
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
		if known || outage || j.cfg.lease != nil {
			x := j.active(now)
			x.outage = outage
			if known || outage {
				x.last = last.Due // zero if the store failed: recoverOutage reads it again
				x.floor = time.Time{}
			}
		}
		if j.paused {
			return
		}
		if known {
			if first := next(j.sched, last.Due); !first.IsZero() && !first.After(now) {
				obs = j.dueLocked(first, now, true)
			}
		}
		j.armLocked(now)
	}()
	if stopped {
		return fmt.Errorf("%w: %q", ErrStopped, j.name)
	}
	j.observe(obs)
	if x := j.lease(); x != nil {
		x.reclaim.Fire()
	}
	return nil
}

// armLocked sets the job's next slot, the first after now, and arms its
// Trigger for it, or suspends the Trigger if there is none.
func (j *Job) armLocked(now time.Time) {
	j.next = next(j.sched, now)
	if j.next.IsZero() {
		j.t.Suspend()
		return
	}
	j.t.FireAfter(min(j.next.Sub(now), maxWait))
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
// a pause are neither run nor missed. Runs in flight go on; runs waiting
// to follow them (OverlapBufferOne, OverlapReplace, catch-ups), and the
// slot due at the moment of Pause if its run has not started, are
// Skipped. A paused job's RunNow is Skipped. Pause before Start makes the
// job start paused.
func (j *Job) Pause() {
	var obs []Record
	j.mu.Lock()
	if !j.paused && j.state != jobStopped {
		obs = j.handDueLocked(time.Now().Round(0))
		j.paused = true
		j.next = time.Time{}
		j.t.Suspend()
		obs = append(obs, j.dropQueueLocked(errPaused)...)
	}
	j.mu.Unlock()
	j.observe(obs)
}

// Resume ends a pause: the job's next slot is the first strictly after
// now, which Next reports once Resume returns.
func (j *Job) Resume() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.paused {
		return
	}
	j.paused = false
	if j.state == jobStarted {
		now := time.Now().Round(0)
		j.noCatchUpBeforeLocked(now)
		j.armLocked(now)
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
	j.mu.Lock()
	if j.state == jobStarted && !j.paused {
		now := time.Now().Round(0)
		obs = j.handDueLocked(now)
		j.sched = s
		j.noCatchUpBeforeLocked(now)
		j.armLocked(now)
	} else {
		j.sched = s
	}
	j.mu.Unlock()
	j.observe(obs)
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
		due := now
		if !due.After(j.handed) {
			due = j.handed.Add(1)
		}
		j.handed = due
		r := Run{Job: j.name, Due: due, Reason: Manual}
		if j.paused {
			obs = append(obs, j.record(r, Skipped, errPaused))
		} else {
			obs = j.submitLocked([]pending{{run: r}}, obs)
		}
	}
	j.mu.Unlock()
	j.observe(obs)
}

// Stop ends the job: no slot falls due any more, the context of every run
// in flight is cancelled (their Records are Canceled), and Stop waits until
// they have returned and nothing of the job's is pending. It returns nil
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
	j.t.Suspend()
	x := j.x
	if x != nil {
		obs = j.dropQueueLocked(errStopped)
	}
	j.mu.Unlock()
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
	err := j.t.Stop(ctx)
	if x == nil {
		return err
	}
	if x.reclaim != nil {
		err = errors.Join(err, x.reclaim.Stop(ctx))
	}
	if err != nil {
		return err
	}
	return x.wait(ctx, j)
}

var (
	errStopped  = errors.New("schedule: job stopped")
	errReplaced = errors.New("schedule: run replaced by a newer one (OverlapReplace)")
	errPaused   = errors.New("schedule: job paused")
	errOverlap  = errors.New("schedule: a run is in flight")
)

// tick is the job's Trigger's Func: it wakes at each slot, or maxWait
// after its last wake, hands the slots that fell due to runners, and says
// when to wake next. It never runs the job's Func itself.
func (j *Job) tick(context.Context) (time.Duration, bool) {
	now := time.Now().Round(0)
	j.mu.Lock()
	if j.state != jobStarted || j.paused || j.next.IsZero() {
		j.mu.Unlock()
		return 0, false
	}
	if now.Before(j.next) { // an early wake: maxWait, or the clock was set back
		d := min(j.next.Sub(now), maxWait)
		j.mu.Unlock()
		return d, true
	}
	obs := j.handDueLocked(now)
	var d time.Duration
	if !j.next.IsZero() {
		d = min(j.next.Sub(now), maxWait)
	}
	ok := !j.next.IsZero()
	j.mu.Unlock()
	j.observe(obs)
	if x := j.lease(); x != nil && ok {
		x.reclaim.Fire()
	}
	return d, ok
}

// handDueLocked does what tick does when the job's next slot has fallen
// due by now: it hands the slots due to runners and moves the next slot
// past now. It returns the records of the slots that do not run. Pause,
// SetSchedule and RunNow call it first, so that a slot due whose tick has
// not run yet is neither dropped nor run after them. The caller re-arms
// the Trigger if need be; a Trigger still armed for the slot just finds
// an early wake.
func (j *Job) handDueLocked(now time.Time) []Record {
	if j.state != jobStarted || j.paused || j.next.IsZero() || now.Before(j.next) {
		return nil
	}
	obs := j.dueLocked(j.next, now, false)
	j.next = next(j.sched, now)
	if j.next.IsZero() && j.x != nil && j.x.reclaim != nil {
		j.x.reclaim.Suspend() // the schedule has ended: the job holds no timer
	}
	return obs
}

// lease returns the job's active state if its store is a LeaseStore.
func (j *Job) lease() *active {
	if j.cfg.lease == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.x
}

// observe passes each record of a slot that did not run to the Observer,
// if any. None of them was claimed. The caller must not hold j.mu: the
// Observer may call the job's methods.
func (j *Job) observe(rs []Record) {
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

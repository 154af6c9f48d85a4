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
	state  uint8 // jobNew, jobStarted or jobStopped
	paused bool
	sched  Schedule
	next   time.Time // the next slot; zero if none, or not started, stopped or paused
	x      *active   // nil until the job first needs it (a run, a store error, a lease)
}

const (
	jobNew uint8 = iota
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

// Start reads the job's last record from its store, applies the Misfire
// policy to the slots that passed since (a job with no record catches up
// nothing), and arms the job for its first slot strictly after now, which
// Next reports once Start returns. Catch-up runs start at once, on their
// own goroutines.
//
// A store that fails here does not prevent the start: the job treats it as
// an outage and applies the Misfire policy at its first slot whose claim
// succeeds. Start returns ErrStarted if the job was started before, and
// ctx.Err() if ctx is done before it reads the store.
func (j *Job) Start(ctx context.Context) error {
	j.mu.Lock()
	if j.state != jobNew {
		j.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrStarted, j.name)
	}
	j.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
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
			return ctx.Err()
		default:
			outage = true
		}
	}

	var obs []Record
	func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.state != jobNew {
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
// to follow them (OverlapBufferOne, OverlapReplace, catch-ups) are
// Skipped. A paused job's RunNow is Skipped. Pause before Start makes the
// job start paused.
func (j *Job) Pause() {
	var obs []Record
	j.mu.Lock()
	if !j.paused && j.state != jobStopped {
		j.paused = true
		j.next = time.Time{}
		j.t.Suspend()
		obs = j.dropQueueLocked(errPaused)
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
// strictly after now, which Next reports once SetSchedule returns. The
// latest call wins. A job whose schedule had ended runs again on s.
// SetSchedule panics if s is nil.
func (j *Job) SetSchedule(s Schedule) {
	if s == nil {
		panic("schedule: SetSchedule with a nil Schedule")
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.sched = s
	if j.state == jobStarted && !j.paused {
		now := time.Now().Round(0)
		j.noCatchUpBeforeLocked(now)
		j.armLocked(now)
	}
}

// RunNow runs the job now, with Reason Manual and Due the current time,
// under the overlap policy. It does nothing before Start or after Stop.
func (j *Job) RunNow() {
	var obs []Record
	j.mu.Lock()
	if j.state == jobStarted {
		r := Run{Job: j.name, Due: time.Now().Round(0), Reason: Manual}
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
		for _, f := range x.runs {
			f.cancel(errStopped)
		}
		obs = j.dropQueueLocked(errStopped)
	}
	j.mu.Unlock()
	j.observe(obs)
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
	var obs []Record
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
	obs = j.dueLocked(j.next, now, false)
	j.next = next(j.sched, now)
	var d time.Duration
	if !j.next.IsZero() {
		d = min(j.next.Sub(now), maxWait)
	}
	ok := !j.next.IsZero()
	if !ok && j.x != nil && j.x.reclaim != nil {
		j.x.reclaim.Suspend() // the schedule has ended: the job holds no timer
	}
	j.mu.Unlock()
	j.observe(obs)
	if x := j.lease(); x != nil && ok {
		x.reclaim.Fire()
	}
	return d, ok
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

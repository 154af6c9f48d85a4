package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxBackfill is the most slots one Backfill runs: a range that holds more
// is refused, with an error wrapping ErrBackfillTooLong, and is backfilled
// in several calls.
const MaxBackfill = 1000

var (
	// ErrBackfillTooLong is wrapped by the error of a Backfill whose
	// range holds more than MaxBackfill slots.
	ErrBackfillTooLong = errors.New("schedule: backfill range holds more than MaxBackfill slots")
	// ErrBackfilling is wrapped by the error of a Backfill of a job that
	// has one under way.
	ErrBackfilling = errors.New("schedule: a backfill of the job is under way")
)

// BackfillProgress says where a backfill stands: Job.Backfilling reports
// it while Backfill runs, and Backfill returns it where it ended.
type BackfillProgress struct {
	From, To time.Time // the range, [From, To), as Backfill was given it
	Slots    int       // the slots of the range, due before Backfill was called
	// Done counts the slots handled, oldest first: each ran (whatever its
	// outcome), or had a record already and did not run again, or was
	// Skipped by the overlap policy (a slot of OverlapReplace that fell
	// due replaced it before it started).
	Done int
	// HadRecord counts the slots of Done that had a record already: an
	// earlier run, this node's or another's; with RunAgain, those not run
	// again.
	HadRecord int
	// RanAgain counts the slots of Done that had a finished record and
	// ran again (RunAgain).
	RanAgain int
	// Running is the slot handed to the job and not ended yet, or zero.
	Running time.Time
}

// Backfill runs each slot of the job's schedule in [from, to), oldest
// first, one at a time, with Reason Backfill, and returns once the last
// has ended. Each slot is claimed in the job's Store as a Scheduled one
// is: a slot that has a record, of an earlier run or of a replica's, is
// not run again (unless RunAgain says so), and two Backfills of one range
// on replicas sharing a store run each slot once. A Store may refuse a claim older than the
// history it keeps as if the slot had a record, since it cannot tell: a
// MemoryStore once it holds its keep records, schedule/sqlstore at or
// before the newest record it pruned (its WithHistory keeps 3 by
// default). A range to backfill is one the store's history reaches.
//
// The slots are those of the job's Schedule at the call, from its first
// at or after from, up to to or the time of the call, whichever is
// earlier: later slots are the schedule's to run. A range that holds none
// returns at once. Each slot is handed to the job once the overlap policy
// would start it at once (no run of the job in flight, or under
// OverlapAllow fewer than WithMaxParallel), so that a backfill never
// skips or replaces a run, and runs beside the job's other runs only
// under OverlapAllow; a slot that falls due while a backfill's run is in
// flight meets the overlap policy as it would any run (under
// OverlapReplace it cancels it). On a SharedStore a slot waits, as under
// OverlapBufferAll, while the job's runs on other nodes are at its limit.
// Its run has the job's timeout, retries, lease and Observer; it starts at
// once, without WithJitter's delay.
//
// With RunAgain, a slot whose record is finished runs again; see RunAgain.
//
// Backfill returns the progress it made, and nil once every slot was
// handled. It returns an error, and runs no slot, if from or to is zero,
// from is after to, the range holds more than MaxBackfill slots
// (ErrBackfillTooLong), the job has no Store (or, with RunAgain, one that
// is not an AgainStore), has not started, is stopped
// (ErrStopped), is paused (ErrPaused) or has a Backfill under way
// (ErrBackfilling); after those checks, with ctx.Err() if ctx is done
// (so that a done ctx checks a range without running it). It stops, handing no further slot, and returns an
// error if the job is stopped or paused meanwhile, once the slot in flight
// was handled; if a slot's claim fails (the store's error; the slot is
// Skipped); and, at once, with ctx.Err() if ctx is done: a slot already
// handed then runs on as any run of the job. A Backfill that stopped can
// be called again with the same range: the slots that ran have records.
//
// Backfill must not be called from the job's Func or Observer: it would
// wait for itself. From the Func with its context (or one made from it)
// it returns an error at once.
func (j *Job) Backfill(ctx context.Context, from, to time.Time, opts ...BackfillOption) (BackfillProgress, error) {
	now := time.Now().Round(0) // the call: RunAgain runs again the slots whose run ended before it
	var o backfillOptions
	for _, opt := range opts {
		if opt == nil {
			panic("schedule: nil BackfillOption")
		}
		opt.apply(&o)
	}
	from, to = from.Round(0), to.Round(0)
	prog := BackfillProgress{From: from, To: to}
	switch {
	case from.IsZero():
		return prog, fmt.Errorf("schedule: Backfill of job %q: from is the zero Time", j.name)
	case to.IsZero():
		return prog, fmt.Errorf("schedule: Backfill of job %q: to is the zero Time", j.name)
	case from.After(to):
		return prog, fmt.Errorf("schedule: Backfill of job %q: from %v is after to %v", j.name, from, to)
	case j.cfg.store == nil:
		return prog, fmt.Errorf("schedule: Backfill of job %q: the job has no Store to claim its slots in", j.name)
	}
	if _, ok := j.cfg.store.(AgainStore); o.again && !ok {
		return prog, fmt.Errorf("schedule: Backfill of job %q with RunAgain: its Store, %T, is not an AgainStore: it cannot claim a slot again",
			j.name, innermost(j.cfg.store))
	}
	if p, ok := ctx.Value(runKey{}).(*Job); ok && p == j {
		return prog, fmt.Errorf("schedule: Backfill of job %q from its own run: it would wait for itself", j.name)
	}
	j.mu.Lock()
	sched := j.sched
	err := j.backfillRefusal()
	j.mu.Unlock()
	if err != nil {
		return prog, err
	}
	// The slots are read without the job's lock: a thousand calls of
	// Next would hold up its wakes.
	end := to
	if now.Before(end) {
		end = now
	}
	var slots []time.Time
	for t := from.Add(-1); ; {
		if t = next(sched, t); t.IsZero() || !t.Before(end) {
			break
		}
		if len(slots) == MaxBackfill {
			return prog, fmt.Errorf("%w: from %v to %v holds more than %d slots of job %q",
				ErrBackfillTooLong, from, to, MaxBackfill, j.name)
		}
		slots = append(slots, t)
	}
	prog.Slots = len(slots)
	if err := ctx.Err(); err != nil {
		return prog, err
	}
	f := &backfill{prog: prog, opts: o, called: now, wake: make(chan struct{}, 1)}
	j.mu.Lock()
	if err := j.backfillRefusal(); err != nil {
		j.mu.Unlock()
		return prog, err
	}
	floor := now
	if !j.next.IsZero() && j.next.Before(now) {
		floor = j.next.Add(-1) // a slot due that the job's timer has not handed yet
	}
	r := j.active(floor).rareLocked()
	r.fill = f
	j.mu.Unlock()
	defer func() {
		j.mu.Lock()
		if r := j.x.r; r != nil && r.fill == f {
			r.fill = nil
			j.x.tidyRareLocked()
		}
		j.mu.Unlock()
	}()
	for _, t := range slots {
		if err := j.hand(ctx, f, t); err != nil {
			j.mu.Lock()
			defer j.mu.Unlock()
			return f.prog, err
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return f.prog, nil
}

// backfillRefusal returns why the job refuses a Backfill now, or nil. The
// caller holds j.mu.
func (j *Job) backfillRefusal() error {
	switch {
	case j.x != nil && j.x.r != nil && j.x.r.fill != nil:
		return fmt.Errorf("%w: Backfill of job %q", ErrBackfilling, j.name)
	}
	return j.liveRefusal()
}

// liveRefusal returns why the job hands no slot of a Backfill: it has not
// started, is stopped or paused; or nil. The caller holds j.mu.
func (j *Job) liveRefusal() error {
	switch {
	case j.state == jobStopped:
		return fmt.Errorf("%w: Backfill of job %q", ErrStopped, j.name)
	case j.state != jobStarted:
		return fmt.Errorf("schedule: Backfill of job %q before Start", j.name)
	case j.paused():
		return fmt.Errorf("%w: Backfill of job %q", ErrPaused, j.name)
	}
	return nil
}

// A backfill is a Backfill under way: the job's rare.fill while it runs.
// Backfill writes it, and the job's runners and drops of runs note the end
// of its slot in it, all under the job's lock, except wake, on which they
// send without blocking and Backfill receives.
type backfill struct {
	prog   BackfillProgress
	opts   backfillOptions // as Backfill was given them; read only
	called time.Time       // when Backfill was called; read only
	had    bool            // the slot Running found a record: it did not run
	again  bool            // the slot Running had a finished record, and was claimed again (RunAgain)
	err    error           // why the slot Running did not run: its claim failed, it was dropped
	wake   chan struct{}   // one token: look at the job again
}

// hand hands the slot t to the job once it would start it at once, and
// waits until its run has ended. It returns an error if the job stopped or
// paused, the slot's claim failed, or ctx is done.
func (j *Job) hand(ctx context.Context, f *backfill, t time.Time) error {
	handed := false
	for {
		var obs []Record
		j.mu.Lock()
		x := j.x
		switch {
		case handed && f.prog.Running.IsZero():
			// The slot was handled (fillEndedLocked).
			var err error
			switch {
			case errors.Is(f.err, ErrReplaced):
				f.prog.Done++ // replaced by a newer slot before it started
			case f.err != nil:
				// Dropped by a Stop or a Pause, or its claim failed, or
				// was cut short by them.
				if err = j.liveRefusal(); err == nil {
					err = fmt.Errorf("schedule: Backfill of job %q: slot %v: %w", j.name, t, f.err)
				}
			default:
				f.prog.Done++
				if f.had {
					f.prog.HadRecord++
				}
				if f.again {
					f.prog.RanAgain++
				}
			}
			j.mu.Unlock()
			return err
		case handed:
			// The slot is in flight: a Stop or a Pause ends the backfill
			// once it has been handled, as its runner or its drop says.
		case j.state != jobStarted || j.paused():
			err := j.liveRefusal()
			j.mu.Unlock()
			return err
		case j.idleLocked(x) && !x.claiming:
			f.prog.Running, f.had, f.again, f.err = t, false, false, nil
			handed = true
			obs = j.submitLocked([]pending{{run: Run{Job: j.name, Due: t, Reason: Backfill}}}, nil)
			j.tellLocked(obs)
		}
		j.mu.Unlock()
		if len(obs) > 0 {
			j.told(obs)
			continue
		}
		select {
		case <-f.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Backfilling reports the progress of the job's Backfill under way, and
// false if it has none.
func (j *Job) Backfilling() (BackfillProgress, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if x := j.x; x != nil && x.r != nil && x.r.fill != nil {
		return x.r.fill.prog, true
	}
	return BackfillProgress{}, false
}

// fillLocked returns the job's backfill under way whose slot in flight is
// due, or nil. The caller holds j.mu.
func (j *Job) fillLocked(due time.Time) *backfill {
	if x := j.x; x != nil && x.r != nil {
		if f := x.r.fill; f != nil && f.prog.Running.Equal(due) {
			return f
		}
	}
	return nil
}

// fillEndedLocked notes that the backfill's run of the slot due has ended,
// or was dropped with why, and wakes its Backfill. A run of a Backfill
// that returned meanwhile is no one's to note. The caller holds j.mu.
func (j *Job) fillEndedLocked(due time.Time, dropped bool, why error) {
	if f := j.fillLocked(due); f != nil {
		f.prog.Running = time.Time{}
		if dropped {
			f.err = why
		}
		f.poke()
	}
}

// fillRanLocked notes that the run of p, a backfill's slot, has ended.
// The caller, a runner, holds j.mu. (A call of its own, so that the
// runner's frame, under the Func, stays small.)
//
//go:noinline
func (j *Job) fillRanLocked(p *pending) {
	j.fillEndedLocked(p.run.Due, false, nil)
}

// fillClaimed notes what the claim of the backfill's slot due found: a
// record (ErrClaimed), or an error, the store's or the cause of the end of
// the run's context ctx (a Stop, a newer slot that replaced it).
func (j *Job) fillClaimed(ctx context.Context, due time.Time, err error) {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, ErrClaimed) {
		err = cause
	}
	j.mu.Lock()
	if f := j.fillLocked(due); f != nil {
		if errors.Is(err, ErrClaimed) {
			f.had = true
		} else {
			f.err = err
		}
	}
	j.mu.Unlock()
}

// fillWakeLocked wakes the job's Backfill under way, if any, to look at
// the job again: it may have become free, or stopped or paused. The caller
// holds j.mu.
func (j *Job) fillWakeLocked() {
	if x := j.x; x != nil && x.r != nil && x.r.fill != nil {
		x.r.fill.poke()
	}
}

// poke leaves a token on f.wake, unless one is there already.
func (f *backfill) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// runKey is the key of the value that marks the contexts of a job's runs
// as the job's.
type runKey struct{}

// runParent is the parent of the contexts of a job's runs: never done,
// holding the job under runKey and no other value, so that a Backfill
// from the job's own Func knows it would wait for itself. A struct of one
// pointer, it is put in an interface without an allocation.
type runParent struct{ j *Job }

func (runParent) Deadline() (time.Time, bool) { return time.Time{}, false }
func (runParent) Done() <-chan struct{}       { return nil }
func (runParent) Err() error                  { return nil }
func (p runParent) Value(key any) any {
	if key == (runKey{}) {
		return p.j
	}
	return nil
}
func (runParent) String() string { return "schedule: a run's context" }

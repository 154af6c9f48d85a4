package circulation

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

// An EventKind says what a TriggerEvent reports.
type EventKind uint8

const (
	// RunStarted: the Func is about to be called. Due and Start are set.
	RunStarted EventKind = iota + 1

	// RunEnded: the Func has returned, panicked or called runtime.Goexit.
	// Due, Start, Duration, Next, Again, Superseded, Panicked and Panic
	// are set.
	RunEnded

	// FireCoalesced: a Fire, FireAfter or FireWithin needed no arming of
	// its own. Running says whether it joined the run in flight (one more
	// run follows it, at once) or an arming that had not started yet.
	FireCoalesced

	// ArmingSuperseded: a later call superseded an arming before it could
	// start the Func, and its timer, if it had one, was stopped; or it
	// dropped the run owed after the run in flight. Due is when it was
	// due.
	ArmingSuperseded
)

var eventKindNames = [...]string{"", "run-started", "run-ended", "fire-coalesced", "arming-superseded"}

// String returns the kind's name: "run-started", "run-ended",
// "fire-coalesced" or "arming-superseded".
func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && k != 0 {
		return eventKindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// A TriggerEvent reports something that happened to a Trigger, to the
// function given to WithObserver.
type TriggerEvent struct {
	Kind EventKind

	// Run numbers the run, from 1, as TriggerStats.Runs counted it when it
	// began. Zero for the other kinds.
	Run uint64

	// Due is when the run fell due: the time its arming asked for; for a
	// run owed after the run before it (a Fire made during that run, or an
	// arming that fell due during it), when that Fire was made or that
	// arming fell due; for a run that WithMinInterval held back, when the
	// interval allowed it; for a run that Shutdown hurried, when Shutdown
	// was called. Start - Due is the run's lateness, which includes the
	// wait for the run before it. For ArmingSuperseded, when the superseded
	// arming or owed run was due. Zero if it is not known.
	Due time.Time

	// Start is when the run began, and Duration how long the Func took,
	// until it returned or panicked.
	Start    time.Time
	Duration time.Duration

	// Next and Again are the Func's answer: (0, false) if it panicked.
	Next  time.Duration
	Again bool

	// Superseded says that, by the time of the event, a call made while
	// the run was in flight superseded its answer, or that the Trigger is
	// closed: the answer is ignored. A call made later, such as a Fire from
	// the observer itself, supersedes it too. (A FireWithin made during the
	// run lets the answer compete with its own time: then Superseded is
	// false, and the sooner of the two is kept.)
	Superseded bool

	// Panicked says that the Func panicked or called runtime.Goexit. Panic
	// is the recovered value when the Trigger has a panic handler, which
	// receives it after the event; without one, the panic goes on after the
	// event, and Panic is nil.
	Panicked bool
	Panic    any

	// Running, for FireCoalesced, says that the fire joined the run in
	// flight rather than a pending arming.
	Running bool
}

// WithObserver makes the Trigger call f with what happens to it, as it
// happens: each run's start and end, each fire that needed no arming of its
// own, and each arming superseded before it started the Func. It implies
// WithStats.
//
// A run's events come on the run's goroutine, RunStarted right before the
// Func and RunEnded right after it, before the next run can start: they
// never overlap each other, and they come in the order of the runs. The
// other events come on the goroutine of the call that caused them (a Fire,
// FireAfter, FireWithin, Suspend, Stop, Close or Shutdown, WithContext's
// context ending, a run arming its next run), or on the superseded
// arming's own timer callback when it had just begun, so f must be safe
// for concurrent use. f may call any method of the Trigger, as the Func
// may: Fire from f during RunEnded reserves one more run. But Stop, Close
// and Shutdown with a context that outlives f must not be called from f:
// the goroutine f runs on may be one they wait for. f must not panic: a
// panic in f goes on in the goroutine that called it.
//
// Without WithObserver and WithStats, a Trigger reads no clock and counts
// nothing on its Fire path.
func WithObserver(f func(TriggerEvent)) Option {
	return optionFunc(func(o *options) { o.observe, o.stats = f, true })
}

// WithStats makes the Trigger keep the counters that Stats reports and the
// due time that Next reports. It costs an atomic add on every call of
// Fire, FireAfter and FireWithin, and a read of the clock for every arming.
func WithStats() Option {
	return optionFunc(func(o *options) { o.stats = true })
}

// TriggerStats is a snapshot of a Trigger's counters. They are kept only
// with WithStats or WithObserver; without either, every counter is zero.
//
// The snapshot is taken without a lock. It is exact at one instant when no
// call changes the counters for the few nanoseconds it takes; otherwise
// each counter is exact at some instant of the call, read in an order that
// keeps Coalesced <= Fires and Panics <= Runs.
type TriggerStats struct {
	Runs       uint64 // runs of the Func begun
	Panics     uint64 // runs that panicked or called runtime.Goexit
	Fires      uint64 // calls of Fire, FireAfter and FireWithin that the Trigger took (a closed Trigger refuses them)
	Coalesced  uint64 // fires that needed no arming of their own: they joined the run in flight or a pending arming
	Superseded uint64 // armings superseded before they started the Func, and owed runs dropped
	Running    bool   // a run is in flight
}

// Stats returns a snapshot of the Trigger's counters. It takes no lock and
// never waits: it may be called from anywhere, the Func and the observer
// included.
func (t *Trigger) Stats() TriggerStats {
	o := t.obs()
	if o == nil {
		return TriggerStats{Running: t.Running()}
	}
	var st TriggerStats
	for try := 0; ; try++ {
		// Each counter only grows, so two equal collects prove that all
		// of them had these values at every instant between the two.
		a := o.collect()
		a.Running = t.Running()
		if try == 3 || a == st {
			return a
		}
		st = a
		if try > 0 {
			runtime.Gosched()
		}
	}
}

// Running reports whether a run of the Func is in flight. It takes no lock.
func (t *Trigger) Running() bool { return running(t.state.Load()) }

// Next returns the time the next run is due, or the zero Time if none is
// arranged: the Trigger is resting, or a run is in flight whose answer will
// decide. A run owed after the run in flight (a Fire made during it) is
// reported as due when that Fire was made: it starts as soon as the run in
// flight returns. It takes no lock.
//
// Next needs the due times that a Trigger records with WithStats or
// WithObserver; without them, it reports the zero Time.
func (t *Trigger) Next() time.Time {
	o := t.obs()
	if o == nil {
		return time.Time{}
	}
	var due int64
	for try := 0; try < 4; try++ {
		s := t.state.Load()
		if running(s) && reserved(s) {
			return unixNano(o.reservedAt.Load())
		}
		p := t.pending.Load()
		if p == nil {
			return time.Time{}
		}
		v, f, d := p.version.Load(), p.flags.Load(), p.due.Load()
		// The shot is not ours: read it between two equal loads of the
		// state and of the slot, so that what it says is what it was.
		if t.state.Load() != s || t.pending.Load() != p {
			continue
		}
		if v != version(s) || f&(shotClaimed|shotDead) != 0 {
			return time.Time{}
		}
		due = d
		break
	}
	return unixNano(due)
}

// unixNano is the Time of Unix nanoseconds d, or the zero Time for 0.
func unixNano(d int64) time.Time {
	if d == 0 {
		return time.Time{}
	}
	return time.Unix(0, d)
}

// An observer holds what WithStats and WithObserver keep.
type observer struct {
	f func(TriggerEvent) // nil with WithStats alone

	runs       atomic.Uint64
	panics     atomic.Uint64
	fires      atomic.Uint64
	coalesced  atomic.Uint64
	superseded atomic.Uint64

	// reservedAt is when the reservation in place, or the latest, was
	// made, in Unix nanoseconds: written by a goroutine about to reserve,
	// before its compare-and-swap, so that the running goroutine that
	// takes the reservation sees it (see Trigger.finish), and read by that
	// goroutine and by Next. A caller whose compare-and-swap fails may have
	// written it too: it was reserving the same run at the same time.
	reservedAt atomic.Int64

	// hurried is the arming that Shutdown replaced by one due now: it is
	// not counted superseded when it is killed.
	hurried atomic.Pointer[shot]
}

// collect reads the counters, each counter that another one bounds before
// the one that bounds it: a fire is counted before it is counted coalesced,
// and a run before it is counted panicked.
func (o *observer) collect() TriggerStats {
	var st TriggerStats
	st.Coalesced = o.coalesced.Load()
	st.Fires = o.fires.Load()
	st.Panics = o.panics.Load()
	st.Runs = o.runs.Load()
	st.Superseded = o.superseded.Load()
	return st
}

// obs returns the Trigger's observer, or nil.
func (t *Trigger) obs() *observer {
	if t.ext == nil {
		return nil
	}
	return t.ext.obs
}

// How a fire was taken, for observeFire.
const (
	fireArmed        = iota // it armed a timer of its own
	fireJoinedRun           // it joined the run in flight: one more run follows it
	fireJoinedArming        // it joined a pending arming that had not started
)

// observeFire counts a fire the Trigger took, how, over the state s, and
// counts a run owed after the run in flight that it dropped.
func (t *Trigger) observeFire(s uint32, how int) {
	o := t.ext.obs
	if o == nil {
		return
	}
	o.fired(how != fireArmed, how == fireJoinedRun)
	if how == fireArmed {
		o.dropped(s)
	}
}

// observeReserve records the time of a reservation about to be published,
// if the Trigger is observed.
//
//go:noinline
func (t *Trigger) observeReserve(due int64) {
	if o := t.ext.obs; o != nil {
		o.noteReserve(due)
	}
}

// fired counts a fire the Trigger took; joined says it needed no arming of
// its own, and running that it joined the run in flight. It is kept out of
// line, as noteReserve and dropped are, so that the Fire path of a Trigger
// without an observer stays as short as it was.
//
//go:noinline
func (o *observer) fired(joined, running bool) {
	o.fires.Add(1)
	if joined {
		o.coalesced.Add(1)
		if o.f != nil {
			o.f(TriggerEvent{Kind: FireCoalesced, Running: running})
		}
	}
}

// noteReserve records the time of a reservation about to be published.
//
//go:noinline
func (o *observer) noteReserve(due int64) {
	if due == 0 {
		due = time.Now().UnixNano()
	}
	o.reservedAt.Store(due)
}

// supersede counts an arming superseded before it started the Func. The
// caller holds a reference to sh.
func (o *observer) supersede(sh *shot) {
	if o.hurried.Load() == sh && o.hurried.CompareAndSwap(sh, nil) {
		return
	}
	o.counted(sh.due.Load())
}

// counted counts an arming or owed run, due at due, as superseded.
func (o *observer) counted(due int64) {
	o.superseded.Add(1)
	if o.f != nil {
		o.f(TriggerEvent{Kind: ArmingSuperseded, Due: unixNano(due)})
	}
}

// dropped counts the run owed after the run in flight, if the state s the
// caller replaced had one, as superseded: an arming whose timer fired
// during the run (see enter), or a Fire made during it.
//
//go:noinline
func (o *observer) dropped(s uint32) {
	if reserved(s) {
		o.counted(o.reservedAt.Load())
	}
}

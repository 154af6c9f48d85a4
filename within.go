package circulation

import (
	"math"
	"time"
)

// FireWithin arranges for the Func to run no later than d from now: the
// earliest time wins. A pending arming due sooner is kept, and so is a run
// reserved by a Fire; otherwise FireWithin supersedes the pending arming, as
// FireAfter(d) would. If the Func is running, its answer is not superseded
// by FireWithin: when it returns, the sooner of its own next run and d from
// the FireWithin is kept. A negative d means zero.
//
// Only FireAfter, Fire and Suspend supersede regardless of time: a
// FireWithin made after them compares with what they arranged, and one
// made before them is superseded, as any call is by a later one. So a
// write-behind cache that must flush no later than maxWait after the first
// change it has not flushed calls FireWithin(maxWait) for every change,
// from any number of goroutines, with no lock: the first change's deadline
// holds, and later changes ride on it.
//
// FireWithin reads the clock, and so, once a Trigger has had a FireWithin,
// does every arming of it, to record its due time. A pending arming made
// before the Trigger's first FireWithin has no due time recorded and is
// replaced. When calls race, an arming superseded by a FireWithin before
// the two could be compared asks again for its own time, once, as a
// FireWithin would, so the sooner is kept (if it reached the pending slot
// only after the FireWithin looked there, the FireWithin's arming takes
// its time instead, when it is sooner); such a request can win over a
// FireAfter made during the race, which then runs sooner than it asked. If
// that second arming is itself superseded before it could be compared, it
// does not ask again, and the later time may win.
func (t *Trigger) FireWithin(d time.Duration) {
	if d < 0 {
		d = 0
	}
	t.timed.Store(true)
	t.fireWithin(dueAt(d), false)
}

// dueAt is the due time of a delay d from now, in Unix nanoseconds,
// saturated rather than wrapped for the longest delays.
func dueAt(d time.Duration) int64 {
	now := time.Now().UnixNano()
	if int64(d) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(d)
}

// reassert is FireWithin for an arming that a FireWithin superseded before
// they could be compared, or for the answer of a run that only FireWithin
// calls came during: it asks again for due, unless a call other than
// FireWithin has superseded everything since.
func (t *Trigger) reassert(due int64) { t.fireWithin(due, true) }

func (t *Trigger) fireWithin(due int64, again bool) {
	for {
		s := t.state.Load()
		switch {
		case closed(s), again && !within(s):
			return
		case running(s) && reserved(s):
			t.firedWithin(again, true, true) // a run follows the one in flight at once
			return
		}
		switch t.keep(s, due) {
		case coalesced:
			t.firedWithin(again, true, false)
			return
		case retry:
			continue
		}
		if testHookKeep != nil {
			testHookKeep()
		}
		d := time.Duration(due - time.Now().UnixNano())
		if d <= 0 && running(s) {
			if o := t.obs(); o != nil {
				o.noteReserve(due)
			}
			if t.state.CompareAndSwap(s, reserve(s)) {
				t.disarm()
				t.firedWithin(again, true, true)
				return
			}
			continue
		}
		n := advanceWithin(s)
		if t.state.CompareAndSwap(s, n) {
			t.firedWithin(again, false, false)
			if od, ok := t.soonerSuperseded(s, due); ok {
				due, d = od, time.Duration(od-time.Now().UnixNano())
			}
			var f uint32
			if again {
				f = shotAgain
			}
			t.armFlags(version(n), d, f)
			return
		}
	}
}

// firedWithin counts a FireWithin the Trigger took; a reassert is not a
// call of the Trigger's user, and is not counted.
func (t *Trigger) firedWithin(again, joined, running bool) {
	if o := t.obs(); o != nil && !again {
		o.fired(joined, running)
	}
}

// keep reports whether the pending arming of the state s is due no later
// than due and has not started: then it is kept. It is coalesce with a due
// time: see there why the state is loaded again and the shot checked again
// after it. A shot whose callback has started may already have run, so it
// is not kept; nor is one with no due time recorded.
func (t *Trigger) keep(s uint32, due int64) coalescing {
	v := version(s)
	sooner := func(p *shot) bool {
		if p.version.Load() != v || p.flags.Load()&(shotClaimed|shotDead|shotTimed) != shotTimed {
			return false
		}
		return p.due.Load() <= due
	}
	p := t.pending.Load()
	if p == nil || !sooner(p) {
		return notCoalesced
	}
	if t.state.Load() != s {
		return retry
	}
	if !sooner(p) {
		return notCoalesced
	}
	return coalesced
}

// soonerSuperseded is what fireWithin does after publishing over the state s: it
// looks at the arming of s that it superseded, if that arming's timer has
// reached the pending slot since keep looked, and reports its due time if
// it is due sooner than due. The new arming then takes that time: earliest
// wins, and the arming's own call may have returned already. An arming
// whose timer had not reached the slot asks again when it does (see
// place). A claimed shot has started its callback: it is taken only if
// within(s) says that its callback has not entered yet (enter clears the
// bit), since one that has entered may have run already.
func (t *Trigger) soonerSuperseded(s uint32, due int64) (int64, bool) {
	p := t.pending.Load()
	if p == nil || p.version.Load() != version(s) {
		return 0, false
	}
	f, od := p.flags.Load(), p.due.Load()
	if f&(shotDead|shotTimed) != shotTimed || f&shotClaimed != 0 && !within(s) || od >= due {
		return 0, false
	}
	if p.version.Load() != version(s) { // recycled meanwhile: od may be another arming's
		return 0, false
	}
	return od, true
}

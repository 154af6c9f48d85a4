package schedule

import (
	"context"
	"time"

	"github.com/circulation-go/circulation"
)

// active is the part of a Job that an idle job does not need: its runs,
// what it knows of its store, and its lease machinery. Its fields are
// guarded by Job.mu, except store, which is set once when it is made.
type active struct {
	store Store    // the job's store: WithStore's, or nil
	own   *ownDues // without a store, the slots the job ran

	runs    []flight  // runs in flight, to cancel on Stop and OverlapReplace
	flights uint64    // the id of the latest flight
	queue   []pending // runs waiting for the runner (all policies but OverlapAllow)
	runners int       // goroutines running the job's Func or about to
	reports int       // runners passing the outcome of their last run to the Observer, no longer counted in runners
	telling int       // calls of the job's methods passing records to the Observer (tellLocked)
	// Under every policy but OverlapAllow, the outcomes of runs reach the
	// Observer one at a time, in the order of the tickets their runners
	// take under the lock as the runs end (turn): ticket is the next to
	// take, served the one whose outcome may go now, and served a channel
	// that a runner waiting for its turn makes, closed when served moves.
	ticket, served uint64
	turn           chan struct{}
	idle           chan struct{} // closed once no runner is left and no callback of the job's timer runs
	handed         time.Time     // the latest Due handed to a runner: a Manual run's Due is after it

	floor      time.Time // slots at or before it are never caught up: the job started, resumed or changed schedule then
	look       bool      // SharedStore: a look for claims to take over found the job busy; look again once it is free
	reclaiming bool      // SharedStore: takeOver runs
	claiming   bool      // SharedStore: takeOver waits for a Reclaim; the runs submitted meanwhile are held
	enlisted   bool      // SharedStore without a lease: the job is in its store's reclaimer, from its first claim
	// waiting are the job's runners waiting for their turn in its
	// RunLimit, and its runs the RunLimit holds for their owner: in a
	// herd, every job's, for a while. It is nil once empty, so that a job
	// that waited costs nothing more afterwards than one that did not.
	waiting []*waiting
	r       *rare // made when first needed
}

// rare is the part of a job's active state that few jobs need, made by
// rareLocked when first needed: slots owed since a claim failed, a Start's
// store outage, Renews that hung, catch-ups under way, retries waiting for
// their pause, a look for expired claims of its own, runs held while a
// claim is taken over, a Backfill under way.
type rare struct {
	missed    time.Time              // the earliest Due owed since the last catch-up (its claim failed), or zero: the catch-up starts there
	gap       time.Time              // Last failed when the job started, then: the slots before it, after the store's last record, are owed
	gapSched  Schedule               // the schedule at gap
	gapPause  time.Duration          // the latest pause of recover
	recover   *circulation.Trigger   // reads the store again after a Start whose Last failed (recoverStart)
	reclaimer *reclaimer             // a SharedStore that cannot be a map key: the job's own look for claims to take over, while started
	hung      []*circulation.Trigger // renewals of leases given up while their Renew hung: Stop waits for them
	catchUps  []time.Time            // the owed slots being caught up now
	retries   []*retryWait           // retries waiting for their pause (WithRetry): Pause ends them
	notes     []Record               // Missed records to write to the store, newest last
	held      [][]pending            // the runs submitted while a Reclaim was on its way back (claiming), as submitted
	claims    uint64                 // counts the Reclaims asked for: the one whose runs are held, while claiming
	noter     *circulation.Trigger   // writes notes (writeNotes); Stop flushes it
	pause     *pausing               // the note of the job's pause, while paused
	resumed   time.Time              // the latest Resume: WithPauseOnFailures counts no slot that ran before it
	failed    int                    // a job without a Store: its slots that Failed in a row (WithPauseOnFailures)
	fill      *backfill              // the Backfill under way
}

// rareLocked returns x.r, making it if need be. The caller holds the job's
// lock.
func (x *active) rareLocked() *rare {
	if x.r == nil {
		x.r = new(rare)
	}
	return x.r
}

// tidyRareLocked drops x.r once it holds nothing, so that a job that
// caught up, say, costs no more, afterwards, than one that did not. A rare
// whose claims counter has counted is kept for good: a Reclaim still on
// its way back carries its number, which must not match a new rare's count
// from zero. The caller holds the job's lock.
func (x *active) tidyRareLocked() {
	r := x.r
	if r == nil || !r.missed.IsZero() || !r.gap.IsZero() || r.gapSched != nil || r.gapPause != 0 ||
		r.recover != nil || r.reclaimer != nil || r.noter != nil || r.claims != 0 || len(r.hung) > 0 ||
		len(r.catchUps) > 0 || len(r.retries) > 0 || len(r.notes) > 0 || len(r.held) > 0 ||
		r.pause != nil || !r.resumed.IsZero() || r.failed != 0 || r.fill != nil {
		return
	}
	x.r = nil
}

// A flight is a run in flight.
type flight struct {
	id        uint64
	due       time.Time // its run's slot; its catch-up runs come first
	cancel    context.CancelCauseFunc
	recovered bool // a claim taken over from another node: OverlapReplace does not cancel it
	waiting   bool // not claimed yet: its job's runs in flight on other nodes are at the limit (OverlapBufferOne, OverlapBufferAll, OverlapReplace)
}

// A pending run is one a runner will start: a slot, or a claim a SharedStore
// handed over. It is small, and held by pointer past the runner's frame,
// so that a run seldom grows its goroutine's stack before the Func does.
type pending struct {
	run      Run
	claim    *handover // a claim a SharedStore handed over, or nil: the runner claims the slot
	start    time.Time // once claimed: when the run started (Record.Start)
	planned  time.Time // once claimed: Record.Planned
	buffered bool      // OverlapBufferOne: the one run that follows the run in flight
	inline   bool      // a catch-up run inside another run's: its outcome reaches the Observer at once
	handed   bool      // held for its owner (Sharer) and found unclaimed: not held again
	ended    *ended    // the outcome of the run, for the Observer, once it has ended; nil without an Observer; with a Trace, its attempt's context while in flight
}

// An ended run's outcome, which the runner passes to the Observer once the
// run no longer counts as in flight. It is made only for a job with an
// Observer, so that a pending run stays small: the runner's frame holds
// one, under the Func. A job with a Trace makes one as each attempt
// starts, to hold the context its RunStart returned until the attempt's
// outcome reaches RunEnd (finish): neither the pending run nor the
// runner's frame grows for a Trace.
type ended struct {
	status Status
	end    time.Time
	msg    string
	trace  context.Context // the attempt's, from the Trace's RunStart, until its RunEnd
}

// A handover is a claim, expired or released, that a SharedStore handed
// over to the job.
type handover struct {
	rec   Record    // as Reclaim returned it
	since time.Time // when Reclaim was called, the latest the store can have started its lease
}

// active returns j.x, making it if need be. The caller holds j.mu.
func (j *Job) active(now time.Time) *active {
	if j.x != nil {
		return j.x
	}
	x := &active{store: j.cfg.store, floor: now}
	if x.store == nil {
		x.own = new(ownDues)
	}
	j.x = x
	return x
}

package schedule

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// ErrClaimed is returned by Store.Claim when the slot (Job, Due) already has
// a record: another Job with the same name and store took it.
var ErrClaimed = errors.New("schedule: slot already claimed")

// ErrNoRecord is returned by Store.Last when a job has no record.
var ErrNoRecord = errors.New("schedule: no record")

// ErrLeaseLost is returned by a SharedStore's Renew, Finish, Release and
// Retry when the slot's claim is no longer the caller's: its lease expired
// and another node took the slot over, or another attempt holds it.
var ErrLeaseLost = errors.New("schedule: lease lost")

// ErrLeaseNotRenewed is the cause (context.Cause) of a run's context when
// its Job could not renew the run's lease for a full Lease(): the store may
// let another node take the slot over from then on.
var ErrLeaseNotRenewed = errors.New("schedule: lease could not be renewed")

// ErrBusy is returned by a SharedStore's ClaimRun and Reclaim when the job
// has as many runs in flight as its Concurrency allows, on any node.
var ErrBusy = errors.New("schedule: the job's runs in flight are at its limit")

// ErrReplaced is the cause (context.Cause) of the context of a run that a
// newer run of its job replaced (OverlapReplace), in this process or on
// another node sharing the store; a SharedStore's Renew returns it to the
// run asked to end.
var ErrReplaced = errors.New("schedule: run replaced by a newer one (OverlapReplace)")

// Status is the state of a run's Record.
type Status uint8

const (
	Running   Status = iota // claimed; the Func runs (or its node died and the lease will expire)
	Succeeded               // the Func returned nil
	Failed                  // the Func returned an error, panicked or timed out
	Canceled                // the run was cancelled: replaced, or its job ended with Cancel
	Skipped                 // the slot fell due but did not run (overlap policy, store error)
	Missed                  // the slot passed while the job was not running and the Misfire policy did not run it
	Released                // cut short by Stop or Shutdown, and handed over: a node takes the slot over and runs it again
)

var statusNames = [...]string{"Running", "Succeeded", "Failed", "Canceled", "Skipped", "Missed", "Released"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// A Record is the execution record of one run, identified by (Job, Due).
type Record struct {
	Job    string
	Due    time.Time
	Reason Reason
	Status Status
	Start  time.Time
	End    time.Time
	Node   string
	Err    string
	// Attempt counts the attempts at the slot: 1 for the first claim, one
	// more for each retry (WithRetry), each time a SharedStore hands a
	// claim over to another node, and each time a Backfill runs the slot
	// again (RunAgain). It is 0 on the records of slots that did not run
	// (Skipped, Missed).
	Attempt int
	// Planned is when the run was meant to start, if later than Due: the
	// due time of a Scheduled or CatchUp slot plus its jitter (WithJitter,
	// Job.Planned). It is zero if the run was meant to start at Due:
	// without a jitter, with a jitter of 0 for the slot, for a Manual run,
	// and on the records of slots that did not run. A Store keeps it with
	// the claim; a run taken over (Recovered) keeps its claim's.
	Planned time.Time
}

// A Store keeps the execution records of jobs. It is where two Jobs with the
// same name agree on who runs a slot: Claim succeeds for exactly one of them.
// Implementations must be safe for concurrent use.
//
// A Store that is only a Store keeps each slot once, and nothing more: the
// overlap policy holds among the runs of one Job, and a run cut short stays
// as it ended. What replicas need to act as one scheduler is a SharedStore.
type Store interface {
	// Claim records r (Status Running) before its run starts. It returns
	// ErrClaimed if (r.Job, r.Due) already has a record.
	Claim(ctx context.Context, r Record) error
	// Finish records the outcome of a claimed run.
	Finish(ctx context.Context, r Record) error
	// Last returns the record with the latest Due of job, or ErrNoRecord.
	Last(ctx context.Context, job string) (Record, error)
	// History returns up to limit records of job, newest Due first.
	History(ctx context.Context, job string, limit int) ([]Record, error)
}

// A SharedStore is a Store that keeps, for the Jobs that share it, on one
// node or many, what the docs promise of a job rather than of a process:
//
//   - each slot runs once: a claim holds a lease, renewed while its run is
//     in flight, and a claim whose node died is taken over, once its lease
//     has expired, by a node that is free (Reclaim);
//   - never more runs at once than the overlap policy allows: ClaimRun
//     counts the job's runs in flight on every node, atomically with the
//     claim (Concurrency);
//   - a run that a newer one replaces (OverlapReplace) on another node
//     learns it at its next Renew (ErrReplaced);
//   - a stopping node hands its runs over: Release ends a claim's lease at
//     once, and the slot is taken over as after a crash, without the wait;
//   - every slot's fate is recorded: the Skipped and Missed slots (Note),
//     each attempt of a retried run (Retry), and since when each job has
//     been scheduled (Since), so that a job that never ran still owes its
//     slots after a restart.
//
// (node, attempt) is a fencing token: Renew, Finish, Release and Retry
// match the claim's Node and Attempt, and refuse a caller whose claim was
// taken over or retried since, with ErrLeaseLost. A lease is counted by one
// clock for all the nodes, the store's. MemoryStore and schedule/sqlstore's
// Store are the two implementations in this repository. Implementations
// must be safe for concurrent use.
type SharedStore interface {
	Store

	// Lease returns the length of a claim's lease. A store whose claims
	// never expire, because it lives in the process of the Jobs that share
	// it (MemoryStore), returns 0: its Jobs renew nothing, and are told in
	// process what Renew would tell them.
	Lease() time.Duration

	// ClaimRun claims the slot of r, as Claim does, with a fresh lease, if
	// the job r.Job has fewer than c.Max runs in flight, or c.Max is 0. A
	// run is in flight from its claim (ClaimRun, Reclaim, Retry) until its
	// Finish or until its lease expires, and from its Release until it is
	// taken over: a run handed over comes before the slots that fall due
	// after it. The count and the claim are one atomic step, whatever other
	// nodes claim at the same time. It returns ErrClaimed if the slot has a record (that answer
	// comes first), and ErrBusy if the job has c.Max runs in flight; with
	// c.Replace, it then also asks those runs to end (Renew answers them
	// ErrReplaced), but not runs whose Reason is Recovered. It returns when
	// the claim was sent: the lease began no earlier (a store that queues
	// claims returns later than the call).
	ClaimRun(ctx context.Context, r Record, c Concurrency) (time.Time, error)

	// Renew extends the lease of r, a running record claimed by r.Node at
	// r.Attempt. It returns ErrLeaseLost if the slot is no longer r.Node's
	// at r.Attempt; and ErrReplaced, having renewed it, once a ClaimRun
	// with Concurrency.Replace asked the run to end.
	Renew(ctx context.Context, r Record) error

	// Release records r, a run of r.Node at r.Attempt cut short by its
	// node's Stop or Shutdown, as Released: its lease ends at once, and
	// Reclaim hands the slot to the next node that asks. It returns
	// ErrLeaseLost if the claim is no longer r.Node's at r.Attempt.
	Release(ctx context.Context, r Record) error

	// Reclaim takes over, for node, the oldest claim of job that is
	// Released, or Running with an expired lease: it returns that record
	// with Node set to node, Reason Recovered, Start now, Attempt
	// incremented and a fresh lease. Of several nodes reclaiming at once,
	// each claim goes to one. It takes nothing, and returns ErrBusy, if the
	// job has c.Max runs in flight with a live lease (the Released ones do
	// not count here). A Running claim with
	// an expired lease that a ClaimRun asked to end is not taken over: it
	// is recorded Canceled, its Err saying it was replaced. It returns
	// ErrNoRecord if there is nothing to take over.
	Reclaim(ctx context.Context, job, node string, c Concurrency) (Record, error)

	// Expired returns the names of up to limit jobs that have a claim to
	// take over (see Reclaim), in no particular order. The Jobs of a
	// process on a SharedStore ask it every quarter of a lease, and Reclaim
	// only for the names it returns.
	Expired(ctx context.Context, limit int) ([]string, error)

	// Retry records r, a failed attempt of a run that r.Node claimed at
	// r.Attempt, and claims the slot's next attempt, r.Attempt+1, for
	// r.Node, with a fresh lease: the record is then Running, with r's
	// Reason, Start and Err. It returns ErrLeaseLost if the slot's record
	// is no longer r.Node's running attempt r.Attempt.
	Retry(ctx context.Context, r Record) error

	// Note records each of rs, the finished record of a slot that did not
	// run (Skipped, Missed), unless its slot has a record already: of
	// several nodes noting one slot, one record stays.
	Note(ctx context.Context, rs []Record) error

	// Since records t as the time job has been scheduled since, unless an
	// earlier one is recorded, and returns the earliest recorded. A Job
	// with no record calls it at Start.
	Since(ctx context.Context, job string, t time.Time) (time.Time, error)
	// SinceOf is Since for each job of jobs, with its time, in one call: it
	// returns the earliest time recorded of each.
	SinceOf(ctx context.Context, jobs map[string]time.Time) (map[string]time.Time, error)
}

// A Sharer is a SharedStore whose nodes share the jobs rather than race
// for every slot: each job has an owner among the nodes, which claims its
// slots at once. A Job with a RunLimit on another node hands a slot that
// falls due to the owner. Its timer wakes at the slot's planned start only
// to read the owner (Owns) and arm itself again for the end of the slot's
// hand-off, a quarter of the job's grace period (WithGrace) or of the time
// to its next slot after the planned start, whichever is shorter (under
// MisfireSkip it handles the slot at once), so that a herd the owner
// claims costs this node a wake a job meanwhile, and nothing held. Then
// the RunLimit holds the slot, with no runner and no goroutine, and it is
// not a run in flight of this node's to the overlap policy (a RunNow
// starts at once); and it asks the store which of the slots held together
// are claimed (Claimed): those are the owner's, and end without a claim or
// a record; the others, while the Sharer leaves them to their owner (Owns
// false), are held up to twice as long, asked about again, and, but under
// MisfireSkip, up to half the store's lease or grace period, whichever is
// longer (and half the time to the next slot at most), while each look
// finds more of the slots of the same owner held with them claimed (a
// herd the owner is still claiming; a Sharer with a method Owner(job
// string) string, as Owns sees it, names each job's owner, else its nodes
// count as one), or, until one does, a quarter of the way there while a
// look finds 100 or more of them unclaimed (a herd the owner has not
// begun to claim). Claimed does not say who claimed, so a slot of a job
// the owner does not run, or of a dead owner whose other slots a third
// node claims, may wait that long; then they go to the job's overlap
// policy, as slots that have just fallen due, and are claimed as usual,
// or Skipped if a newer run of the job was handed meanwhile, unless it is
// under OverlapAllow. A job stopped or paused meanwhile drops them
// without a record. A catch-up (a wake made late by a busy machine) is
// handed off as well while it may still wait that long; older catch-ups,
// manual runs and takeovers are claimed at once, and so are the slots
// that fall due with them, and every slot of a job whose grace period is
// zero or that has no RunLimit. Ownership is read as the slot falls due
// and again once its hand-off is over: a node that owns the job by then
// claims it at once. The claim stays what runs each slot once: two nodes
// that both take themselves for a job's owner, or neither, for a while,
// only claim at the same time, or late. schedule/sqlstore's Store is a
// Sharer (sqlstore.Store.Owns).
type Sharer interface {
	SharedStore
	// Owns reports whether this node is to claim the slots of job at
	// once: it owns job, or the owner cannot take the slot now and this
	// node can (the owner is at its limit of runs in flight and this node
	// is not), or the store does not know. It is called with the job's
	// lock or the RunLimit's held: it must not block, nor call a Job or a
	// RunLimit.
	Owns(job string) bool
	// Claimed reports, for each of rs (a Job and a Due), whether its slot
	// has a record already: the Jobs of a RunLimit ask it for the slots
	// whose hand-off is over, together, in calls of 5,000 slots at most
	// (a job's slots that fell due together in one), each bounded by a
	// quarter of the lease (1s to 10s), all of them by half the lease or
	// 10s, whichever is longer, and claim only those it reports unclaimed;
	// if a call fails, or the time is up, they claim its slots and those
	// of the calls that would have followed it.
	Claimed(ctx context.Context, rs []Record) ([]bool, error)
}

// Concurrency is what a claim asks of the runs of its job in flight on
// every node sharing a SharedStore: at most Max of them (no limit if Max
// is 0), and with Replace, that those in flight end. A Job's overlap
// policy gives it: Max 1 under OverlapSkip, OverlapBufferOne,
// OverlapBufferAll and OverlapReplace (with Replace), WithMaxParallel's
// under OverlapAllow.
type Concurrency struct {
	Max     int
	Replace bool
}

// A JobChecker is a Store that cannot hold every job name, such as one
// that limits their length. Start calls CheckJob with the job's name, and
// refuses to start a job whose name the store cannot hold: its every claim
// would fail.
type JobChecker interface {
	Store
	// CheckJob returns an error, naming the limit, if the store cannot
	// hold the records of a job so named.
	CheckJob(name string) error
}

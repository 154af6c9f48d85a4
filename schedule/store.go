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

// ErrLeaseLost is returned by a LeaseStore's Renew and Finish when the
// record's lease expired and another node took the slot over.
var ErrLeaseLost = errors.New("schedule: lease lost")

// ErrLeaseNotRenewed is the cause (context.Cause) of a run's context when
// its Job could not renew the run's lease for a full Lease(): the store may
// let another node take the slot over from then on.
var ErrLeaseNotRenewed = errors.New("schedule: lease could not be renewed")

// Status is the state of a run's Record.
type Status uint8

const (
	Running   Status = iota // claimed; the Func runs (or its node died and the lease will expire)
	Succeeded               // the Func returned nil
	Failed                  // the Func returned an error, panicked or timed out
	Canceled                // the run was cancelled by Stop or replaced
	Skipped                 // the slot fell due but did not run (overlap policy, store error)
	Missed                  // the slot passed while the job was not running and the Misfire policy did not run it
)

var statusNames = [...]string{"Running", "Succeeded", "Failed", "Canceled", "Skipped", "Missed"}

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
	// more for each retry (WithRetry) and each time a LeaseStore hands an
	// expired claim to another node. It is 0 on the records of slots that
	// did not run (Skipped, Missed).
	Attempt int
}

// A Store keeps the execution records of jobs. It is where two Jobs with the
// same name agree on who runs a slot: Claim succeeds for exactly one of them.
// Implementations must be safe for concurrent use.
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

// A QueuedStore is a LeaseStore whose claims may wait in a queue, behind
// those of other jobs, before they reach the store, as a store that sends
// many jobs' claims in one statement does. A claim's lease then begins when
// it leaves the queue, not when Claim is called: a Job on a QueuedStore
// counts its lease, and its run's Record.Start, from then.
type QueuedStore interface {
	LeaseStore
	// ClaimQueued is Claim, and also returns when the claim left the
	// queue: its lease began no earlier.
	ClaimQueued(ctx context.Context, r Record) (time.Time, error)
}

// A LeaseStore is a Store whose claims hold a lease: a claim whose lease
// is not renewed in time, by the store's clock, expires, and another node
// may take the slot over with Reclaim. A Job on a LeaseStore renews the
// lease of each run in flight every Lease()/3, and gives the run up once
// it could not renew it for a full Lease() (ErrLeaseNotRenewed). It looks
// for expired claims of its job at each slot, every Lease(), and when a
// run ends, but only while its overlap policy would start a run at once:
// a busy Job leaves expired claims to a free replica, or to later. The
// slots that fall due while a Reclaim is on its way back wait for its
// answer, at most one Lease(), so that the claim it takes over runs at
// once.
type LeaseStore interface {
	Store
	// Lease returns the length of a lease.
	Lease() time.Duration
	// Renew extends the lease of r, a running record claimed by r.Node.
	// It returns ErrLeaseLost if the slot is no longer r.Node's.
	Renew(ctx context.Context, r Record) error
	// Reclaim takes over, for node, the oldest running record of job whose
	// lease has expired: it returns that record with Node set to node,
	// Attempt incremented and a fresh lease. It returns ErrNoRecord if
	// there is none.
	Reclaim(ctx context.Context, job, node string) (Record, error)
}

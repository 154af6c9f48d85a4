package sqlstore

import (
	"fmt"
	"log/slog"
	"time"
)

// An Option configures a Store.
type Option interface{ apply(*options) }

type options struct {
	table     string
	lease     time.Duration
	succeeded int             // Succeeded records kept per job
	failed    int             // other finished records kept per job
	retention time.Duration   // WithRetention's: finished records younger than it are kept
	retained  int             // records of each kind kept by age per job: MaxRetained but in tests
	runs      int             // WithRunLimit's
	handlers  map[string]bool // WithHandlers': the handlers a definition may name; nil for any
	node      string          // WithNode's
	race      bool            // WithSharing(false)
	log       *slog.Logger    // WithLogger's, nil for slog.Default()
	hook      func(Statement) // WithStatementHook's, nil for none
}

func defaultOptions() options {
	return options{
		table:     "schedule_runs",
		lease:     30 * time.Second,
		succeeded: 3,
		failed:    1,
		retention: DefaultRetention,
		retained:  MaxRetained,
		runs:      DefaultRunLimit,
		node:      defaultNode(),
	}
}

func (o *options) validate() error {
	if !validIdent(o.table) {
		return fmt.Errorf("sqlstore: WithTable(%q): want 1 to 48 of [a-z0-9_], not starting with a digit", o.table)
	}
	if o.lease < 100*time.Millisecond || o.lease > 24*time.Hour {
		return fmt.Errorf("sqlstore: WithLease(%v): want between 100ms and 24h", o.lease)
	}
	if o.runs < 1 {
		return fmt.Errorf("sqlstore: WithRunLimit(%d): want at least 1", o.runs)
	}
	if o.node == "" || len(o.node) > 200 {
		return fmt.Errorf("sqlstore: WithNode(%q): want 1 to 200 bytes", o.node)
	}
	if o.succeeded < 1 || o.failed < 0 {
		return fmt.Errorf("sqlstore: WithHistory(%d, %d): want succeeded >= 1 and failed >= 0", o.succeeded, o.failed)
	}
	if o.retention < 0 {
		return fmt.Errorf("sqlstore: WithRetention(%v): want at least 0", o.retention)
	}
	return nil
}

func validIdent(s string) bool {
	if len(s) == 0 || len(s) > 48 || ('0' <= s[0] && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithTable names the table of run records, "schedule_runs" by default. The
// Store also uses name_schema for its schema version, name_jobs for what
// pruning removed, name_since for since when each job is scheduled,
// name_tasks and name_tasks_version for the task definitions and their
// change marker, and the view name_readable. The name is 1 to 48 of
// [a-z0-9_], not starting with a digit.
func WithTable(name string) Option {
	return optionFunc(func(o *options) { o.table = name })
}

// WithLease sets the length of a claim's lease, 30s by default, between
// 100ms and 24h. A Job renews a lease every third of it; a slot whose node
// died is taken over between one and two leases after its last renewal.
// All the Stores on one table should use the same lease.
func WithLease(d time.Duration) Option {
	return optionFunc(func(o *options) { o.lease = d })
}

// WithHistory sets how many finished records of each job pruning keeps
// whatever their age: the newest succeeded ones with status Succeeded, and
// the newest failed ones with any other finished status (Failed, Canceled,
// Skipped, Missed). The default is 3 and 1, as for a Kubernetes CronJob;
// succeeded is at least 1. Pruning also keeps, whatever these counts say:
//   - Running records;
//   - a job's last record, the one with the latest Due, whatever its status;
//   - the newest 432 records that came after the job's latest Succeeded
//     one, which schedule.WithPauseOnFailures counts;
//   - the records younger than WithRetention's age, up to MaxRetained of
//     each kind.
//
// Pruning runs after every 16th Finish, and on Prune.
func WithHistory(succeeded, failed int) Option {
	return optionFunc(func(o *options) { o.succeeded, o.failed = succeeded, failed })
}

// DefaultRetention is the age under which pruning keeps a finished record
// by default (see WithRetention): enough to tell what ran in the last week.
const DefaultRetention = 7 * 24 * time.Hour

// MaxRetained bounds the records of a job that WithRetention keeps by age:
// the newest MaxRetained with status Succeeded, and the newest MaxRetained
// with another finished status. A job that runs every second makes 604,800
// records in 7 days; it keeps the last 10,000 successes, about 2 hours and
// 47 minutes of them.
const MaxRetained = 10_000

// WithRetention makes pruning keep every finished record of a job whose
// slot (its Due) is younger than d, even past the counts of WithHistory, up
// to MaxRetained records of each kind (Succeeded, and any other finished
// status), the newest; older records are kept as WithHistory says. d is
// DefaultRetention, 7 days, by default; WithRetention(0) keeps records by
// their counts alone. A record's age is measured by the Store's clock,
// the one a schedule.Job on it computes its slots by, at each pruning.
func WithRetention(d time.Duration) Option {
	return optionFunc(func(o *options) { o.retention = d })
}

// DefaultRunLimit is the runs in flight that the jobs on a Store share by
// default (see WithRunLimit).
const DefaultRunLimit = 4096

// WithRunLimit sets how many runs of the jobs on the Store, in this
// process, are in flight at once, DefaultRunLimit by default: the Store's
// RunLimit, which a schedule.Job on it shares unless given another with
// schedule.WithRunLimit. A run counts from its claim to its outcome's
// record; runs over the limit wait their turn, holding no goroutine. A
// herd of jobs due at once then makes at most n claims in flight, which
// the Store sends a thousand to a statement, instead of a goroutine and a
// wait for a connection each.
func WithRunLimit(n int) Option {
	return optionFunc(func(o *options) { o.runs = n })
}

// WithHandlers makes the Store's Definitions refuse a definition whose
// Handler is none of names, with a *cron.TaskError naming the field, in
// Create and Update: the names of the handlers of the service's
// cron.Tables, so that a user's typo is refused where it is typed rather
// than by every replica that loads it. Without it, any handler name is
// saved; a Table refuses one it does not have (see cron.TaskState.Refused).
func WithHandlers(names ...string) Option {
	return optionFunc(func(o *options) {
		o.handlers = make(map[string]bool, len(names))
		for _, n := range names {
			o.handlers[n] = true
		}
	})
}

// WithNode names the Store among the nodes that share the jobs on its
// table (Nodes, Owns): by default the host's name, the process id and
// random bytes, a name of its own each time. Two Stores that run jobs
// at once must not share a name: each would take the other's share for
// its own, and their jobs' slots would wait for a hand-off delay. The
// name is 1 to 200 bytes. It is not the node a schedule.Job records in
// its runs (schedule.WithNode).
func WithNode(name string) Option {
	return optionFunc(func(o *options) { o.node = name })
}

// WithSharing(false) makes the Store's jobs claim every slot at once,
// whichever node owns the job: the nodes then race for each slot, and the
// first claim to reach the database wins, as one node's batches usually
// do. By default they share the jobs (Owns). Either way each slot runs
// once; the Store still sends its heartbeat, and is listed by Nodes.
func WithSharing(on bool) Option {
	return optionFunc(func(o *options) { o.race = !on })
}

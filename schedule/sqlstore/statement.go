package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A Statement is what a Store tells the hook of WithStatementHook of one
// exchange with its database: a statement, or the few statements one
// operation sends (a transaction, a write and the read that explains its
// answer), and its answer.
type Statement struct {
	// Op names the operation, one of the names WithStatementHook lists.
	Op string
	// Calls counts the calls of the Store's methods that the statement
	// carried: above 1 for a batch of claims, finishes, renewals or
	// prunings, and for the reads and notes of many jobs at once.
	Calls int
	// Took is the time from the first statement's sending to the last
	// answer, the pauses of the retries while SQLite is busy, and of
	// Finish's and Release's while the database fails, included. A call
	// that waits for its batch does not count the wait.
	Took time.Duration
	// Err is the error of the database or its driver, or nil if the
	// database answered: a row missing, or a key that refused a row,
	// which the Store turns into an answer (schedule.ErrNoRecord,
	// schedule.ErrClaimed, schedule.ErrBusy, schedule.ErrLeaseLost,
	// ErrStale, ErrTaskExists and the like), is not an error here.
	Err error
}

// WithStatementHook makes the Store call f after each exchange with its
// database (see Statement), on the goroutine that made it: f must be
// quick, and safe for concurrent use. The operations, by Op:
//
//   - "claim", "finish", "renew", "prune": a statement of a batch of
//     claims (Claim, ClaimRun), finishes (Finish), renewals (Renew) or
//     prunings (every 16th Finish), its Calls the calls it carried;
//   - "release", "retry", "again", "reclaim": Release, Retry, ClaimAgain
//     and Reclaim, each one call;
//   - "last", "history", "since", "note", "claimed", "expired": the reads
//     of Last, LastOf, History, Claimed and Expired, and the writes of
//     Since, SinceOf and Note, a statement per thousand jobs or records;
//     "prune" too for a call of Prune;
//   - "heartbeat", "nodes": the heartbeat that each look for expired
//     claims sends, with its read of the live nodes, and Nodes;
//   - "definitions.read", "definitions.write": the reads and writes of
//     the task definitions and calendars (Definitions);
//   - "audit": a write (Audit) or read (AuditLog) of the audit log, and
//     "prune" for the pruning of its oldest entries;
//   - "count": CountRuns.
//
// The statements of New's migration, and the few that follow a claim
// whose statement failed (adopting it, or withdrawing a claim that raced
// a pruning), are not reported. Without a hook, the default, a Store
// reads no clock for it: a nil check per statement.
func WithStatementHook(f func(Statement)) Option {
	return optionFunc(func(o *options) { o.hook = f })
}

// The operations the statement hook names, beside opNames'.
const (
	hookRelease    = "release"
	hookRetry      = "retry"
	hookAgain      = "again"
	hookReclaim    = "reclaim"
	hookLast       = "last"
	hookHistory    = "history"
	hookSince      = "since"
	hookNote       = "note"
	hookClaimed    = "claimed"
	hookExpired    = "expired"
	hookPrune      = "prune"
	hookHeartbeat  = "heartbeat"
	hookNodes      = "nodes"
	hookDefsRead   = "definitions.read"
	hookDefsWrites = "definitions.write"
	hookAudit      = "audit"
	hookCount      = "count"
)

// began returns the time an exchange with the database begins, for done,
// or the zero Time if the Store has no statement hook.
func (s *Store) began() time.Time {
	if s.opts.hook == nil {
		return time.Time{}
	}
	return time.Now()
}

// done tells the statement hook, if any, of the exchange op, carrying
// calls, that began at start and ended with err.
func (s *Store) done(op string, calls int, start time.Time, err error) {
	if s.opts.hook == nil {
		return
	}
	if answered(err) {
		err = nil
	}
	s.opts.hook(Statement{Op: op, Calls: calls, Took: time.Since(start), Err: err})
}

// retryOp is retry, told to the statement hook as op, carrying calls.
func (s *Store) retryOp(ctx context.Context, op string, calls int, f func() error) error {
	start := s.began()
	err := s.retry(ctx, f)
	s.done(op, calls, start, err)
	return err
}

// answered reports whether err is an answer of the database, not a
// failure: a row missing, a key that refused a row, or what the Store
// makes of them.
func answered(err error) bool {
	if err == nil {
		return true
	}
	var te *cron.TaskError
	for _, a := range []error{sql.ErrNoRows, schedule.ErrNoRecord, schedule.ErrClaimed, schedule.ErrBusy,
		schedule.ErrLeaseLost, schedule.ErrReplaced, ErrStale, ErrTaskExists, ErrCalendarExists, ErrCalendarInUse,
		cron.ErrUnknownTask, cron.ErrUnknownCalendar, errUnchanged} {
		if errors.Is(err, a) {
			return true
		}
	}
	return errors.As(err, &te) || isUniqueViolation(err)
}

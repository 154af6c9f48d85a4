package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/circulation-go/circulation/schedule"
)

// MaxJobLen is the longest Record.Job a Store accepts, in bytes. The job
// name is half of the table's primary key, and PostgreSQL refuses an index
// entry over 2704 bytes; the same limit holds on SQLite, so that a job
// runs on either.
const MaxJobLen = 1024

// pruneEvery is how many Finish calls of a Store pass between two prunings
// of the finished job's history.
const pruneEvery = 16

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// row is a Record as the table holds it.
type row struct {
	job     string
	due     int64
	reason  int64
	status  int64
	start   sql.NullInt64
	end     sql.NullInt64
	node    string
	err     string
	attempt int64
}

func nanos(field string, t time.Time, null bool) (sql.NullInt64, error) {
	if t.IsZero() {
		if null {
			return sql.NullInt64{}, nil
		}
		return sql.NullInt64{}, fmt.Errorf("sqlstore: Record.%s is the zero Time", field)
	}
	if t.Before(minTime) || t.After(maxTime) {
		return sql.NullInt64{}, fmt.Errorf("sqlstore: Record.%s %v is out of range (years 1678 to 2262)", field, t)
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}, nil
}

// toRow checks r and converts it. A claim's Attempt below 1 counts as 1.
func toRow(r schedule.Record) (row, error) {
	if r.Job == "" {
		return row{}, errors.New("sqlstore: Record.Job is empty")
	}
	if len(r.Job) > MaxJobLen {
		return row{}, fmt.Errorf("sqlstore: Record.Job is %d bytes, want at most %d (it starts %.40q)", len(r.Job), MaxJobLen, r.Job)
	}
	if !isText(r.Job) {
		return row{}, fmt.Errorf("sqlstore: Record.Job %q is not UTF-8 text without NUL", r.Job)
	}
	if !isText(r.Node) {
		return row{}, fmt.Errorf("sqlstore: Record.Node %q is not UTF-8 text without NUL", r.Node)
	}
	if r.Status > schedule.Missed {
		return row{}, fmt.Errorf("sqlstore: Record.Status %d is unknown", r.Status)
	}
	if r.Reason > schedule.Recovered {
		return row{}, fmt.Errorf("sqlstore: Record.Reason %d is unknown", r.Reason)
	}
	due, err := nanos("Due", r.Due, false)
	if err != nil {
		return row{}, err
	}
	start, err := nanos("Start", r.Start, true)
	if err != nil {
		return row{}, err
	}
	end, err := nanos("End", r.End, true)
	if err != nil {
		return row{}, err
	}
	return row{
		job:     r.Job,
		due:     due.Int64,
		reason:  int64(r.Reason),
		status:  int64(r.Status),
		start:   start,
		end:     end,
		node:    r.Node,
		err:     toText(r.Err),
		attempt: int64(max(r.Attempt, 1)),
	}, nil
}

// CheckJob returns an error if a job of this name cannot have records: it
// is empty, longer than MaxJobLen bytes, or not UTF-8 text without NUL. A
// schedule.Job on the Store refuses to start under such a name.
func (s *Store) CheckJob(name string) error {
	_, err := toRow(schedule.Record{Job: name, Due: time.Unix(0, 0)})
	return err
}

var _ schedule.JobChecker = (*Store)(nil)

// isText reports whether s can be stored in a text column of every
// dialect: PostgreSQL refuses NUL and invalid UTF-8.
func isText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// toText makes an error message storable: invalid UTF-8 and NUL become
// U+FFFD. An outcome is never refused for the bytes of its message.
func toText(s string) string {
	if isText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func (w row) record() schedule.Record {
	r := schedule.Record{
		Job:     w.job,
		Due:     time.Unix(0, w.due),
		Reason:  schedule.Reason(w.reason),
		Status:  schedule.Status(w.status),
		Node:    w.node,
		Err:     w.err,
		Attempt: int(w.attempt),
	}
	if w.start.Valid {
		r.Start = time.Unix(0, w.start.Int64)
	}
	if w.end.Valid {
		r.End = time.Unix(0, w.end.Int64)
	}
	return r
}

type scanner interface{ Scan(dest ...any) error }

func scanRow(sc scanner) (row, error) {
	var w row
	err := sc.Scan(&w.job, &w.due, &w.reason, &w.status, &w.start, &w.end, &w.node, &w.err, &w.attempt)
	return w, err
}

func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := s.retry(ctx, func() error {
		res, err := s.execOnce(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// exists runs a query that answers one boolean.
func (s *Store) exists(ctx context.Context, query string, args ...any) (bool, error) {
	var ok bool
	err := s.retry(ctx, func() error { return s.queryRow(ctx, query, args...).Scan(&ok) })
	return ok, err
}

// Claim records r before its run starts, with a fresh lease. It returns
// schedule.ErrClaimed if the slot (r.Job, r.Due) already has a record, or
// had one that pruning removed. An Attempt below 1 is recorded as 1; Renew
// and Finish match it the same way.
//
// Claims of many jobs at once are sent together, a statement for up to
// a thousand of them (see ClaimQueued). A Claim that ctx ends while it
// waits for its statement returns ctx.Err(), and claimed nothing. Once its
// statement is sent, ctx no longer cuts it short, for up to Lease(): a
// statement cancelled mid-flight may have committed, and a claim whose
// caller believes it failed would hold its slot, not run, until its lease
// expired.
//
// A Claim that returns an error other than ErrClaimed may still have
// committed (the connection broke after the commit). The next Claim of
// that slot through the same Store adopts that claim, if it is still
// running under the same node and attempt and the Store does not hold the
// slot otherwise, rather than returning ErrClaimed: a catch-up of the slot
// runs it at once, instead of a takeover once its lease expired.
func (s *Store) Claim(ctx context.Context, r schedule.Record) error {
	_, err := s.ClaimQueued(ctx, r)
	return err
}

// ClaimQueued is Claim, and also returns when the claim's statement was
// sent: its lease began no earlier. A claim may wait behind the claims of
// other jobs when many fall due at once; a schedule.Job counts its lease
// from this time, not from its call.
func (s *Store) ClaimQueued(ctx context.Context, r schedule.Record) (time.Time, error) {
	s.mustBeMade()
	w, err := toRow(r)
	if err != nil {
		return time.Time{}, err
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	req := newRequest(opClaim, w)
	if err := s.b.do(ctx, req); err != nil {
		return time.Time{}, err
	}
	switch {
	case req.pruned && req.err != nil:
		return time.Time{}, fmt.Errorf("sqlstore: withdrawing the claim of %s at %v: %w", r.Job, r.Due, req.err)
	case req.pruned:
		return time.Time{}, schedule.ErrClaimed
	case req.err != nil:
		s.remember(w)
		return time.Time{}, fmt.Errorf("sqlstore: claiming %s at %v: %w", r.Job, r.Due, req.err)
	case !req.ok:
		// The slot has a record: maybe an unsure claim of this Store's,
		// which adopt hands over in a statement of its own.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.lease)
		defer cancel()
		since := time.Now()
		return since, s.adopt(actx, r, w)
	}
	s.hold(w)
	return req.sent, nil
}

// hold notes that s holds the claim w, alive now: an unsure claim of its
// slot is no longer adopted.
func (s *Store) hold(w row) {
	k := slotKey{w.job, w.due}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.unsure, k)
	if len(s.held) >= s.sweepAt {
		// Claims left running (a run that gave its lease up) are not
		// released: sweep those older than a lease, when the map has
		// doubled since the last sweep.
		for k, at := range s.held {
			if now.Sub(at) > s.opts.lease {
				delete(s.held, k)
			}
		}
		s.sweepAt = max(2*len(s.held), maxUnsure)
	}
	s.held[k] = now
}

// release notes that s no longer holds the claim of the slot of w: it
// finished, or its lease was lost.
func (s *Store) release(w row) {
	s.mu.Lock()
	delete(s.held, slotKey{w.job, w.due})
	s.mu.Unlock()
}

// holdsLocked reports whether s holds the slot k. The caller holds s.mu.
func (s *Store) holdsLocked(k slotKey) bool {
	at, ok := s.held[k]
	return ok && time.Since(at) <= s.opts.lease
}

// remember notes the claim w, whose statement failed, as unsure: it may
// have committed.
func (s *Store) remember(w row) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holdsLocked(slotKey{w.job, w.due}) {
		return // the slot's claim is this Store's, and alive: the failed one is not it
	}
	if len(s.unsure) >= maxUnsure {
		for k, u := range s.unsure {
			if time.Since(u.at) > s.opts.lease {
				delete(s.unsure, k)
			}
		}
		if len(s.unsure) >= maxUnsure {
			return
		}
	}
	s.unsure[slotKey{w.job, w.due}] = unsureClaim{node: w.node, attempt: w.attempt, at: time.Now()}
}

// adopt is Claim's answer when the slot of w has a record already. If an
// earlier Claim of the slot through s failed, that claim may have
// committed, and its caller, told it failed, does not run it: the slot
// would wait for the lease to expire and a takeover. If the record is that
// claim, still running with the same node and attempt, adopt hands it to
// w, with a fresh lease; otherwise the slot is another's: ErrClaimed. An
// unsure claim is adopted once, by the first Claim of its slot that finds
// the record, and never while s holds the slot: a claim of it made through
// s succeeded since, and is alive. Node names must differ between
// replicas, as for fencing.
func (s *Store) adopt(ctx context.Context, r schedule.Record, w row) error {
	k := slotKey{w.job, w.due}
	s.mu.Lock()
	u, ok := s.unsure[k]
	delete(s.unsure, k)
	held := s.holdsLocked(k)
	s.mu.Unlock()
	if !ok || u.attempt != w.attempt || held {
		return schedule.ErrClaimed
	}
	n, err := s.exec(ctx, s.q.adopt, w.job, w.due, u.node, u.attempt, w.reason, w.status, w.start, w.end, w.node, w.err,
		s.opts.lease.Microseconds())
	if err != nil {
		s.mu.Lock()
		s.unsure[k] = u // still unsure
		s.mu.Unlock()
		return fmt.Errorf("sqlstore: claiming %s at %v: %w", r.Job, r.Due, err)
	}
	if n == 0 {
		return schedule.ErrClaimed
	}
	if s.dialect == PostgreSQL {
		// The unsure claim was not checked against pruning.
		if err := s.checkPruned(ctx, r, w); err != nil {
			return err
		}
	}
	s.hold(w)
	return nil
}

// checkPruned withdraws a claim that raced a pruning of its slot, on
// PostgreSQL. The claim read the watermark in its statement's snapshot; if
// a pruning raised it and then deleted the slot's record after that
// snapshot, the insert found no conflict and succeeded. The watermark was
// raised before the delete, so a read after the insert sees it. (SQLite
// runs one writer at a time: its claim sees the latest watermark.)
func (s *Store) checkPruned(ctx context.Context, r schedule.Record, w row) error {
	var k int
	err := s.queryRow(ctx, s.q.pruned, w.job, w.due).Scan(&k)
	if err != nil {
		// The claim stands unchecked: its caller does not run it; the
		// next Claim of the slot through s adopts it, or its lease
		// expires, so the slot is not lost.
		s.remember(w)
		return fmt.Errorf("sqlstore: claiming %s at %v: %w", r.Job, r.Due, err)
	}
	if k == 0 {
		return nil
	}
	if _, err := s.exec(ctx, s.q.unclaim, w.job, w.due, w.node, w.attempt, w.status); err != nil {
		return fmt.Errorf("sqlstore: withdrawing the claim of %s at %v: %w", r.Job, r.Due, err)
	}
	return schedule.ErrClaimed
}

// Finish records the outcome of the claim of r.Node and r.Attempt: the
// Reason, Status (not Running), Start, End and Err of r. It returns
// schedule.ErrLeaseLost if the slot was taken over by another node, or
// another attempt. A Finish of a slot without a record claims it with r,
// so that a Missed or Skipped slot can be recorded in one call. Finish may
// be repeated.
//
// While the database fails, Finish tries again, for up to Lease() or until
// ctx is done: a claim left running would be taken over once its lease
// expired, and its slot run again.
func (s *Store) Finish(ctx context.Context, r schedule.Record) error {
	s.mustBeMade()
	w, err := toRow(r)
	if err != nil {
		return err
	}
	if r.Status == schedule.Running {
		// A running record without a lease would never be taken over.
		return errors.New("sqlstore: Finish with Record.Status Running")
	}
	// An outcome lost to a short outage would leave the claim running,
	// and its slot taken over and run again once the lease expired:
	// Finish keeps trying for up to a lease.
	deadline := time.Now().Add(s.opts.lease)
	pause := 20 * time.Millisecond
	for {
		err = s.finish(ctx, r, w)
		if err == nil || errors.Is(err, schedule.ErrLeaseLost) || ctx.Err() != nil || time.Now().Add(pause).After(deadline) {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		pause = min(2*pause, time.Second)
	}
	if err == nil || errors.Is(err, schedule.ErrLeaseLost) {
		s.release(w)
	}
	if err != nil {
		return err
	}
	if s.finishes.Add(1)%pruneEvery == 0 {
		// Pruning is housekeeping, done in the background, in batches
		// of jobs: the outcome is recorded, and the next pruning retries
		// what this one could not do.
		s.b.post(&request{op: opPrune, w: row{job: w.job}})
	}
	return nil
}

// settle returns a context that keeps the values of ctx but not its
// cancellation, bounded by d, for a write whose outcome the caller must
// know; or ctx.Err() if ctx is already done.
func settle(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	return c, cancel, nil
}

// finish makes one attempt at Finish.
func (s *Store) finish(ctx context.Context, r schedule.Record, w row) error {
	req := newRequest(opFinish, w)
	if err := s.b.do(ctx, req); err != nil {
		return err
	}
	if req.err != nil {
		return fmt.Errorf("sqlstore: finishing %s at %v: %w", r.Job, r.Due, req.err)
	}
	if req.ok {
		return nil
	}
	switch err := s.Claim(ctx, r); {
	case errors.Is(err, schedule.ErrClaimed):
		return schedule.ErrLeaseLost
	case err != nil:
		return err
	}
	return nil
}

// Last returns the record with the latest Due of job, or
// schedule.ErrNoRecord.
func (s *Store) Last(ctx context.Context, job string) (schedule.Record, error) {
	s.mustBeMade()
	var w row
	err := s.retry(ctx, func() error {
		var err error
		w, err = scanRow(s.queryRow(ctx, s.q.last, job))
		return err
	})
	if err == sql.ErrNoRows {
		return schedule.Record{}, schedule.ErrNoRecord
	}
	if err != nil {
		return schedule.Record{}, fmt.Errorf("sqlstore: reading the last record of %s: %w", job, err)
	}
	return w.record(), nil
}

// LastOf returns the record with the latest Due of each of jobs that has
// one, by job name, in one statement per thousand jobs: schedule.StartAll
// reads the last records of the jobs it starts with it.
func (s *Store) LastOf(ctx context.Context, jobs []string) (map[string]schedule.Record, error) {
	s.mustBeMade()
	last := make(map[string]schedule.Record, len(jobs))
	for chunk := range slices.Chunk(jobs, maxBatch) {
		var buf []byte
		buf = append(buf, '[')
		for i, j := range chunk {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, toText(j))
		}
		buf = append(buf, ']')
		err := s.retry(ctx, func() error {
			return s.query(ctx, s.bq.lastOf, func(rows *sql.Rows) error {
				w, err := scanRow(rows)
				if err != nil {
					return err
				}
				last[w.job] = w.record()
				return nil
			}, string(buf))
		})
		if err != nil {
			return nil, fmt.Errorf("sqlstore: reading the last records of %d jobs: %w", len(jobs), err)
		}
	}
	return last, nil
}

var _ schedule.LastReader = (*Store)(nil)

// History returns up to limit records of job, newest Due first. A limit of
// 0 returns none; a negative limit is an error.
func (s *Store) History(ctx context.Context, job string, limit int) ([]schedule.Record, error) {
	s.mustBeMade()
	if limit < 0 {
		return nil, fmt.Errorf("sqlstore: History limit %d is negative", limit)
	}
	if limit == 0 {
		return nil, nil
	}
	var recs []schedule.Record
	err := s.retry(ctx, func() error {
		recs = recs[:0]
		rows, err := s.queryRows(ctx, s.q.history, job, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			w, err := scanRow(rows)
			if err != nil {
				return err
			}
			recs = append(recs, w.record())
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading the history of %s: %w", job, err)
	}
	return recs, nil
}

// Prune deletes the finished records of job past the counts that
// WithHistory keeps, and returns how many it deleted. A slot whose record
// it deletes can no longer be claimed: the job's watermark, the newest Due
// it deleted, is raised before the records go. Finish calls Prune after
// every 16th Finish of the Store.
func (s *Store) Prune(ctx context.Context, job string) (int64, error) {
	s.mustBeMade()
	keepOK, keepOther := s.opts.succeeded, s.opts.failed
	var mark sql.NullInt64
	err := s.retry(ctx, func() error {
		return s.queryRow(ctx, s.q.pruneMark, job, keepOK, keepOther).Scan(&mark)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: pruning %s: %w", job, err)
	}
	if !mark.Valid {
		return 0, nil
	}
	if _, err := s.exec(ctx, s.q.pruneWater, job, mark.Int64); err != nil {
		return 0, fmt.Errorf("sqlstore: pruning %s: %w", job, err)
	}
	n, err := s.exec(ctx, s.q.pruneDel, job, keepOK, keepOther, mark.Int64)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: pruning %s: %w", job, err)
	}
	return n, nil
}

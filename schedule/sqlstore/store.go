package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
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
	planned sql.NullInt64
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
	if r.Status > schedule.Released {
		return row{}, fmt.Errorf("sqlstore: Record.Status %d is unknown", r.Status)
	}
	if r.Reason > schedule.Backfill {
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
	planned, err := nanos("Planned", r.Planned, true)
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
		planned: planned,
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
	if w.planned.Valid {
		r.Planned = time.Unix(0, w.planned.Int64)
	}
	return r
}

type scanner interface{ Scan(dest ...any) error }

func scanRow(sc scanner) (row, error) {
	var w row
	err := sc.Scan(&w.job, &w.due, &w.reason, &w.status, &w.start, &w.end, &w.node, &w.err, &w.attempt, &w.planned)
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

// isUniqueViolation reports whether err is a unique constraint's: by its
// SQLSTATE, 23505, on PostgreSQL (pgx's and lib/pq's errors have one), by
// its extended code, SQLITE_CONSTRAINT_UNIQUE or _PRIMARYKEY, on SQLite
// (modernc.org/sqlite's), by its message otherwise.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return st.SQLState() == "23505"
	}
	var c interface{ Code() int }
	if errors.As(err, &c) {
		return c.Code() == 2067 || c.Code() == 1555
	}
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "SQLSTATE 23505") ||
		strings.Contains(msg, "duplicate key value violates unique constraint")
}

package cron

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// An AuditEntry records one thing done to a task, a job or a calendar by
// an operator or a tool: a definition created, edited or deleted, a task
// paused, resumed, run or backfilled. The admin page and the command-line
// tool write them; an Auditor keeps them.
type AuditEntry struct {
	ID     int64     `json:"id"`     // set by the Auditor, increasing in the order entries were kept
	At     time.Time `json:"at"`     // when it was done; Audit sets it to the time of the call if zero
	Actor  string    `json:"actor"`  // who did it, as the service named them; empty if unknown
	Action string    `json:"action"` // what was done: "create", "edit", "delete", "pause", "resume", "run", "backfill", ...
	Kind   string    `json:"kind"`   // what it was done to: "task", "job" or "calendar"
	Name   string    `json:"name"`   // the name of the task, job or calendar
	Detail string    `json:"detail"` // in words, what changed: the fields of an edit, a pause's note, a backfill's range
}

// MaxAuditText is the most bytes an Auditor keeps of an AuditEntry's
// Actor, Action, Kind or Name; MaxAuditDetail of its Detail. Longer text
// is cut, at a rune boundary, with "…" at its end.
const (
	MaxAuditText   = 200
	MaxAuditDetail = 4000
)

// An AuditQuery selects entries of an audit log: those of the task, job
// or calendar Name if it is not empty, and of the Kind ("task", "job",
// "calendar") if it is not empty, with an ID below Before if it is not
// 0, newest first, at most Limit of them (100 if Limit is 0 or less,
// MaxAuditLimit at most).
type AuditQuery struct {
	Name   string
	Kind   string
	Before int64
	Limit  int
}

// MaxAuditLimit is the most entries one AuditLog call returns.
const MaxAuditLimit = 1000

// An Auditor keeps an audit log: schedule/sqlstore's Definitions is one,
// in the database that keeps the tasks.
type Auditor interface {
	// Audit keeps e, its text cut to MaxAuditText and MaxAuditDetail
	// bytes, with a new ID, and At set to now if it is zero.
	Audit(ctx context.Context, e AuditEntry) error
	// AuditLog returns the entries q selects, newest first.
	AuditLog(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
}

// Max returns how many entries q selects at most: its Limit, 100 if it
// is 0 or less, MaxAuditLimit if it is more.
func (q AuditQuery) Max() int {
	switch {
	case q.Limit <= 0:
		return 100
	case q.Limit > MaxAuditLimit:
		return MaxAuditLimit
	}
	return q.Limit
}

// Clip returns e with its text as an Auditor keeps it: valid UTF-8 (an
// invalid byte read as U+FFFD), without NUL (read as U+FFFD too), cut to
// MaxAuditText and MaxAuditDetail bytes; and At set to now if it is zero.
func (e AuditEntry) Clip(now time.Time) AuditEntry {
	if e.At.IsZero() {
		e.At = now
	}
	for _, s := range []*string{&e.Actor, &e.Action, &e.Kind, &e.Name, &e.Detail} {
		*s = strings.ReplaceAll(strings.ToValidUTF8(*s, "\uFFFD"), "\x00", "\uFFFD")
	}
	e.Actor = cut(e.Actor, MaxAuditText)
	e.Action = cut(e.Action, MaxAuditText)
	e.Kind = cut(e.Kind, MaxAuditText)
	e.Name = cut(e.Name, MaxAuditText)
	e.Detail = cut(e.Detail, MaxAuditDetail)
	return e
}

// cut returns s cut to at most n bytes, at a rune boundary, ending in
// "…" if it was cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	i := n - len(ellipsis)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + ellipsis
}

// TaskChanges says in words which fields of a task's definition differ
// from old to t, by their JSON names, each old → new, as the AuditEntry
// of an edit records them: `spec: "0 9 * * *" → "0 10 * * *"; jitter: 0s
// → 30s`. Created, which an edit keeps, is left out; so is a field whose
// value reads the same. It returns "no field changed" if none did.
func TaskChanges(old, t Task) string {
	ov, nv := reflect.ValueOf(old), reflect.ValueOf(t)
	var b strings.Builder
	for i := range ov.NumField() {
		f := ov.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || name == "created" {
			continue
		}
		a, z := auditValue(ov.Field(i)), auditValue(nv.Field(i))
		if a == z {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s → %s", name, a, z)
	}
	if b.Len() == 0 {
		return "no field changed"
	}
	return b.String()
}

// auditValue is a field's value as an entry's detail shows it.
func auditValue(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case string:
		return strconv.Quote(x)
	case time.Time:
		if x.IsZero() {
			return "none"
		}
		return x.UTC().Format(time.RFC3339)
	case []string:
		if len(x) == 0 {
			return "none"
		}
		return strings.Join(x, ",")
	}
	return fmt.Sprint(v.Interface())
}

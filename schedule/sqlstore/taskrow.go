package sqlstore

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/circulation-go/circulation/cron"
)

// A definition is a row of {t}_tasks: its statements, and its fields as
// the columns hold them.

// defQueries holds the statements of Definitions, for a dialect and table.
type defQueries struct {
	bump, version, notify         string
	insert, update, pause, delete string
	deleteSince, current          string
	get, list                     string
}

const taskColumns = `name, handler, business_id, spec, zone, start_at, end_at, permanent, once, paused,
	overlap, misfire, timeout, retry_attempts, retry_backoff, version, created_at, updated_at, catch_up_window,
	max_runs, jitter, pause_note, paused_until, pause_on_failures, calendars`

// The statements of Definitions, with {t} and $n as in queries.go. $1 to
// $15 are a definition's columns from name to retry_backoff, $16 to $18
// its catch_up_window, max_runs and jitter, and its pause_note,
// paused_until, pause_on_failures and calendars come after the time of
// the write ($19): $20 to $23 in an insert, $21 to $24 in an update, after
// the version it expects.
const (
	// bump counts a write in the change marker, and returns the version
	// the write makes. Every write runs it first in its transaction: on
	// PostgreSQL the writers then take the marker's row lock in turn, so
	// the marker reads N only once every write counted up to N has
	// committed.
	bumpSQL    = `UPDATE {t}_tasks_version SET version = version + 1 RETURNING version`
	versionSQL = `SELECT version FROM {t}_tasks_version`
	// notify tells the Stores that listen on the channel $1 (PostgreSQL)
	// of the version $2, once the write's transaction commits.
	notifySQL = `SELECT pg_notify($1, $2)`

	insertTaskSQL = `INSERT INTO {t}_tasks (` + taskColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 1, $19, $19, $16, $17, $18, $20, $21, $22, $23)
ON CONFLICT (name) DO NOTHING`
	updateTaskSQL = `UPDATE {t}_tasks SET handler = $2, business_id = $3, spec = $4, zone = $5, start_at = $6,
	end_at = $7, permanent = $8, once = $9, paused = $10, overlap = $11, misfire = $12, timeout = $13,
	retry_attempts = $14, retry_backoff = $15, catch_up_window = $16, max_runs = $17, jitter = $18,
	pause_note = $21, paused_until = $22, pause_on_failures = $23, calendars = $24, version = version + 1, updated_at = $19
WHERE name = $1 AND version = $20
RETURNING version`
	pauseTaskSQL = `UPDATE {t}_tasks SET paused = $2, pause_note = $4, paused_until = $5, version = version + 1, updated_at = $3
WHERE name = $1 AND (paused <> $2 OR pause_note <> $4 OR paused_until IS DISTINCT FROM $5)`
	deleteTaskSQL  = `DELETE FROM {t}_tasks WHERE name = $1 AND version = $2`
	deleteSinceSQL = `DELETE FROM {t}_since WHERE job = $1`
	currentTaskSQL = `SELECT version FROM {t}_tasks WHERE name = $1`
	getTaskSQL     = `SELECT ` + taskColumns + ` FROM {t}_tasks WHERE name = $1`
	listTasksSQL   = `SELECT ` + taskColumns + ` FROM {t}_tasks`
)

// args checks t and returns its columns, name to retry_backoff and
// catch_up_window to jitter, as the statements take them.
func (d *Definitions) args(t cron.Task) ([]any, error) {
	d.s.mustBeMade()
	if err := t.Validate(); err != nil {
		return nil, err
	}
	fail := func(field string, err error) ([]any, error) {
		return nil, &cron.TaskError{Task: t.Name, Field: field, Err: err}
	}
	if err := d.s.CheckJob(t.Name); err != nil {
		return fail("name", err)
	}
	if hs := d.s.opts.handlers; hs != nil && !hs[t.Handler] {
		h := t.Handler
		if len(h) > 64 {
			h = strings.ToValidUTF8(h[:64], "") + "..."
		}
		return fail("handler", fmt.Errorf("no handler %q", h))
	}
	for _, f := range [...]struct{ field, v string }{
		{"handler", t.Handler}, {"businessId", t.BusinessID}, {"spec", t.Spec}, {"zone", t.Zone},
		{"overlap", t.Overlap}, {"misfire", t.Misfire},
	} {
		if !isText(f.v) {
			return fail(f.field, errors.New("not UTF-8 text without NUL"))
		}
	}
	for _, f := range [...]struct {
		field string
		v     time.Time
	}{{"start", t.Start}, {"end", t.End}} {
		if y := f.v.UTC().Year(); !f.v.IsZero() && (y < 1 || y > 9999) {
			return fail(f.field, fmt.Errorf("year %d out of range (1 to 9999)", y))
		}
	}
	if t.Retry.Attempts > math.MaxInt32 || t.Retry.Attempts < math.MinInt32 {
		return fail("retry", fmt.Errorf("%d attempts out of range", t.Retry.Attempts))
	}
	return d.columns(t), nil
}

// columns returns the columns of t, a definition args checked or one read
// back, name to retry_backoff and catch_up_window to jitter, as the
// statements take them.
func (d *Definitions) columns(t cron.Task) []any {
	return []any{t.Name, t.Handler, t.BusinessID, t.Spec, t.Zone, d.nullTimeArg(t.Start), d.nullTimeArg(t.End),
		t.Permanent, t.Once, t.Paused, t.Overlap, t.Misfire, t.Timeout.String(), t.Retry.Attempts,
		t.Retry.Backoff.String(), t.CatchUpWindow.String(), int64(t.MaxRuns), t.Jitter.String()}
}

// pauseArgs returns the columns pause_note, paused_until and
// pause_on_failures of t.
// A task that is not paused has neither.
func (d *Definitions) pauseArgs(t cron.Task) []any {
	if !t.Paused {
		t.PauseNote, t.PausedUntil = "", time.Time{}
	}
	return []any{t.PauseNote, d.nullTimeArg(t.PausedUntil), t.PauseOnFailures}
}

// timeArg is t as a parameter of a time column: a time.Time in UTC on
// PostgreSQL, RFC 3339 text on SQLite; to the microsecond.
func (d *Definitions) timeArg(t time.Time) any {
	t = t.UTC().Truncate(time.Microsecond)
	if d.s.dialect == SQLite {
		return t.Format(sqliteTime)
	}
	return t
}

// nullTimeArg is timeArg, with NULL for the zero Time.
func (d *Definitions) nullTimeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return d.timeArg(t)
}

// sqliteTime is the layout of times in SQLite's text columns: UTC, to the
// microsecond, of fixed width, so that they sort as text.
const sqliteTime = "2006-01-02T15:04:05.000000Z07:00"

// scan reads a definition in taskColumns's order.
func (d *Definitions) scan(sc scanner) (Definition, error) {
	var (
		def                      Definition
		t                        = &def.Task
		start, end, created, upd dbTime
		timeout, backoff, window string
		jitter, cals             string
		attempts, maxRuns        int64
		permanent, once, paused  bool
		until                    dbTime
		pauseOn                  int64
	)
	err := sc.Scan(&t.Name, &t.Handler, &t.BusinessID, &t.Spec, &t.Zone, &start, &end, &permanent, &once, &paused,
		&t.Overlap, &t.Misfire, &timeout, &attempts, &backoff, &def.Version, &created, &upd, &window, &maxRuns, &jitter,
		&t.PauseNote, &until, &pauseOn, &cals)
	if err != nil {
		return Definition{}, err
	}
	t.Start, t.End, t.Created, def.Updated, t.PausedUntil = start.t, end.t, created.t, upd.t, until.t
	t.PauseOnFailures = int(pauseOn)
	if !paused {
		// Resumed by a replica of version 7, which leaves the note.
		t.PauseNote, t.PausedUntil = "", time.Time{}
	}
	t.Permanent, t.Once, t.Paused = permanent, once, paused
	t.Retry.Attempts, t.MaxRuns = int(attempts), int(maxRuns)
	t.Calendars = splitList(cals)
	for _, f := range [...]struct {
		column, v string
		d         *cron.Duration
	}{{"timeout", timeout, &t.Timeout}, {"retry_backoff", backoff, &t.Retry.Backoff}, {"catch_up_window", window, &t.CatchUpWindow}, {"jitter", jitter, &t.Jitter}} {
		v, err := time.ParseDuration(f.v)
		if err != nil {
			return Definition{}, fmt.Errorf("task %q: column %s holds %q, not a duration such as \"90s\"", t.Name, f.column, f.v)
		}
		*f.d = cron.Duration(v)
	}
	return def, nil
}

// A dbTime scans a time column of either dialect: a time.Time, RFC 3339
// text, or NULL for the zero Time. It reads in UTC.
type dbTime struct{ t time.Time }

func (d *dbTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		d.t = time.Time{}
		return nil
	case time.Time:
		d.t = v.UTC()
		return nil
	case []byte:
		return d.parse(string(v))
	case string:
		return d.parse(v)
	}
	return fmt.Errorf("sqlstore: a time column holds %T", src)
}

func (d *dbTime) parse(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("sqlstore: a time column holds %q, not RFC 3339 time such as %q", s, sqliteTime)
	}
	d.t = t.UTC()
	return nil
}

package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/circulation-go/circulation/cron"
)

// The calendars of Definitions: {t}_calendars, one row a cron.Calendar,
// with a version each, written as the tasks are, each write bumping the
// change marker so that the Tables that follow the definitions apply it.

var (
	// ErrCalendarExists is returned by CreateCalendar for a name that is
	// defined already.
	ErrCalendarExists = errors.New("sqlstore: calendar already defined")
	// ErrCalendarInUse is returned by DeleteCalendar for a calendar that
	// a task names.
	ErrCalendarInUse = errors.New("sqlstore: calendar in use")
)

// A CalendarDefinition is a calendar as ListCalendars reports it.
type CalendarDefinition struct {
	Calendar cron.Calendar
	Version  int64     // the calendar's version, which UpdateCalendar and DeleteCalendar name
	Updated  time.Time // when it was last written, by the writer's clock
}

// calQueries holds the statements of the calendars, for a dialect and
// table.
type calQueries struct {
	insert, update, delete, current, get, list, users string
}

const calendarColumns = `name, zone, days, note, version, created_at, updated_at`

// The statements of the calendars, with {t} and $n as in queries.go.
const (
	insertCalendarSQL = `INSERT INTO {t}_calendars (` + calendarColumns + `)
VALUES ($1, $2, $3, $4, 1, $5, $5)
ON CONFLICT (name) DO NOTHING`
	updateCalendarSQL = `UPDATE {t}_calendars SET zone = $2, days = $3, note = $4, version = version + 1, updated_at = $5
WHERE name = $1 AND version = $6
RETURNING version`
	deleteCalendarSQL  = `DELETE FROM {t}_calendars WHERE name = $1 AND version = $2`
	currentCalendarSQL = `SELECT version FROM {t}_calendars WHERE name = $1`
	getCalendarSQL     = `SELECT ` + calendarColumns + ` FROM {t}_calendars WHERE name = $1`
	listCalendarsSQL   = `SELECT ` + calendarColumns + ` FROM {t}_calendars`
	// calendarUsersSQL reads the tasks that name calendars, whose names
	// are matched in Go: a name may hold LIKE's wildcards.
	calendarUsersSQL = `SELECT name, calendars FROM {t}_tasks WHERE calendars <> ''`
)

func newCalQueries(q queries) calQueries {
	return calQueries{
		insert:  q.rewrite(insertCalendarSQL),
		update:  q.rewrite(updateCalendarSQL),
		delete:  q.rewrite(deleteCalendarSQL),
		current: q.rewrite(currentCalendarSQL),
		get:     q.rewrite(getCalendarSQL),
		list:    q.rewrite(listCalendarsSQL),
		users:   q.rewrite(calendarUsersSQL),
	}
}

// splitList reads a column of names or days joined by commas; empty is
// none.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// calendarsArg is t's calendars as their column holds them.
func calendarsArg(t cron.Task) string { return strings.Join(t.Calendars, ",") }

// calendarArgs checks c and returns its name, zone, days and note as the
// statements take them.
func (d *Definitions) calendarArgs(c cron.Calendar) ([]any, error) {
	d.s.mustBeMade()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	fail := func(field string, err error) ([]any, error) {
		return nil, &cron.CalendarError{Calendar: c.Name, Field: field, Err: err}
	}
	for _, f := range [...]struct{ field, v string }{
		{"name", c.Name}, {"zone", c.Zone}, {"days", strings.Join(c.Days, ",")}, {"note", c.Note},
	} {
		if !isText(f.v) {
			return fail(f.field, errors.New("not UTF-8 text without NUL"))
		}
	}
	return []any{c.Name, c.Zone, strings.Join(c.Days, ","), c.Note}, nil
}

// checkCalendars returns a *cron.TaskError if t names a calendar that tx
// does not see. The caller's transaction holds the marker's lock: no
// calendar is deleted before it commits.
func (d *Definitions) checkCalendars(ctx context.Context, tx *sql.Tx, t cron.Task) error {
	for _, name := range t.Calendars {
		switch _, ok, err := d.currentOf(ctx, tx, d.cq.current, name); {
		case err != nil:
			return err
		case !ok:
			return &cron.TaskError{Task: t.Name, Field: "calendars", Err: fmt.Errorf("%w %q", cron.ErrUnknownCalendar, name)}
		}
	}
	return nil
}

// CreateCalendar saves c, a new calendar, at version 1, and returns its
// version. It returns the *cron.CalendarError of c.Validate, or one naming
// a field the store cannot hold (text that is not UTF-8 without NUL), and
// saves nothing; and an error wrapping ErrCalendarExists if c.Name is
// defined already. Like every write of a definition, it bumps Version:
// the Tables that follow d load the calendar at their next look.
func (d *Definitions) CreateCalendar(ctx context.Context, c cron.Calendar) (int64, error) {
	args, err := d.calendarArgs(c)
	if err != nil {
		return 0, err
	}
	err = d.write(ctx, func(tx *sql.Tx) error {
		n, err := d.s.txExec(ctx, tx, d.cq.insert, append(args, d.timeArg(time.Now()))...)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: %q", ErrCalendarExists, c.Name)
		}
		return nil
	})
	if err != nil {
		return 0, d.wrapCalendar("creating", c.Name, err)
	}
	return 1, nil
}

// UpdateCalendar replaces the calendar c.Name, at version, with c, and
// returns its new version, one more: the tasks naming it pass over its
// new days on every Table that follows d, from its next look. It refuses
// c as CreateCalendar does; it returns an error wrapping ErrStale if the
// calendar is at another version, and one wrapping cron.ErrUnknownCalendar
// if there is none.
func (d *Definitions) UpdateCalendar(ctx context.Context, c cron.Calendar, version int64) (int64, error) {
	args, err := d.calendarArgs(c)
	if err != nil {
		return 0, err
	}
	var v int64
	err = d.write(ctx, func(tx *sql.Tx) error {
		d.s.stats.statements.Add(1)
		err := tx.QueryRowContext(ctx, d.cq.update, append(args, d.timeArg(time.Now()), version)...).Scan(&v)
		if err == sql.ErrNoRows {
			return d.missedCalendar(ctx, tx, c.Name, version)
		}
		return err
	})
	if err != nil {
		return 0, d.wrapCalendar("updating", c.Name, err)
	}
	return v, nil
}

// DeleteCalendar deletes the calendar name, at version. It refuses to
// delete a calendar that a task names, with an error wrapping
// ErrCalendarInUse that names the tasks (the first ten): a task never
// loses a calendar it passes over. It returns an error wrapping ErrStale
// if the calendar is at another version, and one wrapping
// cron.ErrUnknownCalendar if there is none.
func (d *Definitions) DeleteCalendar(ctx context.Context, name string, version int64) error {
	err := d.write(ctx, func(tx *sql.Tx) error {
		var users []string
		err := d.s.txQuery(ctx, tx, d.cq.users, func(rows *sql.Rows) error {
			var task, cals string
			if err := rows.Scan(&task, &cals); err != nil {
				return err
			}
			if slices.Contains(splitList(cals), name) {
				users = append(users, task)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(users) > 0 {
			slices.Sort(users)
			more := ""
			if len(users) > 10 {
				more = fmt.Sprintf(" and %d more", len(users)-10)
				users = users[:10]
			}
			return fmt.Errorf("%w: calendar %q is named by the tasks %q%s", ErrCalendarInUse, name, users, more)
		}
		n, err := d.s.txExec(ctx, tx, d.cq.delete, name, version)
		if err != nil {
			return err
		}
		if n == 0 {
			return d.missedCalendar(ctx, tx, name, version)
		}
		return nil
	})
	return d.wrapCalendar("deleting", name, err)
}

// txQuery runs a query in tx and calls f for each row.
func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, query string, f func(*sql.Rows) error) error {
	s.stats.statements.Add(1)
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// currentOf returns the version of the row name that query reads, and
// whether there is one, as tx sees it.
func (d *Definitions) currentOf(ctx context.Context, tx *sql.Tx, query, name string) (int64, bool, error) {
	var v int64
	d.s.stats.statements.Add(1)
	err := tx.QueryRowContext(ctx, query, name).Scan(&v)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	return v, err == nil, err
}

// missedCalendar says why a write of the calendar name at version matched
// nothing, as missed does for a task.
func (d *Definitions) missedCalendar(ctx context.Context, tx *sql.Tx, name string, version int64) error {
	switch cur, ok, err := d.currentOf(ctx, tx, d.cq.current, name); {
	case err != nil:
		return err
	case !ok:
		return cron.ErrUnknownCalendar
	default:
		return fmt.Errorf("%w: calendar %q is at version %d, not %d", ErrStale, name, cur, version)
	}
}

// wrapCalendar names the calendar and the write in err, unless it names
// it already.
func (d *Definitions) wrapCalendar(verb, name string, err error) error {
	if err == nil || errors.Is(err, ErrStale) || errors.Is(err, ErrCalendarExists) || errors.Is(err, ErrCalendarInUse) {
		return err
	}
	if errors.Is(err, cron.ErrUnknownCalendar) {
		return fmt.Errorf("sqlstore: calendar %q: %w", name, err)
	}
	return fmt.Errorf("sqlstore: %s calendar %q: %w", verb, name, err)
}

// GetCalendar returns the calendar name and its version, or an error
// wrapping cron.ErrUnknownCalendar if there is none.
func (d *Definitions) GetCalendar(ctx context.Context, name string) (cron.Calendar, int64, error) {
	d.s.mustBeMade()
	var def CalendarDefinition
	err := d.s.retryOp(ctx, hookDefsRead, 1, func() error {
		var err error
		def, err = d.scanCalendar(d.s.queryRow(ctx, d.cq.get, name))
		return err
	})
	if err == sql.ErrNoRows {
		err = cron.ErrUnknownCalendar
	}
	if err != nil {
		return cron.Calendar{}, 0, d.wrapCalendar("reading", name, err)
	}
	return def.Calendar, def.Version, nil
}

// ListCalendars returns every calendar, sorted by name, with its version.
func (d *Definitions) ListCalendars(ctx context.Context) ([]CalendarDefinition, error) {
	d.s.mustBeMade()
	var defs []CalendarDefinition
	err := d.s.retryOp(ctx, hookDefsRead, 1, func() error {
		defs = defs[:0]
		return d.s.query(ctx, d.cq.list, func(rows *sql.Rows) error {
			def, err := d.scanCalendar(rows)
			if err != nil {
				return err
			}
			defs = append(defs, def)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading the calendars: %w", err)
	}
	slices.SortFunc(defs, func(a, b CalendarDefinition) int { return strings.Compare(a.Calendar.Name, b.Calendar.Name) })
	return defs, nil
}

// Calendars returns every calendar, sorted by name, and the version of
// the set of definitions, as Tasks does: the calendars reflect every
// write the version counts, and maybe later ones.
func (d *Definitions) Calendars(ctx context.Context) ([]cron.Calendar, int64, error) {
	v, err := d.Version(ctx)
	if err != nil {
		return nil, 0, err
	}
	defs, err := d.ListCalendars(ctx)
	if err != nil {
		return nil, 0, err
	}
	cals := make([]cron.Calendar, len(defs))
	for i, def := range defs {
		cals[i] = def.Calendar
	}
	return cals, v, nil
}

// scanCalendar reads a calendar in calendarColumns's order.
func (d *Definitions) scanCalendar(sc scanner) (CalendarDefinition, error) {
	var (
		def          CalendarDefinition
		c            = &def.Calendar
		days         string
		created, upd dbTime
	)
	if err := sc.Scan(&c.Name, &c.Zone, &days, &c.Note, &def.Version, &created, &upd); err != nil {
		return CalendarDefinition{}, err
	}
	c.Days, def.Updated = splitList(days), upd.t
	if c.Days == nil {
		c.Days = []string{}
	}
	return def, nil
}

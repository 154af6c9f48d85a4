package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// Definitions is the table of task definitions a Store keeps beside its
// run records, {t}_tasks, one row a cron.Task, with a version each. It is
// a cron.Source: every replica's cron.Table that follows it runs the same
// tasks. It holds the calendars the tasks name too, {t}_calendars, and is
// a cron.CalendarSource: a task names only calendars it holds, and a
// calendar named by a task cannot be deleted (CreateCalendar). Its writes
// (Create, Update, Delete, SetPaused, and those of calendars) use optimistic
// concurrency: each names the version it read, and a write of a stale
// version fails with ErrStale, never overwrites. Every write bumps the
// change marker, {t}_tasks_version, in its transaction, so that a
// follower that polls Version never misses a change (DESIGN.md).
//
// Definitions is safe for concurrent use, as are the Definitions of
// several Stores, in one process or many, on one database and table. The
// zero value is not usable: call Store.Definitions.
//
// Start, End and Created are kept to the microsecond (PostgreSQL's
// timestamptz), on SQLite as on PostgreSQL, and read back in UTC. A write
// that returns an error other than a *cron.TaskError, ErrTaskExists,
// ErrStale or cron.ErrUnknownTask may have committed (the connection broke
// as it did): read the definition again before writing it again.
type Definitions struct {
	s  *Store
	q  defQueries
	cq calQueries
	aq auditQueries
	// changes receives, without blocking, after each write that
	// committed, and when the listener learns of a later version;
	// written by the writers and the listener, read by a follower.
	changes chan struct{}
	// channel is the one the writes notify and the listener listens
	// on, on PostgreSQL: named as the change marker, {t}_tasks_version.
	channel string

	mu sync.Mutex
	// signalled is the latest version of which changes received, or
	// was full: every version up to it was signalled once it had
	// committed. Guarded by mu, which signal holds while it sends.
	signalled int64
	// listening is the listener, once Changes was called on
	// PostgreSQL; closed says Close was called, and no listener starts
	// after it. Both guarded by mu.
	listening *listener
	closed    bool
}

var _ cron.CalendarSource = (*Definitions)(nil)

var (
	// ErrTaskExists is returned by Create for a name that is defined
	// already.
	ErrTaskExists = errors.New("sqlstore: task already defined")
	// ErrStale is returned by Update and Delete when the definition is no
	// longer at the version the caller read: another write came between.
	ErrStale = errors.New("sqlstore: stale version")
)

// A Definition is a task definition as List reports it.
type Definition struct {
	Task    cron.Task
	Version int64     // the definition's version, which Update and Delete name
	Updated time.Time // when it was last written, by the writer's clock
}

// Definitions returns the table of task definitions of s. Every call
// returns the same Definitions.
func (s *Store) Definitions() *Definitions {
	s.mustBeMade()
	return s.defs
}

func newDefinitions(s *Store) *Definitions {
	q := queries{dialect: s.dialect, table: s.opts.table}
	notify := ""
	if s.dialect == PostgreSQL {
		notify = notifySQL
	}
	return &Definitions{s: s, q: defQueries{
		bump:        q.rewrite(bumpSQL),
		version:     q.rewrite(versionSQL),
		notify:      notify,
		insert:      q.rewrite(insertTaskSQL),
		update:      q.rewrite(updateTaskSQL),
		pause:       q.rewrite(pauseTaskSQL),
		delete:      q.rewrite(deleteTaskSQL),
		deleteSince: q.rewrite(deleteSinceSQL),
		current:     q.rewrite(currentTaskSQL),
		get:         q.rewrite(getTaskSQL),
		list:        q.rewrite(listTasksSQL),
	}, cq: newCalQueries(q), aq: newAuditQueries(q), changes: make(chan struct{}, 1), channel: s.opts.table + "_tasks_version"}
}

// Create saves t, a new definition, at version 1, with Created set to now
// (t.Created is ignored), and returns its version. It returns the
// *cron.TaskError of t.Validate, or one naming a field the store cannot
// hold (a name CheckJob refuses, text that is not UTF-8 without NUL, a
// time outside years 1 to 9999), and saves nothing; and an error wrapping
// ErrTaskExists if t.Name is defined already. A task naming a calendar
// that d does not hold is refused with a *cron.TaskError naming the field
// "calendars", wrapping cron.ErrUnknownCalendar.
func (d *Definitions) Create(ctx context.Context, t cron.Task) (int64, error) {
	args, err := d.args(t)
	if err != nil {
		return 0, err
	}
	now := d.timeArg(time.Now())
	err = d.write(ctx, func(tx *sql.Tx) error {
		if err := d.checkCalendars(ctx, tx, t); err != nil {
			return err
		}
		n, err := d.s.txExec(ctx, tx, d.q.insert, append(append(args, now), append(d.pauseArgs(t), calendarsArg(t))...)...)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: %q", ErrTaskExists, t.Name)
		}
		return nil
	})
	if err != nil {
		return 0, d.wrap("creating", t.Name, err)
	}
	return 1, nil
}

// Update replaces the definition of t.Name, at version, with t, and
// returns its new version, one more. Created keeps the value Create set
// (t.Created is ignored). It refuses t as Create does, a calendar it does
// not hold too; it returns an error
// wrapping ErrStale if the definition is at another version, and one
// wrapping cron.ErrUnknownTask if there is none.
func (d *Definitions) Update(ctx context.Context, t cron.Task, version int64) (int64, error) {
	args, err := d.args(t)
	if err != nil {
		return 0, err
	}
	var v int64
	err = d.write(ctx, func(tx *sql.Tx) error {
		if err := d.checkCalendars(ctx, tx, t); err != nil {
			return err
		}
		d.s.stats.statements.Add(1)
		err := tx.QueryRowContext(ctx, d.q.update, append(append(args, d.timeArg(time.Now()), version), append(d.pauseArgs(t), calendarsArg(t))...)...).Scan(&v)
		if err == sql.ErrNoRows {
			return d.missed(ctx, tx, t.Name, version)
		}
		return err
	})
	if err != nil {
		return 0, d.wrap("updating", t.Name, err)
	}
	return v, nil
}

// Delete deletes the definition name, at version, and what the store
// recorded of since when its job has been scheduled (Since): a task
// defined again under the name owes no slot from before. Its run records
// stay. It returns an error wrapping ErrStale if the definition is at
// another version, and one wrapping cron.ErrUnknownTask if there is none.
func (d *Definitions) Delete(ctx context.Context, name string, version int64) error {
	err := d.write(ctx, func(tx *sql.Tx) error {
		n, err := d.s.txExec(ctx, tx, d.q.delete, name, version)
		if err != nil {
			return err
		}
		if n == 0 {
			return d.missed(ctx, tx, name, version)
		}
		_, err = d.s.txExec(ctx, tx, d.q.deleteSince, name)
		return err
	})
	return d.wrap("deleting", name, err)
}

// SetPaused pauses or resumes the task name: the definition's Paused is
// set to paused, its PauseNote and PausedUntil to note's Note and Until
// (none when it resumes), and its version raised, unless they are so
// already, in which case nothing is written. It does not check the rest
// of the definition again: a task whose End has passed can still be
// paused; a note longer than cron.MaxPauseNoteLen, or not UTF-8, is
// refused with a *cron.TaskError. It returns an error wrapping
// cron.ErrUnknownTask if there is no such definition.
func (d *Definitions) SetPaused(ctx context.Context, name string, paused bool, note schedule.PauseNote) error {
	if !paused {
		note = schedule.PauseNote{}
	}
	if len(note.Note) > cron.MaxPauseNoteLen || !isText(note.Note) {
		return &cron.TaskError{Task: name, Field: "pauseNote", Err: errors.New("longer than " + strconv.Itoa(cron.MaxPauseNoteLen) + " bytes, or not UTF-8 text without NUL")}
	}
	err := d.write(ctx, func(tx *sql.Tx) error {
		n, err := d.s.txExec(ctx, tx, d.q.pause, name, paused, d.timeArg(time.Now()), note.Note, d.nullTimeArg(note.Until))
		if err != nil || n > 0 {
			return err
		}
		switch _, ok, err := d.current(ctx, tx, name); {
		case err != nil:
			return err
		case !ok:
			return cron.ErrUnknownTask
		}
		return errUnchanged // nothing written: the marker's bump is rolled back
	})
	if err == errUnchanged {
		return nil
	}
	return d.wrap("pausing", name, err)
}

// errUnchanged rolls back a write that found nothing to change.
var errUnchanged = errors.New("sqlstore: unchanged")

// current returns the version of the definition name, and whether there
// is one, as tx sees it.
func (d *Definitions) current(ctx context.Context, tx *sql.Tx, name string) (int64, bool, error) {
	var v int64
	d.s.stats.statements.Add(1)
	err := tx.QueryRowContext(ctx, d.q.current, name).Scan(&v)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	return v, err == nil, err
}

// missed says why a write of the definition name at version matched
// nothing: ErrStale if it is at another version, cron.ErrUnknownTask if it
// is not defined. The caller's transaction holds the marker's lock, so no
// other write came between.
func (d *Definitions) missed(ctx context.Context, tx *sql.Tx, name string, version int64) error {
	switch cur, ok, err := d.current(ctx, tx, name); {
	case err != nil:
		return err
	case !ok:
		return cron.ErrUnknownTask
	default:
		return fmt.Errorf("%w: task %q is at version %d, not %d", ErrStale, name, cur, version)
	}
}

// wrap names the task and the write in err, unless it is a definition's
// *cron.TaskError, ErrStale or ErrTaskExists, which name it already.
func (d *Definitions) wrap(verb, name string, err error) error {
	var te *cron.TaskError
	if err == nil || errors.Is(err, ErrStale) || errors.Is(err, ErrTaskExists) || errors.As(err, &te) {
		return err
	}
	if errors.Is(err, cron.ErrUnknownTask) {
		return fmt.Errorf("sqlstore: task %q: %w", name, err)
	}
	return fmt.Errorf("sqlstore: %s task %q: %w", verb, name, err)
}

// write runs f in a transaction that first bumps the change marker
// (bump), and commits it if f returns nil; on SQLite, it runs it again
// while another writer holds the database. Once it committed, Changes
// receives. Every write of a definition or a calendar goes through write.
func (d *Definitions) write(ctx context.Context, f func(*sql.Tx) error) error {
	s := d.s
	s.mustBeMade()
	var v int64
	err := s.retryOp(ctx, hookDefsWrites, 1, func() error {
		s.stats.statements.Add(1)
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if v, err = d.bump(ctx, tx); err != nil {
			return err
		}
		if err := f(tx); err != nil {
			return err
		}
		s.stats.statements.Add(1)
		return tx.Commit()
	})
	if err == nil {
		d.wrote(v)
	}
	return err
}

// bump counts a write in the change marker, in tx, and returns the
// version it makes. On PostgreSQL it also notifies the Stores that listen
// on d's channel of that version, which they hear once tx commits, and
// never if it rolls back.
func (d *Definitions) bump(ctx context.Context, tx *sql.Tx) (int64, error) {
	var v int64
	d.s.stats.statements.Add(1)
	if err := tx.QueryRowContext(ctx, d.q.bump).Scan(&v); err != nil {
		return 0, err
	}
	if d.q.notify != "" && testMutant != mutantNoNotify {
		if _, err := d.s.txExec(ctx, tx, d.q.notify, d.channel, strconv.FormatInt(v, 10)); err != nil {
			return 0, err
		}
	}
	return v, nil
}

// wrote signals Changes after the write of version v committed, whatever
// was signalled before: a caller of a write finds Changes signalled when
// it returns, unless another reader took the signal.
func (d *Definitions) wrote(v int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.signalled = max(d.signalled, v)
	d.send()
}

// heard signals Changes that version v committed, unless v or a later
// version was signalled already: a write's notification, heard after
// the write itself signalled, signals nothing more.
func (d *Definitions) heard(v int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v > d.signalled {
		d.signalled = v
		d.send()
	}
}

// send signals Changes, unless it holds a signal already. The caller
// holds d.mu.
func (d *Definitions) send() {
	select {
	case d.changes <- struct{}{}:
	default:
	}
}

// txExec runs a statement in tx and returns the rows it affected.
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	s.stats.statements.Add(1)
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Get returns the definition name and its version, or an error wrapping
// cron.ErrUnknownTask if there is none.
func (d *Definitions) Get(ctx context.Context, name string) (cron.Task, int64, error) {
	d.s.mustBeMade()
	var def Definition
	err := d.s.retryOp(ctx, hookDefsRead, 1, func() error {
		var err error
		def, err = d.scan(d.s.queryRow(ctx, d.q.get, name))
		return err
	})
	if err == sql.ErrNoRows {
		err = cron.ErrUnknownTask
	}
	if err != nil {
		return cron.Task{}, 0, d.wrap("reading", name, err)
	}
	return def.Task, def.Version, nil
}

// List returns every definition, sorted by name, with its version.
func (d *Definitions) List(ctx context.Context) ([]Definition, error) {
	d.s.mustBeMade()
	var defs []Definition
	err := d.s.retryOp(ctx, hookDefsRead, 1, func() error {
		defs = defs[:0]
		return d.s.query(ctx, d.q.list, func(rows *sql.Rows) error {
			def, err := d.scan(rows)
			if err != nil {
				return err
			}
			defs = append(defs, def)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading the task definitions: %w", err)
	}
	slices.SortFunc(defs, func(a, b Definition) int { return strings.Compare(a.Task.Name, b.Task.Name) })
	return defs, nil
}

// Tasks returns every definition, sorted by name, and the version of the
// set, as Version returns it: the definitions reflect every write the
// version counts, and maybe later ones (the version is read first), so a
// follower that reads Tasks again when Version differs misses no change.
func (d *Definitions) Tasks(ctx context.Context) ([]cron.Task, int64, error) {
	v, err := d.Version(ctx)
	if err != nil {
		return nil, 0, err
	}
	defs, err := d.List(ctx)
	if err != nil {
		return nil, 0, err
	}
	tasks := make([]cron.Task, len(defs))
	for i, def := range defs {
		tasks[i] = def.Task
	}
	return tasks, v, nil
}

// Version returns the version of the set of definitions: the number of
// writes (Create, Update, Delete, SetPaused calls that changed something,
// CreateMany and Import calls that did, each one write whatever the
// number of its definitions, and the writes of calendars) since the table
// was made. It reads one row.
func (d *Definitions) Version(ctx context.Context) (int64, error) {
	d.s.mustBeMade()
	var v int64
	err := d.s.retryOp(ctx, hookDefsRead, 1, func() error { return d.s.queryRow(ctx, d.q.version).Scan(&v) })
	if err != nil {
		return 0, fmt.Errorf("sqlstore: reading the version of the task definitions: %w", err)
	}
	return v, nil
}

// Changes returns a channel that receives once a change of the
// definitions has committed, so that a follower applies it at once: after
// a write through d commits (on return from the write, unless another
// reader took the signal); and on PostgreSQL, with pgx's stdlib as the
// driver, once d learns of a later version than it signalled before, by a
// write through another Store, in this process or another (listen.go).
// The channel holds one signal at most and is the same for every call:
// with several followers of d, one is woken, and the others see the change
// at their next poll of Version.
//
// On PostgreSQL, the first call starts d's listener: a connection of its
// own, outside the pool, that LISTENs on the channel named as the change
// marker, {t}_tasks_version, on which every write notifies its version
// when it commits. When that connection is made, first or again after a
// loss, d reads Version, and Changes receives if it is later than any
// version signalled before: a change made while d was not listening is
// not missed. Store.Close stops the listener. Writes by other Stores are
// seen by polling Version only on SQLite, with another driver (lib/pq),
// after Close, and while the listener's connection is down.
func (d *Definitions) Changes() <-chan struct{} {
	if d.s.dialect == PostgreSQL {
		d.mu.Lock()
		if d.listening == nil && !d.closed {
			d.listening = d.listen()
		}
		d.mu.Unlock()
	}
	return d.changes
}

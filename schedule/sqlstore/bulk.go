package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/circulation-go/circulation/cron"
)

// Definitions written in bulk: CreateMany and Import check every
// definition first, then write them all in one transaction, with a
// statement for each thousand rows, or write none.

// A BulkError reports a definition that CreateMany or Import refused: its
// index in the tasks given, its Name, and why. Err is the *cron.TaskError
// of cron.Task.Validate or of a field the store cannot hold (as Create
// refuses them), a *cron.TaskError naming the field "calendars" and
// wrapping cron.ErrUnknownCalendar, or an error wrapping ErrTaskExists
// for a name given twice or, for CreateMany, defined already.
type BulkError struct {
	Index int    // the definition's index in the tasks given
	Name  string // its Name
	Err   error
}

// Error names the task, its index and, for a *cron.TaskError, its field:
//
//	sqlstore: task "report" at index 7: spec: ...
func (e *BulkError) Error() string {
	s := "sqlstore: task " + strconv.Quote(clipText(e.Name)) + " at index " + strconv.Itoa(e.Index) + ": "
	var te *cron.TaskError
	if errors.As(e.Err, &te) && te.Task == e.Name {
		return s + te.Field + ": " + te.Err.Error()
	}
	return s + e.Err.Error()
}

func (e *BulkError) Unwrap() error { return e.Err }

// MaxBulkErrors is how many refused definitions the error of CreateMany
// or Import names at most.
const MaxBulkErrors = 10

// CreateMany saves tasks, new definitions, each at version 1 with Created
// set to now, all or none, in one transaction that writes a thousand
// definitions a statement, and counts as one write in Version: the
// Tables that follow d load them all at their next look.
//
// Every definition is checked before anything is written, as Create
// checks one, and against the others: a name given twice is refused. The
// calendars they name and the names already defined are checked in the
// transaction. If any is refused, CreateMany saves none and returns a
// *BulkError naming it, or, if several are, errors.Join of the first
// MaxBulkErrors in the order of their indexes (errors.As finds the
// first): a refused definition's *cron.TaskError, or ErrTaskExists, is
// found with errors.As and errors.Is through it. A name defined already
// is reported by the first statement that meets it, with the others of
// that statement. Another error may have come after the commit, as for
// Create.
//
// On SQLite the transaction holds the database's one writer, which the
// claims and finishes of every process wait for: a hundred thousand
// definitions hold it for a second or two.
func (d *Definitions) CreateMany(ctx context.Context, tasks []cron.Task) error {
	rows, err := d.bulkArgs(tasks)
	if err != nil || len(tasks) == 0 {
		return err
	}
	all := make([]int, len(tasks))
	for i := range all {
		all[i] = i
	}
	q := d.bulkQueries()
	err = d.write(ctx, func(tx *sql.Tx) error {
		if err := d.checkBulkCalendars(ctx, tx, q, tasks); err != nil {
			return err
		}
		return d.insertRows(ctx, tx, q, tasks, all, rows, false)
	})
	return wrapBulk("creating", len(tasks), err)
}

// An ImportOption changes what Import does.
type ImportOption interface{ apply(*importOptions) }

type importOptions struct {
	deleteOthers bool
}

type importOptionFunc func(*importOptions)

func (f importOptionFunc) apply(o *importOptions) { f(o) }

// DeleteOthers makes Import delete every definition that its tasks do not
// name, with what Delete deletes with it, so that d holds the tasks given
// and no other: the sync of a file that holds them all. An Import of no
// task then deletes every definition.
func DeleteOthers() ImportOption {
	return importOptionFunc(func(o *importOptions) { o.deleteOthers = true })
}

// ImportResult counts what Import did.
type ImportResult struct {
	Created   int // new definitions, saved at version 1
	Replaced  int // definitions that differed, saved at their version plus one
	Unchanged int // definitions saved as given already: not written, their version kept
	Deleted   int // definitions the tasks did not name (DeleteOthers)
	// The names of the definitions created and replaced, in the order of
	// the tasks, and of those deleted, sorted: what an audit log records
	// of the import.
	CreatedNames, ReplacedNames, DeletedNames []string
}

// Import saves tasks, all or none, in one transaction: a task not defined
// yet is created, as Create does, and a definition that differs from its
// task is replaced by it, as Update does, keeping its Created and raising
// its version by one; one defined as given already is left as it is. The
// definitions that tasks do not name are kept, unless opts hold
// DeleteOthers. Import writes and reads a thousand definitions a
// statement, and counts as one write in Version, or as none if it changed
// nothing: importing a file twice writes nothing the second time.
//
// Import replaces whatever a definition holds, whatever its version: the
// tasks given are the definitions, as a file kept under version control
// is. A definition paused in d (SetPaused, or a task's PauseOnFailures) is
// resumed if its task is not Paused.
//
// It refuses tasks as CreateMany does, a name defined already aside, and
// then writes nothing.
func (d *Definitions) Import(ctx context.Context, tasks []cron.Task, opts ...ImportOption) (ImportResult, error) {
	var o importOptions
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	rows, err := d.bulkArgs(tasks)
	if err != nil || (len(tasks) == 0 && !o.deleteOthers) {
		return ImportResult{}, err
	}
	var res ImportResult
	q := d.bulkQueries()
	err = d.write(ctx, func(tx *sql.Tx) error {
		res = ImportResult{}
		if err := d.checkBulkCalendars(ctx, tx, q, tasks); err != nil {
			return err
		}
		old, err := d.readNamed(ctx, tx, q, tasks, o.deleteOthers)
		if err != nil {
			return err
		}
		var write []int
		for i, t := range tasks {
			def, ok := old[t.Name]
			switch {
			case !ok:
				res.Created++
				res.CreatedNames = append(res.CreatedNames, t.Name)
			case sameArgs(d.rowArgs(def.Task), rows[i]):
				res.Unchanged++
				continue
			default:
				res.Replaced++
				res.ReplacedNames = append(res.ReplacedNames, t.Name)
			}
			write = append(write, i)
		}
		if err := d.insertRows(ctx, tx, q, tasks, write, rows, true); err != nil {
			return err
		}
		if o.deleteOthers {
			given := make(map[string]bool, len(tasks))
			for _, t := range tasks {
				given[t.Name] = true
			}
			var gone []string
			for name := range old {
				if !given[name] {
					gone = append(gone, name)
				}
			}
			slices.Sort(gone)
			if err := d.deleteNamed(ctx, tx, q, gone); err != nil {
				return err
			}
			res.Deleted, res.DeletedNames = len(gone), gone
		}
		if len(write) == 0 && res.Deleted == 0 {
			return errUnchanged // nothing written: the marker's bump is rolled back
		}
		return nil
	})
	if err == errUnchanged {
		err = nil
	}
	if err != nil {
		return ImportResult{}, wrapBulk("importing", len(tasks), err)
	}
	return res, nil
}

// bulkArgs checks tasks, each as Create does and their names against one
// another, and returns the parameters of each as rowArgs does; or the
// error of the first MaxBulkErrors refused.
func (d *Definitions) bulkArgs(tasks []cron.Task) ([][]any, error) {
	d.s.mustBeMade()
	var errs bulkErrors
	rows := make([][]any, len(tasks))
	seen := make(map[string]int, len(tasks))
	for i, t := range tasks {
		args, err := d.args(t)
		if err != nil {
			if !errs.add(i, t.Name, err) {
				break
			}
			continue
		}
		if j, ok := seen[t.Name]; ok {
			if !errs.add(i, t.Name, fmt.Errorf("%w, at index %d", ErrTaskExists, j)) {
				break
			}
			continue
		}
		seen[t.Name] = i
		rows[i] = append(append(args, d.pauseArgs(t)...), calendarsArg(t))
	}
	return rows, errs.err()
}

// bulkErrors collects the errors of refused definitions, up to
// MaxBulkErrors.
type bulkErrors []error

// add adds the error of the definition at index i, and reports whether
// there is room for more.
func (b *bulkErrors) add(i int, name string, err error) bool {
	*b = append(*b, &BulkError{Index: i, Name: name, Err: err})
	return len(*b) < MaxBulkErrors
}

func (b bulkErrors) err() error {
	switch len(b) {
	case 0:
		return nil
	case 1:
		return b[0]
	}
	return errors.Join(b...)
}

// wrapBulk names the write and its size in err, unless it reports
// refused definitions, which name themselves.
func wrapBulk(verb string, n int, err error) error {
	var be *BulkError
	if err == nil || errors.As(err, &be) {
		return err
	}
	return fmt.Errorf("sqlstore: %s %d task definitions: %w", verb, n, err)
}

// checkBulkCalendars returns the errors of the tasks that name a calendar
// tx does not see, as checkCalendars does for one. It reads the calendars'
// names once, if a task names one.
func (d *Definitions) checkBulkCalendars(ctx context.Context, tx *sql.Tx, q bulkQueries, tasks []cron.Task) error {
	if !slices.ContainsFunc(tasks, func(t cron.Task) bool { return len(t.Calendars) > 0 }) {
		return nil
	}
	known := map[string]bool{}
	err := d.txQuery(ctx, tx, q.calendars, func(rows *sql.Rows) error {
		var name string
		err := rows.Scan(&name)
		known[name] = true
		return err
	})
	if err != nil {
		return err
	}
	var errs bulkErrors
	for i, t := range tasks {
		for _, c := range t.Calendars {
			if !known[c] {
				err := &cron.TaskError{Task: t.Name, Field: "calendars", Err: fmt.Errorf("%w %q", cron.ErrUnknownCalendar, c)}
				if !errs.add(i, t.Name, err) {
					return errs.err()
				}
				break
			}
		}
	}
	return errs.err()
}

// insertRows inserts the definitions tasks[i] for each i of which, whose
// rowArgs are rows[i], a statement for each bulkRows of them. With
// upsert, a definition of the name is replaced, keeping its Created, at
// its version plus one; without, it is left, and insertRows returns the
// errors of those defined already that the first statement to meet one
// met.
func (d *Definitions) insertRows(ctx context.Context, tx *sql.Tx, q bulkQueries, tasks []cron.Task, which []int, rows [][]any, upsert bool) error {
	now := d.timeArg(time.Now())
	var buf []byte
	for chunk := range slices.Chunk(which, bulkRows) {
		buf = appendDefinitions(buf[:0], rows, chunk)
		if upsert {
			if _, err := d.s.txExec(ctx, tx, q.upsert, string(buf), now); err != nil {
				return err
			}
			continue
		}
		inserted := make(map[string]bool, len(chunk))
		err := d.txQuery(ctx, tx, q.insert, func(rows *sql.Rows) error {
			var name string
			err := rows.Scan(&name)
			inserted[name] = true
			return err
		}, string(buf), now)
		if err != nil {
			return err
		}
		if len(inserted) == len(chunk) {
			continue
		}
		var errs bulkErrors
		for _, i := range chunk {
			if !inserted[tasks[i].Name] && !errs.add(i, tasks[i].Name, ErrTaskExists) {
				break
			}
		}
		return errs.err()
	}
	return nil
}

// readNamed returns the definitions of the names of tasks that tx sees,
// by name, reading a thousand names a statement; with all, it returns
// every definition, in one statement.
func (d *Definitions) readNamed(ctx context.Context, tx *sql.Tx, q bulkQueries, tasks []cron.Task, all bool) (map[string]Definition, error) {
	defs := make(map[string]Definition, len(tasks))
	add := func(rows *sql.Rows) error {
		def, err := d.scan(rows)
		defs[def.Task.Name] = def
		return err
	}
	if all {
		return defs, d.txQuery(ctx, tx, d.q.list, add)
	}
	var buf []byte
	for chunk := range slices.Chunk(tasks, bulkRows) {
		names := make([]string, len(chunk))
		for i, t := range chunk {
			names[i] = t.Name
		}
		buf = appendNames(buf[:0], names)
		if err := d.txQuery(ctx, tx, q.get, add, string(buf)); err != nil {
			return nil, err
		}
	}
	return defs, nil
}

// deleteNamed deletes the definitions names, and since when their jobs
// have been scheduled, as Delete does, a thousand a statement.
func (d *Definitions) deleteNamed(ctx context.Context, tx *sql.Tx, q bulkQueries, names []string) error {
	var buf []byte
	for chunk := range slices.Chunk(names, bulkRows) {
		buf = appendNames(buf[:0], chunk)
		for _, query := range [...]string{q.delete, q.deleteSince} {
			if _, err := d.s.txExec(ctx, tx, query, string(buf)); err != nil {
				return err
			}
		}
	}
	return nil
}

// txQuery runs a statement that returns rows in tx, passing each to f.
func (d *Definitions) txQuery(ctx context.Context, tx *sql.Tx, query string, f func(*sql.Rows) error, args ...any) error {
	d.s.stats.statements.Add(1)
	rows, err := tx.QueryContext(ctx, query, args...)
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

// bulkQueries returns the statements of CreateMany and Import.
func (d *Definitions) bulkQueries() bulkQueries {
	return newBulkQueries(queries{dialect: d.s.dialect, table: d.s.opts.table})
}

// rowArgs returns the parameters of t in a statement of insertManySQL:
// its columns, then its pause and its calendars.
func (d *Definitions) rowArgs(t cron.Task) []any {
	return append(append(d.columns(t), d.pauseArgs(t)...), calendarsArg(t))
}

// sameArgs reports whether a and b, two definitions' rowArgs, save the
// same row.
func sameArgs(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if ta, ok := a[i].(time.Time); ok {
			if tb, ok := b[i].(time.Time); !ok || !ta.Equal(tb) {
				return false
			}
		} else if a[i] != b[i] {
			return false
		}
	}
	return true
}

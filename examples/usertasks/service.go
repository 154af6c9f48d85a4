package main

// What a service whose users define tasks needs, in the order it needs it:
// the store, the definitions, the Table that follows them, and the pages
// that show what runs. Copy from here; story.go tells the story.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	_ "modernc.org/sqlite" // the SQLite driver, which sqlstore.OpenSQLite uses

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// openStore opens the SQLite file at path, creating it if need be, and the
// Store on it: the run records of the tasks, and the table of their
// definitions (Store.Definitions). Close the *sql.DB once the Table on the
// Store has stopped.
func openStore(ctx context.Context, path string) (*sqlstore.Store, *sql.DB, error) {
	db, err := sqlstore.OpenSQLite(path)
	if err != nil {
		return nil, nil, err
	}
	// The default history is a Kubernetes CronJob's, 3 succeeded and 1
	// failed records a task; the story keeps them all, to show them.
	store, err := sqlstore.New(ctx, db, sqlstore.SQLite, sqlstore.WithHistory(100, 100))
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return store, db, nil
}

// setSpec changes the spec of the task name. The write names the version
// of the definition it read: if another user changed it since, Update
// refuses with sqlstore.ErrStale rather than overwrite their change.
func setSpec(ctx context.Context, defs *sqlstore.Definitions, name, spec string) error {
	t, version, err := defs.Get(ctx, name)
	if err != nil {
		return err
	}
	t.Spec = spec
	_, err = defs.Update(ctx, t, version)
	return err
}

// remove deletes the task name, at the version read, as setSpec writes.
// Its run records stay.
func remove(ctx context.Context, defs *sqlstore.Definitions, name string) error {
	_, version, err := defs.Get(ctx, name)
	if err != nil {
		return err
	}
	return defs.Delete(ctx, name, version)
}

// newTable returns the Table that runs the tasks, each with the one
// Handler registered here in code, "report": the tasks name it, and their
// business ids tell them apart, so that users add tasks without a deploy.
// Every run is recorded in store, which is what makes each slot run once
// among replicas; node names this replica in the records, and observe gets
// every record as it is made.
func newTable(store *sqlstore.Store, report cron.Handler, node string, observe func(schedule.Record)) *cron.Table {
	return cron.NewTable(map[string]cron.Handler{"report": report},
		cron.WithStore(store),
		cron.WithLocation(time.UTC), // the zone of a spec whose task names none
		cron.WithJobOptions(schedule.WithNode(node), schedule.WithObserver(observe)))
}

// A service is the program between its start and its stop: the database,
// the Store on it, and the Table that follows the Store's definitions.
type service struct {
	db    *sql.DB
	table *cron.Table
}

// startService opens the store at path, and starts a Table that runs its
// definitions with the Handler report, and applies their changes within
// poll. This replica is named "web-1" in the records.
func startService(ctx context.Context, path string, poll time.Duration, report cron.Handler,
	observe func(schedule.Record), onErr func(error)) (*service, error) {
	store, db, err := openStore(ctx, path)
	if err != nil {
		return nil, err
	}
	table := newTable(store, report, "web-1", observe)
	if err := follow(ctx, table, store, poll, onErr); err != nil {
		db.Close()
		return nil, err
	}
	return &service{db: db, table: table}, nil
}

// stop stops the Table, which cancels the runs in flight and waits for
// them, and then closes the database. It does nothing the second time.
func (s *service) stop() error {
	if s.db == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.table.Stop(ctx)
	err = errors.Join(err, s.db.Close())
	s.db = nil
	return err
}

// follow makes table run the definitions of store, and apply their changes
// within poll, whoever makes them: this process, another replica, an
// admin tool. The errors of later looks, such as a definition the Table
// refuses, go to onErr.
func follow(ctx context.Context, table *cron.Table, store *sqlstore.Store, poll time.Duration, onErr func(error)) error {
	err := table.Follow(ctx, store.Definitions(), cron.WithPollInterval(poll), cron.WithErrorHandler(onErr))
	var refused *cron.TaskError
	if errors.As(err, &refused) {
		// The Table follows the definitions, and runs those it could
		// load; the others are refused until they change.
		onErr(err)
		return nil
	}
	return err // the definitions could not be read: the Table follows nothing
}

// describe says when t runs, in words. Describe reads a spec alone: a
// task's zone goes in as the spec's CRON_TZ= prefix.
func describe(t cron.Task) string {
	spec := t.Spec
	if t.Zone != "" && !strings.HasPrefix(spec, "CRON_TZ=") && !strings.HasPrefix(spec, "TZ=") {
		spec = "CRON_TZ=" + t.Zone + " " + spec
	}
	d, err := cron.Describe(spec)
	if err != nil {
		return err.Error()
	}
	if t.Once {
		d += ", once"
	}
	return d
}

// printInventory prints what the Table runs, as an admin page shows it:
// each task's next run, its last outcome, its runs in flight, and its spec
// in words. at spells a time of the story.
func printInventory(w io.Writer, tasks []cron.TaskState, at func(time.Time) string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\ttask\tnext\tlast\trunning\tspec\tin words")
	for _, s := range tasks {
		fmt.Fprintf(tw, "\t%s\t%s\t%s\t%d\t%s\t%s\n", s.Task.Name, next(s, at), last(s, at), s.Running, s.Task.Spec, describe(s.Task))
	}
	tw.Flush()
}

// next says when a task runs next.
func next(s cron.TaskState, at func(time.Time) string) string {
	switch {
	case s.Task.Paused:
		return "paused"
	case s.Next.IsZero():
		return "none left"
	case time.Until(s.Next) > time.Minute:
		loc, _ := time.LoadLocation(s.Task.Zone) // one the Table loaded: it exists
		return s.Next.In(loc).Format("Mon Jan 2 15:04 MST")
	}
	return at(s.Next)
}

// last says how a task's latest slot went.
func last(s cron.TaskState, at func(time.Time) string) string {
	if s.Last.Due.IsZero() {
		return "none"
	}
	l := fmt.Sprintf("%v, slot %s", s.Last.Status, at(s.Last.Due))
	if s.Last.Attempt > 1 {
		l += fmt.Sprintf(", attempt %d", s.Last.Attempt)
	}
	return l
}

// viewTime is how the view schedule_runs_readable spells a time on SQLite:
// UTC, to the microsecond, of fixed width, so that its text sorts as time.
const viewTime = "2006-01-02T15:04:05.000000Z"

// printRecords prints the run records of the slots due at or after from, by
// task, as a person reads them with sqlite3: the view
// schedule_runs_readable spells the times and names the statuses and
// reasons. It returns how many it printed.
func printRecords(ctx context.Context, w io.Writer, db *sql.DB, from time.Time) (int, error) {
	rows, err := db.QueryContext(ctx, `SELECT job, due, status, reason, attempt, node, duration, err
		FROM schedule_runs_readable WHERE due >= ? ORDER BY job, due`, from.UTC().Format(viewTime))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tjob\tdue\tstatus\treason\tattempt\tnode\tduration\terr")
	n := 0
	for rows.Next() {
		var job, due, status, reason, node, msg string
		var attempt int
		var took sql.NullString // NULL for a slot that did not run
		if err := rows.Scan(&job, &due, &status, &reason, &attempt, &node, &took, &msg); err != nil {
			return n, err
		}
		fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", job, due, status, reason, attempt, node, took.String, msg)
		n++
	}
	if err := rows.Err(); err != nil {
		return n, err
	}
	tw.Flush()
	for line := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n")) // the padding of an empty err
	}
	return n, nil
}

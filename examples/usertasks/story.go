package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// The story's timeline, from its 0s: the whole second before the program
// started, so that the tasks' slots, on whole seconds, read 1s, 2s, 3s.
// The Table looks for changed definitions every 250ms by default; the
// changes are made between its looks, so that how long each took to be
// applied does not depend on a tie.
const (
	firstLook = 2400 * time.Millisecond // after the slots of 1s and 2s: the inventory
	addAt     = 2400 * time.Millisecond // an admin adds a run-once task
	updateAt  = 2600 * time.Millisecond // an admin changes report-shop-1's spec
	pauseAt   = 2800 * time.Millisecond // a user pauses report-shop-2: it will not run at 3s
	deleteAt  = 2900 * time.Millisecond // an admin deletes report-shop-9
	runNowAt  = 3200 * time.Millisecond // a user runs report-weekly now
	resumeAt  = 3500 * time.Millisecond // report-shop-2 resumes
	reviewAt  = 4300 * time.Millisecond // after the slots of 4s: the inventory and the records; the service stops
	// The service starts again more than a second (schedule.WithGrace)
	// after the time of a task added while it was down, 5s: too late for
	// that slot to count as on time, so it is caught up.
	restartAfter = 1300 * time.Millisecond
)

// typo is a definition as a user might type it, with a field that Task
// does not have: DecodeTasks refuses it, where encoding/json would drop
// the field and run the task without the retries its user asked for.
const typo = `[{"name": "report-shop-3", "handler": "report", "businessId": "shop-3",
	"spec": "0 9 * * *", "permanent": true, "retries": 3}]`

// report is what happened, for the tests.
type report struct {
	start     time.Time          // the story's 0s
	records   []schedule.Record  // every record the Observers got, in order, in both lives of the service
	refused   []error            // the definitions refused before the service started
	edits     []edit             // the changes made while the service ran
	inventory [][]cron.TaskState // the inventories printed
	rows      []int              // how many run records were printed from the view, at each print
	stopped   time.Time          // when the service stopped, before its restart
	errs      []error            // the errors of the Table's looks at the definitions
}

// An edit is a change of the definitions, and how long after it the Table
// had applied it.
type edit struct {
	what  string
	after time.Duration
}

// run tells the story, printing it to w.
func run(ctx context.Context, w io.Writer, cfg config) (*report, error) {
	s := &story{ctx: ctx, cfg: cfg, path: cfg.db, reports: &backend{hiccups: map[string]int{"shop-7": 1}}}
	s.tl = &timeline{w: w, start: time.Now().Truncate(time.Second)}
	s.rep = &report{start: s.tl.start}
	if s.path == "" {
		dir, err := os.MkdirTemp("", "usertasks-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		s.path = filepath.Join(dir, "tasks.db")
	}
	// The admin tool, with a Store of its own on the database, as another
	// process would have.
	admin, db, err := openStore(ctx, s.path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	s.defs = admin.Definitions()

	if err := s.seed(); err != nil {
		return s.rep, err
	}
	svc, err := s.start("the service starts: its Table follows the definitions, and looks for changes every " + cfg.poll.String())
	if err != nil {
		return s.rep, err
	}
	defer svc.stop()
	err = s.edit(svc)
	if err == nil {
		err = s.review(svc)
	}
	if err == nil {
		err = s.restart(svc)
	}
	return s.rep, err
}

// A story is what the acts of the story share.
type story struct {
	ctx     context.Context
	cfg     config
	path    string                // the SQLite file
	tl      *timeline             // prints the story
	defs    *sqlstore.Definitions // the admin tool's
	reports *backend

	mu  sync.Mutex // guards rep's records and errs, appended to by the Table's goroutines
	rep *report
}

// seed saves the definitions of tasks.json and -tasks, as an admin would.
// Those that could never run are refused, with a *cron.TaskError naming
// the field: the one with a typo by DecodeTasks, the one on February 30 by
// the store, which validates each definition (cron.Task.Validate) before
// it saves it, so that it never reaches a Table.
func (s *story) seed() error {
	s.tl.printf("0s is %s UTC; the definitions and the run records live in %s",
		s.tl.start.UTC().Format(time.TimeOnly), filepath.Base(s.path))
	if _, err := cron.DecodeTasks(strings.NewReader(typo)); err != nil {
		s.rep.refused = append(s.rep.refused, err)
		s.tl.printf("refused, \"retries\": 3 for \"retry\": {\"attempts\": 3}: %v", err)
	}
	seed, err := cron.DecodeTasks(bytes.NewReader(seedJSON))
	if err != nil {
		return err
	}
	leap := cron.Task{Name: "report-leap-day", Handler: "report", BusinessID: "shop-1", Spec: "0 9 30 2 *", Permanent: true}
	for _, t := range slices.Concat(seed, s.cfg.tasks, []cron.Task{leap}) {
		version, err := s.defs.Create(s.ctx, t)
		var bad *cron.TaskError
		switch {
		case errors.As(err, &bad) || errors.Is(err, sqlstore.ErrTaskExists):
			s.rep.refused = append(s.rep.refused, err)
			s.tl.printf("refused: %v", err)
		case err != nil:
			return err
		default:
			s.tl.printf("saved %s: %s (version %d)", t.Name, describe(t), version)
		}
	}
	return nil
}

// start starts the service, which prints every record its Table makes.
func (s *story) start(say string) (*service, error) {
	observe := func(r schedule.Record) {
		s.mu.Lock()
		s.rep.records = append(s.rep.records, r)
		s.mu.Unlock()
		s.tl.printf("%s", recordLine(r, s.tl.at))
	}
	refused := func(err error) {
		s.mu.Lock()
		s.rep.errs = append(s.rep.errs, err)
		s.mu.Unlock()
		s.tl.printf("the Table refused a definition: %v", err)
	}
	s.tl.printf("%s", say)
	return startService(s.ctx, s.path, s.cfg.poll, s.reports.report, observe, refused)
}

// inventory prints what the Table runs.
func (s *story) inventory(title string, table *cron.Table) {
	ts := table.Tasks()
	s.rep.inventory = append(s.rep.inventory, ts)
	s.tl.block(title, func(w io.Writer) { printInventory(w, ts, s.tl.at) })
}

// records prints the run records due at or after from.
func (s *story) records(title string, svc *service, from time.Time) error {
	var buf bytes.Buffer
	n, err := printRecords(s.ctx, &buf, svc.db, from)
	if err != nil {
		return err
	}
	s.rep.rows = append(s.rep.rows, n)
	s.tl.block(title, func(w io.Writer) { w.Write(buf.Bytes()) })
	return nil
}

// A change is one that users make to the definitions while the service
// runs, at a time of the story.
type change struct {
	at    time.Duration
	what  string
	name  string                                  // the task changed
	write func() error                            // makes the change
	done  func(t cron.TaskState, found bool) bool // whether the Table has applied it, from the task's state; nil: do not wait
}

// edit shows the inventory, then users change the definitions while the
// tasks run: through the admin tool, which the Table sees at its next
// look, and through the service (Pause, Resume, RunNow), which acts at
// once, here, and through the definitions on every replica. It shows each
// change applied, and how long that took.
func (s *story) edit(svc *service) error {
	if err := s.tl.sleepUntil(s.ctx, firstLook); err != nil {
		return err
	}
	s.inventory("the inventory (Table.Tasks):", svc.table)
	ctx, defs, table := s.ctx, s.defs, svc.table
	first := cron.Task{Name: "report-shop-4-first", Handler: "report", BusinessID: "shop-4",
		Spec: "* * * * * *", Once: true, End: time.Now().Add(time.Hour)}
	changes := []change{
		{addAt, "admin: adds report-shop-4-first, to run once, at the next second", first.Name,
			func() error { _, err := defs.Create(ctx, first); return err },
			func(t cron.TaskState, found bool) bool { return found }},
		{updateAt, "admin: report-shop-1 now runs every 3 seconds", "report-shop-1",
			func() error { return setSpec(ctx, defs, "report-shop-1", "*/3 * * * * *") },
			func(t cron.TaskState, found bool) bool { return t.Task.Spec == "*/3 * * * * *" }},
		{pauseAt, "a user pauses report-shop-2 (Table.Pause)", "report-shop-2",
			func() error { return table.Pause("report-shop-2") },
			func(t cron.TaskState, found bool) bool { return t.Task.Paused }},
		{deleteAt, "admin: deletes report-shop-9, which never ends within its timeout", "report-shop-9",
			func() error { return remove(ctx, defs, "report-shop-9") },
			func(t cron.TaskState, found bool) bool { return !found }},
		{runNowAt, "a user runs report-weekly now (Table.RunNow): a run with Reason Manual", "report-weekly",
			func() error { return table.RunNow("report-weekly") },
			nil},
		{resumeAt, "a user resumes report-shop-2 (Table.Resume): the slot it missed while paused is not caught up", "report-shop-2",
			func() error { return table.Resume("report-shop-2") },
			func(t cron.TaskState, found bool) bool { return !t.Task.Paused }},
	}
	for _, c := range changes {
		if err := s.tl.sleepUntil(ctx, c.at); err != nil {
			return err
		}
		if err := c.write(); err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		s.tl.printf("%s", c.what)
		if c.done == nil {
			continue
		}
		took, err := applied(ctx, table, c.name, c.done)
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		s.rep.edits = append(s.rep.edits, edit{c.what, took})
		t, found := find(table.Tasks(), c.name)
		s.tl.printf("  applied %v later: %s", took.Round(time.Millisecond), stateLine(t, found, s.tl.at))
	}
	return nil
}

// review shows what runs, and what ran.
func (s *story) review(svc *service) error {
	if err := s.tl.sleepUntil(s.ctx, reviewAt); err != nil {
		return err
	}
	s.inventory("the inventory again:", svc.table)
	return s.records("the run records, as sqlite3 shows the view schedule_runs_readable:", svc, s.tl.start)
}

// restart stops the service; while it is down, a user adds a task due a
// second later. The service starts again: the task runs at once, as does
// the latest slot each task missed, by their Misfire policy (run-once).
func (s *story) restart(svc *service) error {
	if err := svc.stop(); err != nil {
		return err
	}
	s.rep.stopped = time.Now()
	s.tl.printf("the service stops (Table.Stop, then the database is closed)")
	late := cron.Task{Name: "report-shop-5-first", Handler: "report", BusinessID: "shop-5",
		Spec: "* * * * * *", Once: true, End: time.Now().Add(time.Hour)}
	if _, err := s.defs.Create(s.ctx, late); err != nil {
		return err
	}
	late, _, err := s.defs.Get(s.ctx, late.Name) // with its Created: the task is owed its time since then
	if err != nil {
		return err
	}
	due := late.Created.Truncate(time.Second).Add(time.Second)
	s.tl.printf("admin: adds report-shop-5-first while the service is down, to run once at %s", s.tl.at(due))

	if err := s.tl.sleepUntil(s.ctx, due.Add(restartAfter).Sub(s.tl.start)); err != nil {
		return err
	}
	svc, err = s.start("the service starts again")
	if err != nil {
		return err
	}
	defer svc.stop()
	ran := func(t cron.TaskState, found bool) bool { return t.Last.Status == schedule.Succeeded }
	if _, err := applied(s.ctx, svc.table, late.Name, ran); err != nil {
		return fmt.Errorf("%s after the restart: %w", late.Name, err)
	}
	if err := s.records("the records of the slots due since the stop:", svc, s.rep.stopped); err != nil {
		return err
	}
	if err := svc.stop(); err != nil {
		return err
	}
	s.tl.printf("the service stops")
	return nil
}

// applied waits until the Table's inventory shows done of the task name,
// and returns how long that took. The Table applies a change at its next
// look at the definitions' version, within its poll interval, and a change
// made through it (Pause, Resume) at once. It looks 5ms after the change,
// then every 10ms: between the Table's looks, which the changes' times
// put on the story's 10ms grid.
func applied(ctx context.Context, table *cron.Table, name string, done func(s cron.TaskState, found bool) bool) (time.Duration, error) {
	start := time.Now()
	for wait := 5 * time.Millisecond; ; wait = 10 * time.Millisecond {
		if done(find(table.Tasks(), name)) {
			return time.Since(start), nil
		}
		if time.Since(start) > 5*time.Second {
			return 0, errors.New("not applied within 5s")
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// find returns the state of the task name, and whether there is one.
func find(ts []cron.TaskState, name string) (cron.TaskState, bool) {
	i := slices.IndexFunc(ts, func(s cron.TaskState) bool { return s.Task.Name == name })
	if i < 0 {
		return cron.TaskState{Task: cron.Task{Name: name}}, false
	}
	return ts[i], true
}

// stateLine says in a line what the inventory says of a task.
func stateLine(s cron.TaskState, found bool, at func(time.Time) string) string {
	if !found {
		return s.Task.Name + " is gone"
	}
	when := "next " + next(s, at)
	if s.Task.Paused {
		when = "paused"
	}
	return fmt.Sprintf("%s %s (%s); last %s; running %d", s.Task.Name, when, describe(s.Task), last(s, at), s.Running)
}

// recordLine says in a line what a record says: its task, slot and
// outcome, and its reason, attempt and error when they say more.
func recordLine(r schedule.Record, at func(time.Time) string) string {
	s := fmt.Sprintf("%-19s slot %-5s %v", r.Job, at(r.Due), r.Status)
	if r.Reason != schedule.Scheduled {
		s += " (" + r.Reason.String() + ")"
	}
	if r.Attempt > 1 || r.Status == schedule.Failed {
		s += ", attempt " + strconv.Itoa(r.Attempt)
	}
	if r.Err != "" {
		s += ": " + r.Err
	}
	return s
}

// A backend stands in for the work of a report: 20ms, but a second for
// shop-9, whose task's timeout cuts it short; and a failure for each
// hiccup of a shop (shop-7's database is waking up), which its task's
// retry policy runs again.
type backend struct {
	mu      sync.Mutex
	hiccups map[string]int // the failures left, by shop
}

// report is the one Handler of the service: every task names it, with the
// shop to report on as its business id.
func (b *backend) report(ctx context.Context, shop string, r schedule.Run) error {
	b.mu.Lock()
	fail := b.hiccups[shop] > 0
	if fail {
		b.hiccups[shop]--
	}
	b.mu.Unlock()
	if fail {
		return fmt.Errorf("%s: database is waking up", shop)
	}
	work := 20 * time.Millisecond
	if shop == "shop-9" {
		work = time.Second
	}
	select {
	case <-time.After(work):
		return nil
	case <-ctx.Done():
		return ctx.Err() // the task's timeout, or the service stopping
	}
}

// A timeline prints the story's lines, each with its time in the story.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time // 0s
}

func (tl *timeline) printf(format string, args ...any) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	fmt.Fprintf(tl.w, "%5.2fs  %s\n", time.Since(tl.start).Seconds(), fmt.Sprintf(format, args...))
}

// block prints a title line, and what f writes under it, with no line of
// others in between.
func (tl *timeline) block(title string, f func(io.Writer)) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	fmt.Fprintf(tl.w, "%5.2fs  %s\n", time.Since(tl.start).Seconds(), title)
	f(tl.w)
}

// at spells t as a time of the story: "3s", "3.25s".
func (tl *timeline) at(t time.Time) string {
	return strconv.FormatFloat(t.Sub(tl.start).Round(10*time.Millisecond).Seconds(), 'f', -1, 64) + "s"
}

// sleepUntil waits until d into the story.
func (tl *timeline) sleepUntil(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(time.Until(tl.start.Add(d)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

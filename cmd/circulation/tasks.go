package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// The tasks commands that read or write one definition, and the list.

// A taskRow is a definition as tasks list and show write it in JSON: the
// task in cron.Task's JSON form, as a file of definitions holds it.
type taskRow struct {
	Task        cron.Task  `json:"task"`
	Version     int64      `json:"version"`
	Updated     *time.Time `json:"updated,omitempty"`
	Description string     `json:"description,omitempty"`
	Last        *record    `json:"last"`
	History     []*record  `json:"history,omitempty"`
}

const listUsage = "circulation tasks list"

func (c *cli) tasksList(args []string) error {
	fs := c.flags("tasks list")
	if _, err := c.parse(fs, listUsage, args, 0, 0); err != nil {
		return err
	}
	s, done, err := c.store()
	if err != nil {
		return err
	}
	defer done()
	defs, err := s.Definitions().List(c.ctx)
	if err != nil {
		return err
	}
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Task.Name
	}
	last, err := s.LastOf(c.ctx, names)
	if err != nil {
		return err
	}
	if c.json {
		rows := make([]taskRow, len(defs))
		for i, d := range defs {
			upd := d.Updated
			rows[i] = taskRow{Task: d.Task, Version: d.Version, Updated: &upd}
			if r, ok := last[d.Task.Name]; ok {
				rows[i].Last = toRecord(r)
			}
		}
		return c.writeJSON(rows)
	}
	t := c.newTable("NAME", "HANDLER", "SPEC", "ZONE", "PAUSED", "VERSION", "LAST")
	for _, d := range defs {
		lastRun := ""
		if r, ok := last[d.Task.Name]; ok {
			lastRun = r.Status.String() + " " + when(r.Due, time.Local)
		}
		t.row(d.Task.Name, d.Task.Handler, d.Task.Spec, d.Task.Zone, yesNo(d.Task.Paused), strconv.FormatInt(d.Version, 10), lastRun)
	}
	return t.flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

const showUsage = "circulation tasks show NAME [-n 5]"

func (c *cli) tasksShow(args []string) error {
	fs := c.flags("tasks show")
	n := fs.Int("n", 5, "the latest runs to show")
	rest, err := c.parse(fs, showUsage, args, 1, 1)
	if err != nil {
		return err
	}
	if *n < 0 {
		return usagef(showUsage, "tasks show: -n %d is negative", *n)
	}
	s, done, err := c.store()
	if err != nil {
		return err
	}
	defer done()
	task, version, err := s.Definitions().Get(c.ctx, rest[0])
	if err != nil {
		return err
	}
	hist, err := s.History(c.ctx, task.Name, *n)
	if err != nil {
		return err
	}
	desc, err := cron.Describe(zoned(task))
	if err != nil {
		desc = err.Error()
	}
	if c.json {
		row := taskRow{Task: task, Version: version, Description: desc, History: []*record{}}
		for _, r := range hist {
			row.History = append(row.History, toRecord(r))
		}
		if len(hist) > 0 {
			row.Last = row.History[0]
		}
		return c.writeJSON(row)
	}
	t := c.newTable("name:", task.Name)
	field := func(name, v string) {
		if v != "" {
			t.row(name+":", v)
		}
	}
	field("handler", task.Handler)
	field("business id", task.BusinessID)
	field("spec", task.Spec+" ("+desc+")")
	field("zone", task.Zone)
	field("start", whenSet(task.Start))
	field("end", whenSet(task.End))
	field("permanent", yesIf(task.Permanent))
	field("once", yesIf(task.Once))
	field("max runs", nonZero(task.MaxRuns))
	field("calendars", strings.Join(task.Calendars, ", "))
	field("paused", yesIf(task.Paused))
	field("pause note", task.PauseNote)
	field("paused until", whenSet(task.PausedUntil))
	field("pause on failures", nonZero(task.PauseOnFailures))
	field("overlap", task.Overlap)
	field("misfire", task.Misfire)
	field("timeout", durationSet(task.Timeout))
	if task.Retry.Attempts > 0 {
		field("retry", fmt.Sprintf("%d attempts, backoff %v", task.Retry.Attempts, task.Retry.Backoff))
	}
	field("catch-up window", durationSet(task.CatchUpWindow))
	field("jitter", durationSet(task.Jitter))
	field("created", whenSet(task.Created))
	field("version", strconv.FormatInt(version, 10))
	if err := t.flush(); err != nil {
		return err
	}
	if len(hist) == 0 {
		fmt.Fprintln(c.stdout, "\nno runs recorded")
		return nil
	}
	fmt.Fprintln(c.stdout, "\nlatest runs:")
	return c.records(hist, time.Local)
}

// zoned returns t's spec with its zone, so that its description says
// what the zone's clocks do to it: "CRON_TZ=Europe/Paris 0 9 * * *".
func zoned(t cron.Task) string {
	if t.Zone == "" || strings.HasPrefix(t.Spec, "CRON_TZ=") || strings.HasPrefix(t.Spec, "TZ=") {
		return t.Spec
	}
	return "CRON_TZ=" + t.Zone + " " + t.Spec
}

func yesIf(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

func nonZero(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func whenSet(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return when(t, time.Local)
}

func durationSet(d cron.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

const createUsage = "circulation tasks create NAME -handler H -spec SPEC [FIELD FLAGS] | -f FILE"

func (c *cli) tasksCreate(args []string) error {
	fs := c.flags("tasks create")
	def := addDefFlags(fs)
	file := fs.String("f", "", "a JSON file of definitions (- for stdin) to create, all or none, instead of NAME and flags")
	rest, err := c.parse(fs, createUsage, args, 0, 1)
	if err != nil {
		return err
	}
	var tasks []cron.Task
	var f *taskFile
	switch {
	case *file != "" && (len(rest) > 0 || def.given()):
		return usagef(createUsage+flagList(fs), "tasks create: -f with a name or the flags of a field")
	case *file != "":
		if f, err = c.readTasks(*file); err != nil {
			return err
		}
		tasks = f.tasks
	case len(rest) == 0:
		return usagef(createUsage+flagList(fs), "tasks create: missing NAME")
	default:
		t := cron.Task{Name: rest[0]}
		def.apply(&t)
		tasks = []cron.Task{t}
	}
	s, done, err := c.store()
	if err != nil {
		return err
	}
	defer done()
	if f == nil {
		_, err = s.Definitions().Create(c.ctx, tasks[0])
	} else {
		err = f.error(s.Definitions().CreateMany(c.ctx, tasks))
	}
	if err != nil {
		return err
	}
	if f == nil {
		c.audit(s, cron.AuditEntry{Action: "create", Kind: "task", Name: tasks[0].Name, Detail: created(tasks[0])})
	} else {
		es := make([]cron.AuditEntry, len(tasks))
		for i, t := range tasks {
			es[i] = cron.AuditEntry{Action: "create", Kind: "task", Name: t.Name, Detail: created(t) + ", from " + f.name}
		}
		c.auditMany(s, es)
	}
	if c.json {
		return c.writeJSON(struct {
			Created []string `json:"created"`
			Version int64    `json:"version"`
		}{names(tasks), 1})
	}
	if len(tasks) == 1 {
		fmt.Fprintf(c.stdout, "created task %s, version 1\n", cell(tasks[0].Name))
	} else {
		fmt.Fprintf(c.stdout, "created %d tasks, version 1\n", len(tasks))
	}
	return nil
}

func names(tasks []cron.Task) []string {
	ns := make([]string, len(tasks))
	for i, t := range tasks {
		ns[i] = t.Name
	}
	return ns
}

const editUsage = "circulation tasks edit NAME [FIELD FLAGS] [-version N] | -f FILE [-version N]"

func (c *cli) tasksEdit(args []string) error {
	fs := c.flags("tasks edit")
	def := addDefFlags(fs)
	file := fs.String("f", "", "a JSON file of one definition (- for stdin) that replaces the task's")
	version := fs.Int64("version", 0, "the version the edit is of: refused if the task is at another (default: the version read)")
	rest, err := c.parse(fs, editUsage, args, 0, 1)
	if err != nil {
		return err
	}
	var from *cron.Task
	switch {
	case *file != "" && def.given():
		return usagef(editUsage+flagList(fs), "tasks edit: -f with the flags of a field")
	case *file != "":
		f, err := c.readTasks(*file)
		if err != nil {
			return err
		}
		if len(f.tasks) != 1 {
			return fmt.Errorf("%s: %d definitions, where edit takes one", f.name, len(f.tasks))
		}
		if len(rest) > 0 && rest[0] != f.tasks[0].Name {
			return fmt.Errorf("%s: the definition of task %q, not of %q", f.name, f.tasks[0].Name, rest[0])
		}
		from = &f.tasks[0]
	case len(rest) == 0:
		return usagef(editUsage+flagList(fs), "tasks edit: missing NAME")
	case !def.given():
		return usagef(editUsage+flagList(fs), "tasks edit: no field to change")
	}
	s, done, err := c.store()
	if err != nil {
		return err
	}
	defer done()
	name := ""
	if from != nil {
		name = from.Name
	} else {
		name = rest[0]
	}
	task, cur, err := s.Definitions().Get(c.ctx, name)
	if err != nil {
		return err
	}
	old := task
	if from != nil {
		task = *from
	} else {
		def.apply(&task)
	}
	if *version != 0 {
		cur = *version
	}
	v, err := s.Definitions().Update(c.ctx, task, cur)
	if err != nil {
		return err
	}
	c.audit(s, cron.AuditEntry{Action: "edit", Kind: "task", Name: name, Detail: cron.TaskChanges(old, task)})
	if c.json {
		return c.writeJSON(struct {
			Name    string `json:"name"`
			Version int64  `json:"version"`
		}{name, v})
	}
	fmt.Fprintf(c.stdout, "updated task %s to version %d\n", cell(name), v)
	return nil
}

const pauseUsage = "circulation tasks pause NAME [-note TEXT] [-for DURATION | -until TIME]"

func (c *cli) tasksPause(args []string) error {
	fs := c.flags("tasks pause")
	note := fs.String("note", "", "why the task is paused, and by whom")
	length := fs.Duration("for", 0, "how long the pause lasts: the task resumes by itself after it")
	until := fs.String("until", "", "when the task resumes by itself, an RFC 3339 time")
	rest, err := c.parse(fs, pauseUsage, args, 1, 1)
	if err != nil {
		return err
	}
	pn := schedule.PauseNote{Note: *note}
	switch {
	case *length != 0 && *until != "":
		return usagef(pauseUsage, "tasks pause: -for or -until, not both")
	case *length < 0:
		return usagef(pauseUsage, "tasks pause: -for %v is negative", *length)
	case *length > 0:
		pn.Until = time.Now().Add(*length)
	case *until != "":
		if pn.Until, err = time.Parse(time.RFC3339, *until); err != nil {
			return usagef(pauseUsage, "tasks pause: -until: %v", err)
		}
	}
	return c.setPaused(rest[0], true, pn)
}

const resumeUsage = "circulation tasks resume NAME"

func (c *cli) tasksResume(args []string) error {
	fs := c.flags("tasks resume")
	rest, err := c.parse(fs, resumeUsage, args, 1, 1)
	if err != nil {
		return err
	}
	return c.setPaused(rest[0], false, schedule.PauseNote{})
}

// setPaused pauses or resumes the task name, for every Table that follows
// the definitions.
func (c *cli) setPaused(name string, paused bool, note schedule.PauseNote) error {
	s, done, err := c.store()
	if err != nil {
		return err
	}
	defer done()
	if err := s.Definitions().SetPaused(c.ctx, name, paused, note); err != nil {
		return err
	}
	e := cron.AuditEntry{Action: "resume", Kind: "task", Name: name}
	if paused {
		e.Action = "pause"
		var parts []string
		if note.Note != "" {
			parts = append(parts, "note "+strconv.Quote(note.Note))
		}
		if !note.Until.IsZero() {
			parts = append(parts, "until "+note.Until.UTC().Format(time.RFC3339))
		}
		e.Detail = strings.Join(parts, ", ")
	}
	c.audit(s, e)
	if c.json {
		return c.writeJSON(struct {
			Name   string `json:"name"`
			Paused bool   `json:"paused"`
		}{name, paused})
	}
	verb := "resumed"
	if paused {
		verb = "paused"
	}
	fmt.Fprintf(c.stdout, "%s task %s\n", verb, cell(name))
	return nil
}

const deleteUsage = "circulation tasks delete NAME [-version N]"

func (c *cli) tasksDelete(args []string) error {
	fs := c.flags("tasks delete")
	version := fs.Int64("version", 0, "the version deleted: refused if the task is at another (default: the version read)")
	rest, err := c.parse(fs, deleteUsage, args, 1, 1)
	if err != nil {
		return err
	}
	s, done, err := c.store()
	if err != nil {
		return err
	}
	defer done()
	defs := s.Definitions()
	v := *version
	if v == 0 {
		if _, v, err = defs.Get(c.ctx, rest[0]); err != nil {
			return err
		}
	}
	if err := defs.Delete(c.ctx, rest[0], v); err != nil {
		return err
	}
	c.audit(s, cron.AuditEntry{Action: "delete", Kind: "task", Name: rest[0], Detail: fmt.Sprintf("version %d", v)})
	if c.json {
		return c.writeJSON(struct {
			Deleted string `json:"deleted"`
		}{rest[0]})
	}
	fmt.Fprintf(c.stdout, "deleted task %s\n", cell(rest[0]))
	return nil
}

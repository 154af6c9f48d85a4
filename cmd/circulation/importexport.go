package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

const importUsage = "circulation tasks import FILE [-sync]"

// tasksImport creates or replaces every definition of a file, all or none
// (sqlstore.Definitions.Import).
func (c *cli) tasksImport(args []string) error {
	fs := c.flags("tasks import")
	sync := fs.Bool("sync", false, "also delete the definitions the file does not name")
	rest, err := c.parse(fs, importUsage, args, 1, 1)
	if err != nil {
		return err
	}
	f, err := c.readTasks(rest[0])
	if err != nil {
		return err
	}
	s, done, err := c.store()
	if err != nil {
		return err
	}
	defer done()
	var opts []sqlstore.ImportOption
	if *sync {
		opts = append(opts, sqlstore.DeleteOthers())
	}
	res, err := s.Definitions().Import(c.ctx, f.tasks, opts...)
	if err != nil {
		return f.error(err)
	}
	var es []cron.AuditEntry
	for _, n := range res.CreatedNames {
		es = append(es, cron.AuditEntry{Action: "create", Kind: "task", Name: n, Detail: "imported from " + f.name})
	}
	for _, n := range res.ReplacedNames {
		es = append(es, cron.AuditEntry{Action: "edit", Kind: "task", Name: n, Detail: "replaced by its definition in " + f.name})
	}
	for _, n := range res.DeletedNames {
		es = append(es, cron.AuditEntry{Action: "delete", Kind: "task", Name: n, Detail: "not in " + f.name + " (-sync)"})
	}
	c.auditMany(s, es)
	if c.json {
		return c.writeJSON(struct {
			Created   int `json:"created"`
			Replaced  int `json:"replaced"`
			Unchanged int `json:"unchanged"`
			Deleted   int `json:"deleted"`
		}{res.Created, res.Replaced, res.Unchanged, res.Deleted})
	}
	fmt.Fprintf(c.stdout, "imported %s: %d created, %d replaced, %d unchanged, %d deleted\n",
		f.name, res.Created, res.Replaced, res.Unchanged, res.Deleted)
	return nil
}

const exportUsage = "circulation tasks export [-o FILE]"

// tasksExport writes every definition as a JSON array of cron.Task
// objects, sorted by name, which import reads.
func (c *cli) tasksExport(args []string) error {
	fs := c.flags("tasks export")
	out := fs.String("o", "", "the file to write, instead of standard output")
	if _, err := c.parse(fs, exportUsage, args, 0, 0); err != nil {
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
	tasks := make([]cron.Task, len(defs))
	for i, d := range defs {
		tasks[i] = d.Task
	}
	data, err := json.MarshalIndent(tasks, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if *out == "" {
		_, err = c.stdout.Write(data)
		return err
	}
	return os.WriteFile(*out, data, 0o644)
}

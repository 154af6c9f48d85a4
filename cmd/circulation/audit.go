package main

import (
	"fmt"
	"os"
	"os/user"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// audit writes e to the audit log of s's definitions, the one the admin
// page shows, as done by c's user through this command. The change is
// made whatever happens to its entry: a failure is a warning on stderr,
// not an exit status.
func (c *cli) audit(s *sqlstore.Store, e cron.AuditEntry) {
	e.Actor = c.actor()
	if err := s.Definitions().Audit(c.ctx, e); err != nil {
		fmt.Fprintf(c.stderr, "circulation: warning: the change was made, but not written to the audit log: %v\n", err)
	}
}

// auditMany writes es as audit does one, a statement for each thousand.
func (c *cli) auditMany(s *sqlstore.Store, es []cron.AuditEntry) {
	if len(es) == 0 {
		return
	}
	who := c.actor()
	for i := range es {
		es[i].Actor = who
	}
	if err := s.Definitions().AuditMany(c.ctx, es); err != nil {
		fmt.Fprintf(c.stderr, "circulation: warning: the changes were made, but not written to the audit log: %v\n", err)
	}
}

// actor names who runs the command, for the audit log: -user, or the
// system's user@host, and the command's name.
func (c *cli) actor() string {
	who := c.user
	if who == "" {
		who = "unknown"
		if u, err := user.Current(); err == nil {
			who = u.Username
		}
		if h, err := os.Hostname(); err == nil {
			who += "@" + h
		}
	}
	return who + " (circulation command)"
}

// created says in words what a task created is.
func created(t cron.Task) string {
	s := fmt.Sprintf("spec %q, handler %q", t.Spec, t.Handler)
	if t.Zone != "" {
		s += ", zone " + t.Zone
	}
	return s
}

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// Each change the command makes is in the audit log that the admin page
// shows, with who made it (-user, or $CIRCULATION_USER) and what changed;
// a command that changes nothing writes no entry.
func TestAuditLog(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		db, dsn, table := b.open(t)
		ok(t, args(db, "migrate")...)
		as := func(more ...string) { ok(t, append(args(db, "-user", "ana"), more...)...) }
		as("tasks", "create", "report", "-handler", "mail", "-spec", "0 9 * * *", "-permanent")
		as("tasks", "edit", "report", "-spec", "0 10 * * *")
		as("tasks", "pause", "report", "-note", "db upgrade")
		as("tasks", "resume", "report")
		file, _ := tasksFile(t, manyTasks(3))
		as("tasks", "import", file)
		as("tasks", "import", file) // unchanged: no entry
		as("tasks", "delete", "report")
		r := cmd(t, "", args(db, "-user", "ana", "tasks", "delete", "report")...)
		require.Equal(t, 1, r.code, "gone already: refused, no entry")

		s, err := sqlstore.New(ctx, openDB(t, b.driver, dsn), b.dialect, sqlstore.WithTable(table))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		es, err := s.Definitions().AuditLog(ctx, cron.AuditQuery{})
		require.NoError(t, err)
		var got []string
		for _, e := range es {
			assert.Equal(t, "ana (circulation command)", e.Actor)
			got = append([]string{e.Action + " " + e.Name + ": " + e.Detail}, got...)
		}
		assert.Equal(t, []string{
			`create report: spec "0 9 * * *", handler "mail"`,
			`edit report: spec: "0 9 * * *" → "0 10 * * *"`,
			`pause report: note "db upgrade"`,
			`resume report: `,
			`create t00000: imported from ` + file,
			`create t00001: imported from ` + file,
			`create t00002: imported from ` + file,
			`delete report: version 4`,
		}, got)
	})
}

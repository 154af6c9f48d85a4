package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// A file of definitions created or imported leaves an entry under the name
// of each task it created, replaced or deleted.
func TestImportAuditsEachTask(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		db, dsn, table := b.open(t)
		ok(t, args(db, "migrate")...)
		file, _ := tasksFile(t, manyTasks(2))
		ok(t, args(db, "-user", "ana", "tasks", "create", "-f", file)...)
		other, _ := tasksFile(t, manyTasks(1))
		ok(t, args(db, "-user", "ana", "tasks", "import", "-sync", other)...) // deletes t00001

		s, err := sqlstore.New(ctx, openDB(t, b.driver, dsn), b.dialect, sqlstore.WithTable(table))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		for _, name := range []string{"t00000", "t00001"} {
			es, err := s.Definitions().AuditLog(ctx, cron.AuditQuery{Name: name})
			require.NoError(t, err)
			assert.NotEmpty(t, es, "task %s: created (and %s) by the command, no entry of its own", name, map[string]string{"t00000": "kept", "t00001": "deleted"}[name])
		}
	})
}

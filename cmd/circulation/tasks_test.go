package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
)

// listed is tasks list -json, read.
func listed(t *testing.T, db []string) []taskRow {
	t.Helper()
	var rows []taskRow
	require.NoError(t, json.Unmarshal([]byte(ok(t, args(db, "tasks", "list", "-json")...)), &rows))
	return rows
}

// migrated returns the flags of a database of b with its tables made by
// migrate.
func migrated(t *testing.T, b backend) []string {
	t.Helper()
	db, _, _ := b.open(t)
	ok(t, args(db, "migrate")...)
	return db
}

func TestTasks(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		db := migrated(t, b)
		assert.Equal(t, "created task report, version 1\n", ok(t, args(db, "tasks", "create", "report", "-handler", "mail",
			"-spec", "0 9 * * 1-5", "-zone", "Europe/Paris", "-permanent", "-business-id", "shop-1", "-timeout", "90s",
			"-retry-attempts", "3", "-retry-backoff", "10s", "-calendars", "")...))
		// The flags may come before the command too.
		ok(t, append(db, "-json", "tasks", "create", "-handler", "mail", "cleanup", "-spec", "@every 1h", "-once")...)

		r := cmd(t, "", args(db, "tasks", "create", "report", "-handler", "mail", "-spec", "@every 1h", "-permanent")...)
		assert.Equal(t, 1, r.code, "a name defined already")
		assert.Equal(t, `circulation: sqlstore: task already defined: "report"`+"\n", r.err)
		r = cmd(t, "", args(db, "tasks", "create", "bad", "-handler", "mail", "-spec", "0 9 * * 1-5", "-zone", "Mars/Base", "-permanent")...)
		assert.Equal(t, 1, r.code, "a zone that does not load")
		assert.True(t, strings.HasPrefix(r.err, `circulation: cron: task "bad": zone: `), r.err)
		r = cmd(t, "", args(db, "tasks", "create", "bad", "-handler", "mail", "-spec", "0 9 * * 1-5")...)
		assert.Equal(t, 1, r.code, "neither end nor permanent")
		assert.True(t, strings.HasPrefix(r.err, `circulation: cron: task "bad": end: `), r.err)
		r = cmd(t, "", args(db, "tasks", "create", "bad", "-handler", "mail", "-spec", "0 9 * * *", "-timeout", "soon")...)
		assert.Equal(t, 2, r.code, "a flag's value that does not read")
		assert.Contains(t, r.err, `invalid value "soon" for flag -timeout`)

		rows := listed(t, db)
		require.Len(t, rows, 2)
		rep := rows[1]
		assert.Equal(t, cron.Task{Name: "report", Handler: "mail", BusinessID: "shop-1", Spec: "0 9 * * 1-5",
			Zone: "Europe/Paris", Permanent: true, Timeout: cron.Duration(90 * time.Second),
			Retry: cron.Retry{Attempts: 3, Backoff: cron.Duration(10 * time.Second)}, Created: rep.Task.Created}, rep.Task)
		assert.Equal(t, int64(1), rep.Version)
		assert.WithinDuration(t, time.Now(), rep.Task.Created, time.Minute)
		assert.Nil(t, rep.Last, "never ran")
		assert.Equal(t, "cleanup", rows[0].Task.Name)
		assert.True(t, rows[0].Task.Once)

		out := ok(t, args(db, "tasks", "list")...)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.Len(t, lines, 3, out)
		assert.Regexp(t, `^NAME +HANDLER +SPEC +ZONE +PAUSED +VERSION +LAST$`, lines[0])
		assert.Regexp(t, `^cleanup +mail +@every 1h +- +no +1 +-$`, lines[1])
		assert.Regexp(t, `^report +mail +0 9 \* \* 1-5 +Europe/Paris +no +1 +-$`, lines[2])

		out = ok(t, args(db, "tasks", "show", "report")...)
		assert.Regexp(t, `(?m)^spec: +0 9 \* \* 1-5 \(At 09:00 in Europe/Paris, Monday through Friday\)$`, out)
		assert.Regexp(t, `(?m)^retry: +3 attempts, backoff 10s$`, out)
		assert.Contains(t, out, "no runs recorded")

		// An edit changes the fields given, at the version read.
		assert.Equal(t, "updated task report to version 2\n", ok(t, args(db, "tasks", "edit", "report", "-spec", "0 10 * * 1-5")...))
		r = cmd(t, "", args(db, "tasks", "edit", "report", "-version", "1", "-business-id", "shop-2")...)
		assert.Equal(t, 1, r.code, "a stale version")
		assert.Equal(t, "circulation: sqlstore: stale version: task \"report\" is at version 2, not 1\n", r.err)
		r = cmd(t, "", args(db, "tasks", "edit", "report", "-spec", "0 10 * * 1-5", "-end", "2020-01-01T00:00:00Z", "-permanent=false")...)
		assert.Equal(t, 1, r.code)
		assert.True(t, strings.HasPrefix(r.err, `circulation: cron: task "report": end: `), r.err)
		r = cmd(t, "", args(db, "tasks", "edit", "nobody", "-spec", "@every 1h")...)
		assert.Equal(t, 1, r.code)
		assert.Equal(t, "circulation: sqlstore: task \"nobody\": cron: unknown task\n", r.err)
		r = cmd(t, "", args(db, "tasks", "edit", "report")...)
		assert.Equal(t, 2, r.code, "nothing to change")

		// Pause with a note and an end, then resume.
		assert.Equal(t, "paused task report\n", ok(t, args(db, "tasks", "pause", "report", "-note", "db migration, ana", "-for", "2h")...))
		var shown taskRow
		require.NoError(t, json.Unmarshal([]byte(ok(t, args(db, "tasks", "show", "report", "-json")...)), &shown))
		assert.True(t, shown.Task.Paused)
		assert.Equal(t, "db migration, ana", shown.Task.PauseNote)
		assert.WithinDuration(t, time.Now().Add(2*time.Hour), shown.Task.PausedUntil, time.Minute)
		assert.Equal(t, "0 10 * * 1-5", shown.Task.Spec)
		assert.Equal(t, int64(3), shown.Version)
		assert.Equal(t, "At 10:00 in Europe/Paris, Monday through Friday", shown.Description)
		assert.Regexp(t, `(?m)^report +mail +0 10 \* \* 1-5 +Europe/Paris +yes +3 +-$`, ok(t, args(db, "tasks", "list")...))
		assert.Equal(t, "resumed task report\n", ok(t, args(db, "tasks", "resume", "report")...))
		rows = listed(t, db)
		assert.False(t, rows[1].Task.Paused)
		assert.Empty(t, rows[1].Task.PauseNote)
		r = cmd(t, "", args(db, "tasks", "pause", "nobody")...)
		assert.Equal(t, 1, r.code)

		// An edit from a file replaces the whole definition.
		file := writeFile(t, `{"name": "report", "handler": "mail", "spec": "@every 2h", "permanent": true}`)
		ok(t, args(db, "tasks", "edit", "-f", file)...)
		rows = listed(t, db)
		assert.Equal(t, cron.Task{Name: "report", Handler: "mail", Spec: "@every 2h", Permanent: true, Created: rows[1].Task.Created}, rows[1].Task)

		// Deletion, at the version read or the one given.
		r = cmd(t, "", args(db, "tasks", "delete", "report", "-version", "1")...)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.err, "stale version")
		assert.Equal(t, "deleted task report\n", ok(t, args(db, "tasks", "delete", "report")...))
		assert.Equal(t, "deleted task cleanup\n", ok(t, args(db, "tasks", "delete", "cleanup", "-version", "1")...))
		assert.Empty(t, listed(t, db))
		r = cmd(t, "", args(db, "tasks", "show", "report")...)
		assert.Equal(t, result{err: "circulation: sqlstore: task \"report\": cron: unknown task\n", code: 1}, r)
	})
}

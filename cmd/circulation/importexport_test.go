package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// manyTasks returns n valid definitions, "t00000" and on.
func manyTasks(n int) []cron.Task {
	specs := []string{"*/5 * * * *", "0 9 * * 1-5", "30 2 * * *", "@every 90m", "0 0 1 * *"}
	zones := []string{"", "UTC", "Europe/Paris", "America/New_York"}
	ts := make([]cron.Task, n)
	for i := range ts {
		ts[i] = cron.Task{Name: fmt.Sprintf("t%05d", i), Handler: "h", BusinessID: fmt.Sprint("b-", i%7),
			Spec: specs[i%len(specs)], Zone: zones[i%len(zones)], Permanent: true}
	}
	return ts
}

// tasksFile writes tasks to a JSON file, one field a line, as an editor
// keeps it, and returns its path and its text.
func tasksFile(t *testing.T, tasks []cron.Task) (string, string) {
	t.Helper()
	data, err := json.MarshalIndent(tasks, "", "  ")
	require.NoError(t, err)
	return writeFile(t, string(data)), string(data)
}

// lineAt returns the line of text, a file of tasksFile, where its
// definition at index i begins.
func lineAt(t *testing.T, text string, i int) int {
	t.Helper()
	p := 0
	for range i + 1 {
		k := strings.Index(text[p:], "\n  {")
		require.GreaterOrEqual(t, k, 0, "definition %d", i)
		p += k + 1
	}
	return strings.Count(text[:p], "\n") + 1
}

// exported is tasks export, read, without the times of creation.
func exported(t *testing.T, db []string) []cron.Task {
	t.Helper()
	ts, err := cron.DecodeTasks(strings.NewReader(ok(t, args(db, "tasks", "export")...)))
	require.NoError(t, err)
	for i := range ts {
		require.False(t, ts[i].Created.IsZero(), "export writes when each was created")
		ts[i].Created = time.Time{}
	}
	return ts
}

func TestImportExport(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		db := migrated(t, b)
		tasks := manyTasks(10_000)

		// One definition that cannot run refuses the 10,000, naming its
		// line, index, task and field.
		bad := append([]cron.Task(nil), tasks...)
		bad[7123].Spec = "0 0 31 2 *" // February 31
		file, text := tasksFile(t, bad)
		for _, cmdline := range [][]string{{"tasks", "import", file}, {"tasks", "create", "-f", file}} {
			r := cmd(t, "", args(db, cmdline...)...)
			assert.Equal(t, 1, r.code, cmdline)
			want := "circulation: " + file + ":" + strconv.Itoa(lineAt(t, text, 7123)) + `: task "t07123" at index 7123: spec: `
			assert.True(t, strings.HasPrefix(r.err, want), "%s\nwant %s", r.err, want)
			assert.Equal(t, 1, strings.Count(r.err, "\n"), "one line")
			assert.Empty(t, r.out)
		}
		assert.Empty(t, listed(t, db), "none written")

		// Several refused: each on its line.
		bad[12].Handler = ""
		bad[9000].Name = bad[8000].Name
		file, text = tasksFile(t, bad)
		r := cmd(t, "", args(db, "tasks", "import", file)...)
		assert.Equal(t, 1, r.code)
		lines := strings.Split(strings.TrimSuffix(r.err, "\n"), "\n")
		require.Len(t, lines, 3, r.err)
		assert.True(t, strings.HasPrefix(lines[0], "circulation: "+file+":"+strconv.Itoa(lineAt(t, text, 12))+`: task "t00012" at index 12: handler: `), lines[0])
		assert.True(t, strings.HasPrefix(lines[1], file+":"+strconv.Itoa(lineAt(t, text, 7123))+`: task "t07123" at index 7123: spec: `), lines[1])
		assert.Equal(t, file+":"+strconv.Itoa(lineAt(t, text, 9000))+`: task "t08000" at index 9000: sqlstore: task already defined, at index 8000`, lines[2])

		// A field that does not exist, found as the file is read.
		text = strings.Replace(text, `"name": "t00003",`, `"name": "t00003", "enabled": true,`, 1)
		file = writeFile(t, text)
		r = cmd(t, "", args(db, "tasks", "import", file)...)
		assert.Equal(t, result{code: 1, err: "circulation: " + file + ":" + strconv.Itoa(lineAt(t, text, 3)) +
			": task \"t00003\" at index 3: enabled: unknown field\n"}, r)
		r = cmd(t, "", args(db, "tasks", "import", writeFile(t, "[{\"name\": \"a\",\n\"spec\": }]"))...)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.err, "tasks.json:2: ", "a syntax error names its line")

		// All good: all created, in one write.
		file, _ = tasksFile(t, tasks)
		assert.Equal(t, "imported "+file+": 10000 created, 0 replaced, 0 unchanged, 0 deleted\n", ok(t, args(db, "tasks", "import", file)...))
		assert.Equal(t, tasks, exported(t, db), "exported as imported")

		// The export, imported again, changes nothing.
		out := filepath.Join(t.TempDir(), "export.json")
		assert.Empty(t, ok(t, args(db, "tasks", "export", "-o", out)...))
		assert.Equal(t, "imported "+out+": 0 created, 0 replaced, 10000 unchanged, 0 deleted\n", ok(t, args(db, "tasks", "import", out)...))

		// Edited: ten changed, a hundred gone, one new; synced.
		edited := append([]cron.Task(nil), tasks[100:]...)
		for i := range 10 {
			edited[i*500].Spec = "0 12 * * *"
		}
		edited = append(edited, cron.Task{Name: "zz new", Handler: "h", Spec: "@every 1h", Permanent: true})
		file, _ = tasksFile(t, edited)
		var res map[string]int
		require.NoError(t, json.Unmarshal([]byte(ok(t, args(db, "tasks", "import", file, "-sync", "-json")...)), &res))
		assert.Equal(t, map[string]int{"created": 1, "replaced": 10, "unchanged": 9890, "deleted": 100}, res)
		assert.Equal(t, edited, exported(t, db))
		rows := listed(t, db)
		require.Len(t, rows, len(edited))
		assert.Equal(t, int64(2), rows[0].Version, "t00100, edited")
		assert.Equal(t, int64(1), rows[1].Version, "t00101, as it was")

		// The export into another database, from standard input.
		var other []string
		if b.dialect == sqlstore.PostgreSQL {
			tb := tableFor(t) + "_b"
			pool := openDB(t, "pgx", pg.dsn)
			require.NoError(t, sqlstore.Drop(ctx, pool, b.dialect, tb))
			t.Cleanup(func() { _ = sqlstore.Drop(ctx, pool, b.dialect, tb) })
			other = args(db, "-table", tb)
		} else {
			other = []string{"-db", filepath.Join(t.TempDir(), "other.db")}
		}
		ok(t, args(other, "migrate")...)
		r = cmd(t, ok(t, args(db, "tasks", "export")...), args(other, "tasks", "import", "-")...)
		require.Equal(t, 0, r.code, r.err)
		assert.Equal(t, "imported stdin: 9901 created, 0 replaced, 0 unchanged, 0 deleted\n", r.out)
		assert.Equal(t, edited, exported(t, other))
	})
}

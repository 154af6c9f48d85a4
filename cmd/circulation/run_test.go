package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// eventually runs the command with args until ready says its output is
// what the test waits for, for up to 15 s, and returns that output.
func eventually(t *testing.T, what string, ready func(out string) bool, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out := ok(t, args...)
		if ready(out) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15s; last output:\n%s", what, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A listedNode is a node of nodes -json.
type listedNode struct {
	Name      string
	Live      bool
	RunLimit  int
	Heartbeat time.Time
}

// TestRunHistoryNodes runs a service in the test, a cron.Table following
// the definitions behind its admin page, and asks it to run a task with
// the command; then reads the run's record and the service's node.
func TestRunHistoryNodes(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		db, dsn, table := b.open(t)
		ok(t, args(db, "migrate")...)
		ok(t, args(db, "tasks", "create", "report", "-handler", "h", "-spec", "0 0 1 1 *", "-permanent")...) // no slot during the test

		// The service.
		s, err := sqlstore.New(ctx, openDB(t, b.driver, dsn), b.dialect, sqlstore.WithTable(table),
			sqlstore.WithLease(2*time.Second), sqlstore.WithNode("node-a"), sqlstore.WithRunLimit(77))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		ran := make(chan string, 10)
		h := func(_ context.Context, _ string, r schedule.Run) error {
			ran <- r.Job
			return nil
		}
		tab := cron.NewTable(map[string]cron.Handler{"h": h}, cron.WithStore(s), cron.WithLocation(time.UTC))
		require.NoError(t, tab.Follow(ctx, s.Definitions(), cron.WithPollInterval(100*time.Millisecond)))
		t.Cleanup(func() { _ = tab.Stop(context.Background()) })
		page := admin.New(admin.Options{Table: tab, Store: s, Definitions: s.Definitions(),
			Authorize: func(r *http.Request) bool {
				u, p, ok := r.BasicAuth()
				return ok && u == "ops" && p == "secret"
			}})
		srv := httptest.NewServer(page)
		t.Cleanup(srv.Close)
		withAuth := "http://ops:secret@" + strings.TrimPrefix(srv.URL, "http://")

		r := cmd(t, "", args(db, "tasks", "run", "report")...)
		assert.Equal(t, 2, r.code, "no -admin")
		assert.Contains(t, r.err, "circulation: tasks run: no -admin URL")
		r = cmd(t, "", args(db, "tasks", "run", "report", "-admin", srv.URL)...)
		assert.Equal(t, result{code: 1, err: "circulation: the admin page answered 403 Forbidden: You may look, not change anything.\n"}, r)
		assert.Empty(t, ran, "refused, not run")
		r = cmd(t, "", args(db, "tasks", "run", "nobody", "-admin", withAuth)...)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.err, "circulation: the admin page answered 404 Not Found: ")

		assert.Equal(t, "asked the service to run task report now\n", ok(t, args(db, "tasks", "run", "report", "-admin", withAuth)...))
		select {
		case job := <-ran:
			assert.Equal(t, "report", job)
		case <-time.After(15 * time.Second):
			t.Fatal("the task did not run")
		}

		// Its record, once finished.
		out := eventually(t, "the run recorded Succeeded", func(out string) bool { return strings.Contains(out, `"Succeeded"`) },
			args(db, "history", "report", "-json")...)
		var recs []record
		require.NoError(t, json.Unmarshal([]byte(out), &recs))
		require.Len(t, recs, 1)
		assert.Equal(t, "report", recs[0].Job)
		assert.Equal(t, "Manual", recs[0].Reason)
		assert.Equal(t, 1, recs[0].Attempt)
		assert.WithinDuration(t, time.Now(), recs[0].Due, time.Minute)
		require.NotNil(t, recs[0].End)
		lines := strings.Split(strings.TrimSuffix(ok(t, args(db, "history", "report", "-zone", "Asia/Tokyo")...), "\n"), "\n")
		require.Len(t, lines, 2)
		assert.Regexp(t, `^DUE +STATUS +REASON +ATTEMPT +NODE +DURATION +ERROR$`, lines[0])
		assert.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d JST +Succeeded +Manual +1 +\S+ +\S+ +-$`, lines[1])
		assert.Equal(t, "[]\n", ok(t, args(db, "history", "nobody", "-json")...))
		assert.Equal(t, "no runs recorded for nobody\n", ok(t, args(db, "history", "nobody")...))
		assert.Regexp(t, `(?m)^report +h +0 0 1 1 \* +- +no +1 +Succeeded \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$`, ok(t, args(db, "tasks", "list")...))

		// The service's node.
		out = eventually(t, "node-a listed", func(out string) bool { return strings.Contains(out, `"node-a"`) },
			args(db, "nodes", "-json")...)
		var nodes []listedNode
		require.NoError(t, json.Unmarshal([]byte(out), &nodes))
		i := slices.IndexFunc(nodes, func(n listedNode) bool { return n.Name == "node-a" })
		require.GreaterOrEqual(t, i, 0)
		assert.True(t, nodes[i].Live)
		assert.Equal(t, 77, nodes[i].RunLimit)
		assert.WithinDuration(t, time.Now(), nodes[i].Heartbeat, time.Minute)
		assert.Regexp(t, `(?m)^node-a +yes +0 +77 +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC +`, ok(t, args(db, "nodes")...))

		// A paused task is not run.
		ok(t, args(db, "tasks", "pause", "report")...)
		deadline := time.Now().Add(15 * time.Second)
		for st, _ := tab.TasksOf(ctx, "report"); len(st) == 0 || !st[0].Task.Paused; st, _ = tab.TasksOf(ctx, "report") {
			require.True(t, time.Now().Before(deadline), "the service did not pause the task")
			time.Sleep(50 * time.Millisecond)
		}
		r = cmd(t, "", args(db, "tasks", "run", "report", "-admin", withAuth)...)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.err, "circulation: the admin page answered 409 Conflict: ")
	})
}

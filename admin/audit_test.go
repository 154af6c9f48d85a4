package admin_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
)

// memAudit is an audit log in memory, as *sqlstore.Definitions keeps
// one: ids in order, text cut, newest first. With down set, Audit fails.
type memAudit struct {
	mu      sync.Mutex
	entries []cron.AuditEntry
	down    bool
}

func (a *memAudit) Audit(_ context.Context, e cron.AuditEntry) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.down {
		return errors.New("connection refused")
	}
	e = e.Clip(time.Now())
	e.ID = int64(len(a.entries) + 1)
	a.entries = append(a.entries, e)
	return nil
}

func (a *memAudit) AuditLog(_ context.Context, q cron.AuditQuery) ([]cron.AuditEntry, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []cron.AuditEntry
	for _, e := range slices.Backward(a.entries) {
		if (q.Name == "" || e.Name == q.Name) && (q.Kind == "" || e.Kind == q.Kind) && (q.Before == 0 || e.ID < q.Before) && len(out) < q.Max() {
			out = append(out, e)
		}
	}
	return out, nil
}

// summary returns each entry as "actor action kind name: detail", oldest
// first.
func (a *memAudit) summary() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var s []string
	for _, e := range a.entries {
		s = append(s, e.Actor+" "+e.Action+" "+e.Kind+" "+e.Name+": "+e.Detail)
	}
	return s
}

// auditing sets the fixture's page to keep its audit log in a, naming
// the user by the header X-User.
func auditing(a *memAudit) func(*admin.Options) {
	return func(o *admin.Options) {
		o.Audit = a
		o.User = func(r *http.Request) string { return r.Header.Get("X-User") }
	}
}

// Every change made through the page is in the audit log once, with who
// made it, and an edit with the fields it changed; the log's page, its
// JSON and the task's page show them, escaped.
func TestAuditLogOfThePage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a memAudit
		f := newFixture(t, auditing(&a))
		defer f.stop()
		as := func(user string, target string, fv ...string) response {
			t.Helper()
			res := f.do(http.MethodPost, target, form(fv...), "Content-Type", "application/x-www-form-urlencoded", "X-User", user)
			require.Less(t, res.status, 400, res.body)
			assert.NotContains(t, res.header.Get("Location"), "audit=failed")
			return res
		}
		as("alice", "/jobs/create", "name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "zone", "Europe/Paris", "permanent", "1", "version", "0")
		as("bob", "/jobs/update", "name", "shop 1", "handler", "ok", "spec", "0 10 * * *", "zone", "Europe/Paris", "permanent", "1",
			"jitter", "30s", "version", "1")
		synctest.Wait()
		as("<script>x()</script>", "/jobs/pause", "kind", "task", "name", "shop 1", "note", "database <b>upgrade</b>", "for", "2h")
		as("alice", "/jobs/resume", "kind", "task", "name", "shop 1")
		as("alice", "/jobs/run", "kind", "job", "name", "report")
		_, v, err := f.defs.Get(context.Background(), "shop 1")
		require.NoError(t, err)
		as("carol", "/jobs/delete", "name", "shop 1", "version", strconv.FormatInt(v, 10), "confirm", "1")
		assert.Equal(t, []string{
			`alice create task shop 1: spec "0 9 * * *", handler "ok", zone Europe/Paris`,
			`bob edit task shop 1: spec: "0 9 * * *" → "0 10 * * *"; jitter: 0s → 30s`,
			`<script>x()</script> pause task shop 1: note "database <b>upgrade</b>", for 2h`,
			`alice resume task shop 1: `,
			`alice run job report: `,
			`carol delete task shop 1: `,
		}, a.summary())

		page := f.get("/jobs/audit")
		require.Equal(t, 200, page.status)
		assert.NotContains(t, page.body, "<script>x()")
		assert.NotContains(t, page.body, "<b>upgrade")
		assert.Contains(t, page.body, "&lt;script&gt;x()&lt;/script&gt;")
		assert.Contains(t, page.body, `href="job?name=report"`)
		assert.Contains(t, page.body, `<a class="nav" href="audit">Audit log</a>`)

		var log struct {
			Name    string            `json:"name"`
			Entries []cron.AuditEntry `json:"entries"`
			Before  int64             `json:"before"`
		}
		f.getJSON("/jobs/api/audit?name=shop+1", 200, &log)
		require.Len(t, log.Entries, 5)
		assert.Equal(t, "delete", log.Entries[0].Action, "newest first")
		assert.Equal(t, "carol", log.Entries[0].Actor)
		assert.Zero(t, log.Before, "no older page")

		job := f.get("/jobs/job?name=report")
		assert.Contains(t, job.body, "<h2>Changes</h2>")
		assert.Contains(t, job.body, `href="audit?kind=job&amp;name=report"`)
	})
}

// A change whose entry cannot be written is made all the same, and the
// page, the JSON answer and a bulk action's page say that it went
// unrecorded.
func TestAuditLogDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := memAudit{down: true}
		f := newFixture(t, auditing(&a), task("nightly"))
		defer f.stop()
		synctest.Wait()
		res := f.post("/jobs/pause", form("kind", "task", "name", "nightly"))
		require.Equal(t, 303, res.status, res.body)
		assert.Contains(t, res.header.Get("Location"), "audit=failed")
		page := f.get("/jobs/" + res.header.Get("Location"))
		assert.Contains(t, page.body, "the audit log could not record it")
		ts, err := f.table.TasksOf(context.Background(), "nightly")
		require.NoError(t, err)
		assert.True(t, ts[0].Task.Paused, "paused all the same")

		api := f.do(http.MethodPost, "/jobs/api/resume", form("kind", "task", "name", "nightly"), "Content-Type", "application/x-www-form-urlencoded")
		require.Equal(t, 200, api.status, api.body)
		assert.Contains(t, api.body, `"audit":"the change was made, but not written to the audit log"`)

		page = f.get("/jobs/audit")
		assert.Contains(t, page.body, "No entry.")
	})
}

package admin_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
)

// ctxAudit is a memAudit that, as a database does, fails once the
// context of the call is done.
type ctxAudit struct{ memAudit }

func (a *ctxAudit) Audit(ctx context.Context, e cron.AuditEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return a.memAudit.Audit(ctx, e)
}

// A change is audited even if its client goes away as it is made: the
// entry is written with a context of its own.
func TestAuditEntryOutlivesTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &ctxAudit{}
		f := newFixture(t, func(o *admin.Options) { o.Audit = a }, task("nightly"))
		defer f.stop()
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the client hung up
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://admin.test/jobs/pause",
			strings.NewReader(form("kind", "task", "name", "nightly").Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		f.h.ServeHTTP(httptest.NewRecorder(), r)
		ts, err := f.table.TasksOf(context.Background(), "nightly")
		require.NoError(t, err)
		require.True(t, ts[0].Task.Paused, "the pause was made")
		assert.Equal(t, []string{" pause task nightly: "}, a.summary(), "the pause has no entry")
	})
}

// A task's or job's page shows the entries of its kind only: a calendar
// of the same name has entries of its own.
func TestAuditChangesAreOfTheirKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a memAudit
		f := newFixture(t, func(o *admin.Options) { auditing(&a)(o); withCalendars(o) })
		defer f.stop()
		res := f.post("/jobs/create-calendar", form("name", "report", "days", "2000-01-02", "version", "0"))
		require.Equal(t, 303, res.status, res.body)
		require.Len(t, a.summary(), 1)
		job := f.get("/jobs/job?name=report")
		assert.NotContains(t, job.body, `<td data-label="To">calendar`, "a calendar's change shown as the job's")
	})
}

// A Job's page has its Run, Pause and Resume buttons (a phone's list has
// none), and does not call the job undefined.
func TestJobPageHasItsButtons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		defer f.stop()
		page := f.get("/jobs/job?name=report")
		require.Equal(t, 200, page.status)
		assert.Contains(t, page.body, `<form method="post" action="run"`, "no Run button on the job's page")
		assert.NotContains(t, page.body, "not loaded yet")
	})
}

// The audit page's link to older entries leads to them.
func TestAuditOlderLinkWorks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a memAudit
		f := newFixture(t, func(o *admin.Options) { auditing(&a)(o); o.PageSize = 2 })
		defer f.stop()
		for _, n := range []string{"x y", "x y", "other", "x y"} {
			require.NoError(t, a.Audit(context.Background(), cron.AuditEntry{Action: "run", Kind: "job", Name: n}))
		}
		page := f.get("/jobs/audit?name=x+y")
		require.Equal(t, 200, page.status)
		i := strings.Index(page.body, `rel="next"`)
		require.Positive(t, i, page.body)
		j := strings.LastIndex(page.body[:i], `href="`)
		href := page.body[j+len(`href="`):]
		href = html.UnescapeString(href[:strings.IndexByte(href, '"')])
		t.Log(href)
		var log struct {
			Entries []cron.AuditEntry `json:"entries"`
		}
		f.getJSON("/jobs/api/"+href, 200, &log)
		require.Len(t, log.Entries, 1, "the older page of x y: its first entry")
		assert.Equal(t, int64(1), log.Entries[0].ID)
	})
}

// getFails is memDefs whose Get fails while down is set, as a database
// that fails a read between two writes.
type getFails struct {
	*memDefs
	down bool
}

func (d *getFails) Get(ctx context.Context, name string) (cron.Task, int64, error) {
	if d.down {
		return cron.Task{}, 0, context.DeadlineExceeded
	}
	return d.memDefs.Get(ctx, name)
}

// An edit whose definition before could not be read says so, rather than
// record every field as changed from empty.
func TestAuditEditOldUnread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a memAudit
		var g *getFails
		f := newFixture(t, func(o *admin.Options) {
			auditing(&a)(o)
			g = &getFails{memDefs: o.Definitions.(*memDefs)}
			o.Definitions = g
		}, task("nightly"))
		defer f.stop()
		g.down = true
		res := f.post("/jobs/update", form("name", "nightly", "handler", "ok", "spec", "0 10 * * *", "permanent", "1", "version", "1"))
		require.Equal(t, 303, res.status, res.body)
		s := a.summary()
		require.Len(t, s, 1)
		assert.NotContains(t, s[0], `handler: "" → "ok"`, "a field that did not change recorded as changed")
	})
}

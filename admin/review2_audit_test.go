package admin_test

import (
	"context"
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

// REVIEW: the entry of a change is written with the request's context:
// a client that goes away once it has sent its POST (a closed browser
// tab, curl -m, a proxy timeout) has its change made, and no entry kept.
// An audit log that the actor can skip by hanging up is no audit log.
func TestReviewAuditEntryOutlivesTheRequest(t *testing.T) {
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

// REVIEW: a task's or job's page reads the audit log by Name alone: the
// entries of a calendar that has the job's name show as the job's
// changes, and "Every change of it" lists them too.
func TestReviewAuditChangesAreOfTheirKind(t *testing.T) {
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

package admin_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
)

// withCalendars gives the page the fixture's definitions as its
// Calendars.
func withCalendars(o *admin.Options) { o.Calendars = o.Definitions.(admin.Calendars) }

// days returns the dates of ts, in UTC.
func days(ts []time.Time) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.UTC().Format(time.DateOnly))
	}
	return out
}

// TestCalendars makes a calendar through the forms, names it in a task,
// and checks that the task's page, its preview and the Table pass over its
// days; it edits the calendar, and the next runs follow; a calendar a
// task names is not deleted, a stale edit is refused, and a calendar's
// texts reach the page as text.
func TestCalendars(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, withCalendars)
		defer f.stop()
		ctx := context.Background()

		assert.Contains(t, f.get("/jobs/").body, `href="calendars"`, "the list links to the calendars")
		page := f.get("/jobs/calendars")
		require.Equal(t, 200, page.status)
		assert.Contains(t, page.body, "No calendar yet.")
		assert.Contains(t, page.body, `href="new-calendar"`)
		assert.Equal(t, 200, f.get("/jobs/new-calendar").status)

		res := f.post("/jobs/create-calendar", form("name", "off", "days", "2000-01-02\r\n2000-01-04..2000-01-05\r\n", "note", "<b>closed</b>", "version", "0"))
		require.Equal(t, 303, res.status, res.body)
		assert.Equal(t, "calendars?done=calendar-created", res.header.Get("Location"))
		c, v, err := f.defs.GetCalendar(ctx, "off")
		require.NoError(t, err)
		assert.Equal(t, int64(1), v)
		assert.Equal(t, cron.Calendar{Name: "off", Days: []string{"2000-01-02", "2000-01-04..2000-01-05"}, Note: "<b>closed</b>"}, c)
		page = f.get("/jobs/calendars?done=calendar-created")
		assert.Contains(t, page.body, "Calendar created")
		assert.Contains(t, page.body, "<code>2000-01-02</code>, <code>2000-01-04..2000-01-05</code>")
		assert.Contains(t, page.body, "&lt;b&gt;closed&lt;/b&gt;")
		assert.NotContains(t, page.body, "<b>closed")
		assert.Contains(t, page.body, `href="edit-calendar?name=off"`)
		var list struct {
			Calendars []cron.Calendar `json:"calendars"`
		}
		f.getJSON("/jobs/api/calendars", 200, &list)
		assert.Equal(t, []cron.Calendar{c}, list.Calendars)

		// A calendar refused, its field marked.
		res = f.post("/jobs/create-calendar", form("name", "bad", "days", "2000-02-30"))
		assert.Equal(t, 422, res.status)
		assert.Contains(t, res.body, "there is no such date")
		assert.Contains(t, res.body, `name="days" rows="8" spellcheck="false" aria-invalid="true"`)
		res = f.post("/jobs/create-calendar", form("name", "off"))
		assert.Equal(t, 409, res.status)
		assert.Contains(t, res.body, "A calendar of this name exists already")

		// The task form offers the calendars; a task naming one passes
		// over its days.
		assert.Contains(t, f.get("/jobs/new").body, `<option value="off">`)
		res = f.post("/jobs/create", form("name", "payroll", "handler", "ok", "spec", "0 9 * * *", "permanent", "1", "calendars", " off ,", "version", "0"))
		require.Equal(t, 303, res.status, res.body)
		got, _, err := f.defs.Get(ctx, "payroll")
		require.NoError(t, err)
		assert.Equal(t, []string{"off"}, got.Calendars)
		synctest.Wait() // the Table applied it
		var d jsonDetail
		f.getJSON("/jobs/api/task?name=payroll", 200, &d)
		require.True(t, d.Loaded)
		assert.Equal(t, []string{"2000-01-01", "2000-01-03", "2000-01-06", "2000-01-07"}, days(d.Upcoming[:4]))
		assert.Equal(t, []string{"off"}, d.Definition.Calendars)
		page = f.get("/jobs/task?name=payroll")
		assert.Contains(t, page.body, "passes over the days of <code>off</code>")
		page = f.get("/jobs/edit?name=payroll")
		assert.Contains(t, page.body, `id="calendars" name="calendars" value="off"`)
		assert.Contains(t, page.body, `datetime="2000-01-03T09:00:00Z"`, "the preview passes over the days off")
		assert.NotContains(t, page.body, `datetime="2000-01-02T09:00:00Z"`)

		var p jsonPreview
		f.getJSON("/jobs/api/preview?spec=0+9+*+*+*&calendars=off", 200, &p)
		assert.Equal(t, []string{"2000-01-01", "2000-01-03", "2000-01-06", "2000-01-07", "2000-01-08"}, days(p.Next))
		f.getJSON("/jobs/api/preview?spec=0+9+*+*+*&calendars=off,nope", 422, &p)
		assert.Equal(t, "calendars", p.Field)
		assert.Equal(t, `no calendar "nope"`, p.Error)

		// Edited: the Table and the page follow at once.
		page = f.get("/jobs/edit-calendar?name=off")
		require.Equal(t, 200, page.status)
		assert.Contains(t, page.body, `name="version" value="1"`)
		assert.Contains(t, page.body, "2000-01-02\n2000-01-04..2000-01-05</textarea>")
		res = f.post("/jobs/update-calendar", form("name", "off", "days", "2000-01-03", "version", "1"))
		require.Equal(t, 303, res.status, res.body)
		synctest.Wait()
		f.getJSON("/jobs/api/task?name=payroll", 200, &d)
		assert.Equal(t, []string{"2000-01-01", "2000-01-02", "2000-01-04"}, days(d.Upcoming[:3]))
		next, _ := f.table.Next("payroll")
		assert.Equal(t, "2000-01-01", next.Format(time.DateOnly))
		res = f.post("/jobs/update-calendar", form("name", "off", "days", "2000-01-09", "version", "1"))
		assert.Equal(t, 409, res.status)
		assert.Contains(t, res.body, "Someone changed this calendar since you opened it (it is at version 2, you edited version 1)")

		// Named by a task: not deleted.
		res = f.post("/jobs/delete-calendar", form("name", "off", "version", "2", "confirm", "1"))
		assert.Equal(t, 409, res.status)
		assert.Contains(t, res.body, "named by the task &#34;payroll&#34;")
		_, _, err = f.defs.GetCalendar(ctx, "off")
		require.NoError(t, err)
		require.NoError(t, f.defs.Delete(ctx, "payroll", 1))
		res = f.post("/jobs/delete-calendar", form("name", "off", "version", "2"))
		assert.Equal(t, 400, res.status, "the box unticked")
		assert.Contains(t, res.body, "Tick the box that says yes")
		res = f.post("/jobs/delete-calendar", form("name", "off", "version", "2", "confirm", "1"))
		require.Equal(t, 303, res.status, res.body)
		assert.Equal(t, "calendars?done=calendar-deleted", res.header.Get("Location"))

		// From another site: refused.
		res = f.do("POST", "/jobs/create-calendar", form("name", "x"), "Sec-Fetch-Site", "cross-site")
		assert.Equal(t, 403, res.status)

		// A name that is markup reaches the page as text.
		const evil = `<script>alert("x")</script>`
		require.Equal(t, 303, f.post("/jobs/create-calendar", form("name", evil, "note", evil)).status)
		page = f.get("/jobs/calendars")
		assert.NotContains(t, page.body, "<script>alert")
		assert.Contains(t, page.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	})
}

// Without Calendars, the page has no calendars, and a task's form has no
// calendars field.
func TestNoCalendars(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		defer f.stop()
		assert.Equal(t, 404, f.get("/jobs/calendars").status)
		assert.Equal(t, 404, f.get("/jobs/new-calendar").status)
		assert.NotContains(t, f.get("/jobs/").body, `href="calendars"`)
		assert.NotContains(t, f.get("/jobs/new").body, `name="calendars"`)
	})
}

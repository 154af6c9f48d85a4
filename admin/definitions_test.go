package admin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
)

// TestCreateEditDelete makes a task through the forms, edits it, and
// deletes it, and checks that the Table follows.
func TestCreateEditDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		defer f.stop()

		res := f.post("/jobs/create", form("name", "shop 1", "handler", "ok", "businessId", "shop-1",
			"spec", "0 9 * * 1-5", "zone", "Europe/Paris", "permanent", "1", "overlap", "buffer-one", "misfire", "skip",
			"timeout", "90s", "retry.attempts", "3", "retry.backoff", "10s", "catchUpWindow", "2h", "maxRuns", "40", "jitter", "30s", "version", "0"))
		require.Equal(t, 303, res.status, res.body)
		assert.Equal(t, "task?done=created&name=shop+1", res.header.Get("Location"))
		got, v, err := f.defs.Get(context.Background(), "shop 1")
		require.NoError(t, err)
		assert.Equal(t, int64(1), v)
		assert.Equal(t, cron.Task{Name: "shop 1", Handler: "ok", BusinessID: "shop-1", Spec: "0 9 * * 1-5", Zone: "Europe/Paris",
			Permanent: true, Overlap: "buffer-one", Misfire: "skip", Timeout: cron.Duration(90 * time.Second),
			Retry: cron.Retry{Attempts: 3, Backoff: cron.Duration(10 * time.Second)}, CatchUpWindow: cron.Duration(2 * time.Hour),
			MaxRuns: 40, Jitter: cron.Duration(30 * time.Second), Created: got.Created}, got)
		synctest.Wait() // the Table applied it
		var d jsonDetail
		f.getJSON("/jobs/api/task?name=shop+1", 200, &d)
		assert.True(t, d.Loaded)
		assert.Equal(t, "Europe/Paris", d.Zone)
		assert.Equal(t, "At 09:00 in Europe/Paris, Monday through Friday", d.Description, "09:00 is never skipped nor repeated in Paris")
		assert.Equal(t, 9, d.Next.Hour(), "the next run, in the task's zone")
		page := f.get("/jobs/task?name=shop+1&done=created")
		assert.Contains(t, page.body, "Created: the Table loads it")
		assert.Contains(t, page.body, "<dd>skip, if missed within 2h0m0s</dd>")
		assert.Contains(t, page.body, `href="edit?name=shop%201"`)

		// The edit form holds the definition, and its version.
		page = f.get("/jobs/edit?name=shop+1")
		require.Equal(t, 200, page.status)
		for _, want := range []string{`name="version" value="1"`, `value="0 9 * * 1-5"`, `value="Europe/Paris"`,
			`<option value="buffer-one" selected>`, `<option value="buffer-all">`, `<option value="skip" selected>`, `value="1m30s"`, `value="2h0m0s"`, "At 09:00 in Europe/Paris"} {
			assert.Contains(t, page.body, want)
		}

		// A window, in the task's zone.
		res = f.post("/jobs/update", form("name", "shop 1", "handler", "ok", "spec", "0 9 * * 1-5", "zone", "Europe/Paris",
			"start", "2000-06-01T08:00", "end", "2000-12-31T23:59:59", "version", "1"))
		require.Equal(t, 303, res.status, res.body)
		got, v, _ = f.defs.Get(context.Background(), "shop 1")
		assert.Equal(t, int64(2), v)
		assert.Equal(t, time.Date(2000, 6, 1, 6, 0, 0, 0, time.UTC), got.Start.UTC(), "08:00 in Paris in summer")
		assert.Equal(t, time.Date(2000, 12, 31, 22, 59, 59, 0, time.UTC), got.End.UTC())
		assert.False(t, got.Permanent)

		// Another user saves meanwhile: the edit of version 2 is stale.
		other := got
		other.Spec = "0 10 * * *"
		f.defs.set(other)
		res = f.post("/jobs/update", form("name", "shop 1", "handler", "ok", "spec", "0 11 * * *", "permanent", "1", "version", "2"))
		assert.Equal(t, 409, res.status)
		assert.Contains(t, res.body, "Someone changed this task since you opened it (it is at version 3, you edited version 2)")
		assert.Contains(t, res.body, "<code>0 10 * * *</code>", "the definition in force")
		assert.Contains(t, res.body, `value="0 11 * * *"`, "the user's edit, kept")
		assert.Contains(t, res.body, `name="version" value="3"`, "saving again replaces the other's")
		got, _, _ = f.defs.Get(context.Background(), "shop 1")
		assert.Equal(t, "0 10 * * *", got.Spec)
		require.Equal(t, 303, f.post("/jobs/update", form("name", "shop 1", "handler", "ok", "spec", "0 11 * * *", "permanent", "1", "version", "3")).status)

		// Refused definitions, with the field at fault.
		for _, c := range []struct {
			kv    []string
			field string
		}{
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * *", "permanent", "1"}, "spec"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "zone", "Mars/Olympus", "permanent", "1"}, "zone"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *"}, "end"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "start", "tomorrow", "permanent", "1"}, "start"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "timeout", "-1s", "permanent", "1"}, "timeout"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "retry.attempts", "x", "permanent", "1"}, "retry.attempts"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "catchUpWindow", "soon", "permanent", "1"}, "catchUpWindow"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "catchUpWindow", "1.5s", "permanent", "1"}, "catchUpWindow"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "maxRuns", "x", "permanent", "1"}, "maxRuns"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "maxRuns", "-1", "permanent", "1"}, "maxRuns"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "jitter", "1.5s", "permanent", "1"}, "jitter"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "paused", "1", "pausedUntil", "later", "permanent", "1"}, "pausedUntil"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "pauseOnFailures", "x", "permanent", "1"}, "pauseOnFailures"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "pauseOnFailures", "101", "permanent", "1"}, "pauseOnFailures"},
			{[]string{"name", "shop 1", "handler", "ok", "spec", "*/70 * * * *", "permanent", "1"}, "spec"},
		} {
			res = f.post("/jobs/update", form(append(c.kv, "version", "4")...))
			assert.Equal(t, 422, res.status, c.kv)
			assert.Contains(t, res.body, `id="`+c.field+`" name="`+c.field+`"`, c.field)
			assert.Regexp(t, `id="`+strings.ReplaceAll(c.field, ".", `\.`)+`" name="[^"]*"[^>]* aria-invalid="true"`, res.body, c.field)
		}
		res = f.post("/jobs/update", form("name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "maxRuns", "99999999999999999999", "permanent", "1", "version", "4"))
		assert.Equal(t, 422, res.status)
		assert.Contains(t, res.body, "is out of range: want 0 to 100000", "a number too large for an int is no less a number")
		res = f.post("/jobs/update", form("name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "maxRuns", "100001", "permanent", "1", "version", "4"))
		assert.Equal(t, 422, res.status)
		assert.Contains(t, res.body, "100001 is more than 100000")
		res = f.post("/jobs/create", form("name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "permanent", "1"))
		assert.Equal(t, 409, res.status)
		assert.Contains(t, res.body, "A task of this name exists already")

		// "Check the spec" previews, and saves nothing.
		res = f.post("/jobs/update", form("name", "shop 1", "handler", "ok", "spec", "*/20 * * * *", "permanent", "1", "version", "4", "check", "1"))
		assert.Equal(t, 200, res.status)
		assert.Contains(t, res.body, "Every 20 minutes in UTC")
		assert.Contains(t, res.body, "2000-01-01 00:20:00 UTC", "the next runs, on the test's clock")
		_, v, _ = f.defs.Get(context.Background(), "shop 1")
		assert.Equal(t, int64(4), v)

		// Delete: a stale version is refused, the current one deletes.
		res = f.post("/jobs/delete", form("name", "shop 1", "version", "4"))
		assert.Equal(t, 400, res.status, "the form's box unticked")
		assert.Contains(t, res.body, "Tick the box that says yes")
		_, _, err = f.defs.Get(context.Background(), "shop 1")
		require.NoError(t, err, "not deleted")
		res = f.post("/jobs/delete", form("name", "shop 1", "version", "3", "confirm", "1"))
		assert.Equal(t, 409, res.status)
		assert.Contains(t, res.body, "open it again before you delete it")
		res = f.post("/jobs/delete", form("name", "shop 1", "version", "4", "confirm", "1"))
		require.Equal(t, 303, res.status)
		assert.Equal(t, "./?done=deleted", res.header.Get("Location"))
		synctest.Wait()
		assert.Equal(t, 404, f.get("/jobs/task?name=shop+1").status)
		_, ok := f.table.Next("shop 1")
		assert.False(t, ok, "the Table removed the task")

		// An edit of a task deleted meanwhile.
		res = f.post("/jobs/update", form("name", "shop 1", "handler", "ok", "spec", "0 9 * * *", "permanent", "1", "version", "4"))
		assert.Equal(t, 404, res.status)
		assert.Contains(t, res.body, "no longer defined")
	})
}

// TestDefinitionsJSON makes, edits and deletes a task with the JSON
// routes, as a script does.
func TestDefinitionsJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		defer f.stop()
		post := f.postJSON
		res := post("/jobs/api/create", `{"task": {"name": "nightly", "handler": "ok", "spec": "0 2 * * *", "permanent": true}}`)
		require.Equal(t, 200, res.status, res.body)
		assert.JSONEq(t, `{"kind": "task", "name": "nightly", "done": "created", "version": 1}`, res.body)

		var def struct {
			Task    cron.Task `json:"task"`
			Version int64     `json:"version"`
		}
		f.getJSON("/jobs/api/definition?name=nightly", 200, &def)
		assert.Equal(t, "0 2 * * *", def.Task.Spec)
		assert.Equal(t, int64(1), def.Version)

		res = post("/jobs/api/update", `{"version": 1, "task": {"name": "nightly", "handler": "ok", "spec": "0 3 * * *", "permanent": true}}`)
		require.Equal(t, 200, res.status, res.body)
		assert.JSONEq(t, `{"kind": "task", "name": "nightly", "done": "updated", "version": 2}`, res.body)

		var fl jsonFailure
		res = post("/jobs/api/update", `{"version": 1, "task": {"name": "nightly", "handler": "ok", "spec": "0 4 * * *", "permanent": true}}`)
		assert.Equal(t, 409, res.status)
		require.NoError(t, json.Unmarshal([]byte(res.body), &fl))
		assert.Contains(t, fl.Error, "it is at version 2, you edited version 1")

		res = post("/jobs/api/update", `{"version": 2, "task": {"name": "nightly", "handler": "ok", "spec": "0 4 * * *", "enabled": true}}`)
		assert.Equal(t, 400, res.status, "an unknown field")
		require.NoError(t, json.Unmarshal([]byte(res.body), &fl))
		assert.Contains(t, fl.Error, "enabled")
		res = post("/jobs/api/update", `{"version": 2, "task": {"name": "nightly", "handler": "ok", "spec": "0 4 * * *"}}`)
		assert.Equal(t, 422, res.status, "no End")
		require.NoError(t, json.Unmarshal([]byte(res.body), &fl))
		assert.Equal(t, "end", fl.Field)
		res = post("/jobs/api/update", `{"vers": 2}`)
		assert.Equal(t, 400, res.status)

		res = f.post("/jobs/api/delete", form("name", "nightly", "version", "2"))
		require.Equal(t, 200, res.status, res.body)
		assert.JSONEq(t, `{"kind": "task", "name": "nightly", "done": "deleted"}`, res.body)
		f.getJSON("/jobs/api/definition?name=nightly", 404, &fl)
	})
}

// TestNoDefinitions checks that without Definitions nothing is edited.
func TestNoDefinitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, func(o *admin.Options) { o.Definitions = nil }, task("daily"))
		defer f.stop()
		assert.NotContains(t, f.get("/jobs/").body, `href="new"`)
		assert.NotContains(t, f.get("/jobs/task?name=daily").body, `href="edit`)
		assert.Contains(t, f.get("/jobs/task?name=daily").body, `formaction="pause"`)
		assert.Equal(t, 404, f.get("/jobs/new").status)
		assert.Equal(t, 404, f.post("/jobs/create", form("name", "x")).status)
		assert.Equal(t, 404, f.get("/jobs/api/definition?name=daily").status)
	})
}

// TestPreview checks what api/preview says of specs as they are typed.
func TestPreview(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		defer f.stop()
		var p jsonPreview
		f.getJSON("/jobs/api/preview?spec=0+9+*+*+1-5&zone=America/New_York", 200, &p)
		assert.Equal(t, "America/New_York", p.Zone)
		assert.Contains(t, p.Description, "At 09:00 in America/New_York, Monday through Friday")
		require.Len(t, p.Next, 5)
		ny, err := time.LoadLocation("America/New_York")
		require.NoError(t, err)
		assert.Equal(t, time.Date(2000, 1, 3, 9, 0, 0, 0, ny), p.Next[0].In(ny), "the first weekday at 09:00 in New York")
		_, off := p.Next[0].Zone()
		assert.Equal(t, -5*3600, off, "given in the zone's offset")

		f.getJSON("/jobs/api/preview?spec="+urlEscape("CRON_TZ=Asia/Tokyo @daily"), 200, &p)
		assert.Equal(t, "Asia/Tokyo", p.Zone, "the spec's own zone wins")
		f.getJSON("/jobs/api/preview?spec="+urlEscape("@every 90m"), 200, &p)
		assert.Equal(t, "Every 1h30m0s", p.Description)
		assert.Equal(t, "UTC", p.Zone, "the page's Location")

		for _, c := range []struct{ query, field, err string }{
			{"spec=0+9+*+*", "spec", `cron: spec "0 9 * *": has 4 fields; want 5`},
			{"spec=0+0+30+2+*", "spec", "no time in the next 100 years"},
			{"spec=*/70+*+*+*+*", "spec", `minute "*/70": step 70 is longer than the 60 values of 0-59 it steps through: only 0 would match`},
			{"spec=0+9+*+*+*&zone=Mars/Olympus", "zone", "Mars/Olympus"},
			{"spec=", "spec", "empty"},
		} {
			f.getJSON("/jobs/api/preview?"+c.query, 422, &p)
			assert.Equal(t, c.field, p.Field, c.query)
			assert.Contains(t, p.Error, c.err, c.query)
			assert.Empty(t, p.Next, c.query)
		}
	})
}

// TestCreatePausedWithANote creates a task paused until a time in its
// zone, with a note, and one that pauses after failures: the definition
// holds them, and the edit form shows them again.
func TestCreatePausedWithANote(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil)
		defer f.stop()
		res := f.post("/jobs/create", form("name", "shop 2", "handler", "ok", "spec", "0 9 * * 1-5", "zone", "Europe/Paris",
			"permanent", "1", "paused", "1", "pauseNote", "until the shop opens", "pausedUntil", "2000-01-03T09:00",
			"pauseOnFailures", "3", "version", "0"))
		require.Equal(t, 303, res.status, res.body)
		got, _, err := f.defs.Get(context.Background(), "shop 2")
		require.NoError(t, err)
		assert.True(t, got.Paused)
		assert.Equal(t, "until the shop opens", got.PauseNote)
		assert.True(t, time.Date(2000, 1, 3, 8, 0, 0, 0, time.UTC).Equal(got.PausedUntil), "09:00 in Paris: %v", got.PausedUntil)
		assert.Equal(t, 3, got.PauseOnFailures)
		page := f.get("/jobs/edit?name=shop+2").body
		assert.Contains(t, page, `value="until the shop opens"`)
		assert.Contains(t, page, `value="2000-01-03T09:00:00"`)
		assert.Contains(t, page, `name="pauseOnFailures" inputmode="numeric" value="3"`)
		synctest.Wait()
		assert.Contains(t, f.get("/jobs/task?name=shop+2").body, "after 3 failed slots in a row")
	})
}

// A task's Handler is a choice of the Table's handlers, the current one
// selected; one the service does not register is kept, and named so.
func TestHandlerChoice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		odd := task("odd")
		odd.Handler = "gone"
		f := newFixture(t, nil, task("daily"), odd)
		defer f.stop()
		page := f.get("/jobs/edit?name=daily")
		require.Equal(t, 200, page.status)
		assert.Contains(t, page.body, `<select id="handler" name="handler">`)
		for _, want := range []string{`<option value="fail">fail</option>`, `<option value="ok" selected>ok</option>`, `<option value="slow">slow</option>`} {
			assert.Contains(t, page.body, want)
		}
		assert.NotContains(t, page.body, "Choose one")
		page = f.get("/jobs/new")
		assert.Contains(t, page.body, `<option value="" selected>Choose one</option>`)
		page = f.get("/jobs/edit?name=odd")
		assert.Contains(t, page.body, `<option value="gone" selected>gone (not a handler of this service)</option>`)
		assert.Contains(t, page.body, `<option value="ok">ok</option>`)
	})
}

package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// The JSON of the routes, as a script reads it.
type (
	jsonRecord struct {
		Due      time.Time `json:"due"`
		Status   string    `json:"status"`
		Reason   string    `json:"reason"`
		Attempt  int       `json:"attempt"`
		Duration string    `json:"duration"`
		Error    string    `json:"error"`
	}
	jsonRow struct {
		Kind        string      `json:"kind"`
		Name        string      `json:"name"`
		Spec        string      `json:"spec"`
		Description string      `json:"description"`
		Zone        string      `json:"zone"`
		Next        time.Time   `json:"next"`
		Last        *jsonRecord `json:"last"`
		Running     int         `json:"running"`
		Paused      bool        `json:"paused"`
		PauseNote   string      `json:"pauseNote"`
	}
	jsonList struct {
		Query    string    `json:"query"`
		Page     int       `json:"page"`
		Pages    int       `json:"pages"`
		PageSize int       `json:"pageSize"`
		Total    int       `json:"total"`
		Items    []jsonRow `json:"items"`
	}
	jsonDetail struct {
		jsonRow
		Definition *cron.Task   `json:"definition"`
		Loaded     bool         `json:"loaded"`
		Upcoming   []time.Time  `json:"upcoming"`
		History    []jsonRecord `json:"history"`
		Page       int          `json:"page"`
		More       bool         `json:"more"`
	}
	jsonPreview struct {
		Description string      `json:"description"`
		Zone        string      `json:"zone"`
		Next        []time.Time `json:"next"`
		Error       string      `json:"error"`
		Field       string      `json:"field"`
	}
	jsonFailure struct {
		Error string `json:"error"`
		Field string `json:"field"`
	}
)

// TestRoutes checks the status and type of every route, mounted under
// /jobs/.
func TestRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil, task("daily"))
		defer f.stop()
		html, js := "text/html; charset=utf-8", "application/json"
		for _, c := range []struct {
			method, target string
			status         int
			typ            string
		}{
			{"GET", "/jobs/", 200, html},
			{"HEAD", "/jobs/", 200, html},
			{"GET", "/jobs/?q=dai&page=1", 200, html},
			{"GET", "/jobs/?page=0", 400, html},
			{"GET", "/jobs/?page=x", 400, html},
			{"GET", "/jobs/task?name=daily", 200, html},
			{"GET", "/jobs/task?name=daily&page=2", 200, html},
			{"GET", "/jobs/task?name=nope", 404, html},
			{"GET", "/jobs/task?name=report", 404, html}, // a job, not a task
			{"GET", "/jobs/job?name=report", 200, html},
			{"GET", "/jobs/job?name=daily", 404, html},
			{"GET", "/jobs/new", 200, html},
			{"GET", "/jobs/edit?name=daily", 200, html},
			{"GET", "/jobs/edit?name=nope", 404, html},
			{"GET", "/jobs/static/admin.css", 200, "text/css; charset=utf-8"},
			{"GET", "/jobs/static/admin.js", 200, "text/javascript; charset=utf-8"},
			{"GET", "/jobs/static/nope.js", 404, "text/plain; charset=utf-8"},
			{"GET", "/jobs/nope", 404, html},
			{"GET", "/jobs/api/tasks", 200, js},
			{"GET", "/jobs/api/tasks?page=-1", 400, js},
			{"GET", "/jobs/api/task?name=daily", 200, js},
			{"GET", "/jobs/api/task?name=nope", 404, js},
			{"GET", "/jobs/api/job?name=report", 200, js},
			{"GET", "/jobs/api/job?name=nope", 404, js},
			{"GET", "/jobs/api/definition?name=daily", 200, js},
			{"GET", "/jobs/api/definition?name=nope", 404, js},
			{"GET", "/jobs/api/preview?spec=0+9+*+*+*", 200, js},
			{"GET", "/jobs/api/preview?spec=0+9+*+*+*&zone=Europe/Paris", 200, js},
			{"GET", "/jobs/api/preview?spec=0+25+*+*+*", 422, js},
			{"GET", "/jobs/api/preview?spec=0+9+*+*+*&zone=Mars/Olympus", 422, js},
			{"GET", "/jobs/api/nope", 404, js},
			{"GET", "/jobs/audit", 404, html}, // no Audit
			{"GET", "/jobs/api/audit", 404, js},
			{"POST", "/jobs/", 405, html},
			{"GET", "/jobs/run", 405, html},
			{"DELETE", "/jobs/api/delete", 405, js},
			{"POST", "/jobs/run", 400, html}, // no kind
			{"POST", "/jobs/api/run", 400, js},
			{"POST", "/jobs/run?kind=task&name=nope", 404, html},
			{"POST", "/jobs/api/pause?kind=job&name=nope", 404, js},
			{"POST", "/jobs/api/create", 400, js}, // no body
			{"POST", "/jobs/delete?name=nope&version=1&confirm=1", 404, html},
			{"GET", "/jobs/bulk", 405, html},
			{"POST", "/jobs/bulk", 400, html}, // no do
			{"POST", "/jobs/api/bulk", 400, js},
			{"POST", "/jobs/bulk?do=pause&sel=task:daily", 200, html},
			{"POST", "/jobs/api/bulk?do=pause&all=1&state=broken", 400, js},
		} {
			res := f.do(c.method, c.target, nil)
			assert.Equal(t, c.status, res.status, "%s %s: %s", c.method, c.target, res.body)
			assert.Equal(t, c.typ, res.header.Get("Content-Type"), "%s %s", c.method, c.target)
			if c.typ == html {
				assert.Contains(t, res.header.Get("Content-Security-Policy"), "default-src 'self'", "%s %s", c.method, c.target)
				assert.Equal(t, "nosniff", res.header.Get("X-Content-Type-Options"))
			}
		}
	})
}

// TestPrefix checks that every link, form and redirect of the pages is
// relative, so that the page works under any prefix: on a real server,
// through a real client that follows redirects.
func TestPrefix(t *testing.T) {
	f := newFixture(t, nil, task("daily"), task("a/b?c=d&e#f"))
	defer f.stop()
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	c := srv.Client()

	attr := regexp.MustCompile(`(?:href|action|src)="([^"]*)"`)
	for _, page := range []string{"/jobs/", "/jobs/task?name=daily", "/jobs/job?name=report", "/jobs/new", "/jobs/edit?name=daily"} {
		res, err := c.Get(srv.URL + page)
		require.NoError(t, err)
		b := readAll(t, res)
		require.Equal(t, 200, res.StatusCode, page)
		for _, m := range attr.FindAllStringSubmatch(b, -1) {
			assert.False(t, strings.HasPrefix(m[1], "/") || strings.Contains(m[1], "://"), "%s links to %s", page, m[1])
		}
	}

	// A link to a task with a name that is a path and a query.
	res, err := c.Get(srv.URL + "/jobs/")
	require.NoError(t, err)
	b := readAll(t, res)
	assert.Contains(t, b, `href="task?name=a%2Fb%3Fc%3Dd%26e%23f"`)
	res, err = c.Get(srv.URL + "/jobs/task?name=a%2Fb%3Fc%3Dd%26e%23f")
	require.NoError(t, err)
	assert.Equal(t, 200, res.StatusCode)
	assert.Contains(t, readAll(t, res), "a/b?c=d&amp;e#f")

	// A write redirects within the prefix, to the task's page.
	res, err = c.PostForm(srv.URL+"/jobs/pause", form("kind", "task", "name", "daily"))
	require.NoError(t, err)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "/jobs/task", res.Request.URL.Path)
	assert.Equal(t, "pause", res.Request.URL.Query().Get("done"))
	assert.Contains(t, readAll(t, res), "Paused: its slots pass")

	// From the list, back to the list's page and search.
	res, err = c.PostForm(srv.URL+"/jobs/resume", form("kind", "task", "name", "daily", "from", "list", "back", "q=dai&page=1"))
	require.NoError(t, err)
	assert.Equal(t, "/jobs/", res.Request.URL.Path)
	assert.Equal(t, "done=resume&q=dai", res.Request.URL.RawQuery)
	readAll(t, res)

	// Mounted without a ServeMux, /jobs redirects to /jobs/, not to /.
	bare := httptest.NewServer(http.StripPrefix("/jobs", admin.New(admin.Options{Table: f.table})))
	defer bare.Close()
	res, err = bare.Client().Get(bare.URL + "/jobs")
	require.NoError(t, err)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "/jobs/", res.Request.URL.Path)
	readAll(t, res)
}

// TestReadOnly checks that without Authorize no write is made, and no
// button shown.
func TestReadOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, func(o *admin.Options) { o.Authorize = nil }, task("daily"))
		defer f.stop()
		for _, page := range []string{"/jobs/", "/jobs/task?name=daily", "/jobs/job?name=report"} {
			res := f.get(page)
			require.Equal(t, 200, res.status)
			assert.NotContains(t, res.body, `method="post"`, page)
			assert.NotContains(t, res.body, `href="new"`, page)
			assert.NotContains(t, res.body, `name="sel"`, page)
			assert.NotContains(t, res.body, "Pause selected", page)
			assert.Contains(t, res.body, "read-only", page)
		}
		for _, w := range []struct{ target, body string }{
			{"/jobs/run", "kind=task&name=daily"},
			{"/jobs/pause", "kind=task&name=daily"},
			{"/jobs/resume", "kind=job&name=report"},
			{"/jobs/backfill", "kind=task&name=daily&from=1999-12-28T00:00&to=1999-12-31T00:00"},
			{"/jobs/cancel-backfill", "kind=task&name=daily"},
			{"/jobs/run", "kind=job&name=report"},
			{"/jobs/api/run", "kind=task&name=daily"},
			{"/jobs/create", "name=x&handler=ok&spec=*+*+*+*+*&permanent=1"},
			{"/jobs/update", "name=daily&handler=ok&spec=*+*+*+*+*&permanent=1&version=1"},
			{"/jobs/delete", "name=daily&version=1"},
			{"/jobs/api/delete", "name=daily&version=1"},
			{"/jobs/bulk", "do=pause&sel=task:daily"},
			{"/jobs/bulk", "do=pause&sel=task:daily&sel=job:report&confirm=1"},
			{"/jobs/api/bulk", "do=run&all=1&confirm=1"},
		} {
			r := httptest.NewRequest("POST", "http://admin.test"+w.target, strings.NewReader(w.body))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, r)
			assert.Equal(t, 403, rec.Code, w.target)
			assert.Contains(t, rec.Body.String(), "read-only", w.target)
		}
		for _, page := range []string{"/jobs/new", "/jobs/edit?name=daily"} {
			assert.Equal(t, 403, f.get(page).status, page)
		}
		synctest.Wait()
		_, err := f.store.Last(context.Background(), "daily")
		assert.ErrorIs(t, err, schedule.ErrNoRecord, "a task ran")
		assert.Zero(t, f.jobRuns.Load(), "the job ran")
		_, v, err := f.defs.Get(context.Background(), "daily")
		require.NoError(t, err)
		assert.Equal(t, int64(1), v, "the definition changed")
	})
}

// TestAuthorize checks that Authorize decides, request by request, on the
// buttons and the writes.
func TestAuthorize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		admins := func(r *http.Request) bool { return r.Header.Get("X-User") == "admin" }
		f := newFixture(t, func(o *admin.Options) { o.Authorize = admins }, task("daily"))
		defer f.stop()
		assert.NotContains(t, f.get("/jobs/").body, `action="run"`)
		assert.Contains(t, f.do("GET", "/jobs/", nil, "X-User", "admin").body, `action="run"`)

		res := f.post("/jobs/pause", form("kind", "task", "name", "daily"))
		assert.Equal(t, 403, res.status)
		assert.Contains(t, res.body, "You may look, not change anything.")
		res = f.do("POST", "/jobs/pause", form("kind", "task", "name", "daily"), "X-User", "admin")
		assert.Equal(t, 303, res.status)
		assert.Equal(t, "task?done=pause&name=daily", res.header.Get("Location"))
		assert.True(t, f.tasks()["daily"].Task.Paused)
	})
}

// TestCrossOrigin checks that a browser's write from another site is
// refused, and one from the page's own origin, or a script's, is made.
func TestCrossOrigin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil, task("daily"))
		defer f.stop()
		pause := form("kind", "task", "name", "daily")
		for _, hdr := range [][]string{
			{"Sec-Fetch-Site", "cross-site"},
			{"Sec-Fetch-Site", "same-site"},
			{"Origin", "http://evil.test"},
		} {
			res := f.do("POST", "/jobs/pause", pause, hdr...)
			assert.Equal(t, 403, res.status, hdr)
			assert.Contains(t, res.body, "A change from another site is refused.")
			res = f.do("POST", "/jobs/api/pause", pause, hdr...)
			assert.Equal(t, 403, res.status, hdr)
			for _, target := range []string{"/jobs/bulk", "/jobs/api/bulk"} {
				res = f.do("POST", target, form("do", "pause", "sel", "task:daily", "confirm", "1"), hdr...)
				assert.Equal(t, 403, res.status, target, hdr)
				assert.Contains(t, res.body, "A change from another site is refused.", target)
			}
		}
		assert.False(t, f.tasks()["daily"].Task.Paused)
		for _, hdr := range [][]string{
			{"Sec-Fetch-Site", "same-origin"},
			{"Origin", "http://admin.test"},
			{}, // curl
		} {
			assert.Equal(t, 200, f.do("POST", "/jobs/api/pause", pause, hdr...).status, hdr)
			assert.Equal(t, 200, f.do("POST", "/jobs/bulk", form("do", "pause", "sel", "task:daily", "confirm", "1"), hdr...).status, hdr)
		}
		assert.True(t, f.tasks()["daily"].Task.Paused)
	})
}

// TestEscaped checks that the texts of users, a task's name, its spec,
// its business id and its run's error, reach the page as text.
func TestEscaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const evil = `<script>alert("x")</script>`
		bad := cron.Task{Name: evil, Handler: "fail", BusinessID: `<img src=x onerror=alert(1)>`, Spec: "0 9 * * *", Permanent: true}
		f := newFixture(t, auditing(new(memAudit)), bad)
		defer f.stop()
		require.Equal(t, 303, f.do("POST", "/jobs/run", form("kind", "task", "name", evil),
			"Content-Type", "application/x-www-form-urlencoded", "X-User", evil).status)
		synctest.Wait() // the run has failed and been recorded
		for _, page := range []string{"/jobs/", "/jobs/task?name=" + urlEscape(evil), "/jobs/?q=" + urlEscape("<script>"),
			"/jobs/edit?name=" + urlEscape(evil), "/jobs/audit", "/jobs/audit?name=" + urlEscape(evil)} {
			res := f.get(page)
			require.Equal(t, 200, res.status, page)
			assert.NotContains(t, res.body, "<script>alert", page)
			assert.NotContains(t, res.body, "<img src=x", page)
			assert.Contains(t, res.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", page)
		}
		res := f.get("/jobs/task?name=" + urlEscape(evil))
		assert.Contains(t, res.body, "&lt;img src=x onerror=alert(1)&gt;", "the run's error")
		assert.Contains(t, res.body, "Failed")

		// A spec refused, with its text quoted in the error.
		res = f.post("/jobs/create", form("name", "x", "handler", "ok", "spec", `0 9 * * <b>mon</b>`, "permanent", "1"))
		assert.Equal(t, 422, res.status)
		assert.Contains(t, res.body, "&lt;b&gt;mon&lt;/b&gt;")
		assert.NotContains(t, res.body, "<b>mon")
		p := f.get("/jobs/api/preview?spec=" + urlEscape("<b>"))
		assert.Equal(t, 422, p.status)
		assert.NotContains(t, p.body, "<b>")
		assert.Contains(t, p.body, `\u003cb\u003e`)

		// An unknown page= or kind= is not echoed.
		res = f.post("/jobs/run", form("kind", evil, "name", evil))
		assert.Equal(t, 400, res.status)
		assert.NotContains(t, res.body, "<script>")
	})
}

// TestUpcomingWithMaxRuns: a task's page lists the runs its MaxRuns
// leaves, counted from its Created as its Table counts them, not ten.
func TestUpcomingWithMaxRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := task("limited")
		d.MaxRuns = 3
		f := newFixture(t, nil, d) // created now: 09:00 of three days
		defer f.stop()
		var got jsonDetail
		f.getJSON("/jobs/api/task?name=limited", 200, &got)
		require.Len(t, got.Upcoming, 3)
		assert.Equal(t, got.Next, got.Upcoming[0])
		assert.Contains(t, f.get("/jobs/task?name=limited").body, "3 of its runs left")
		time.Sleep(36 * time.Hour) // two of them passed
		f.getJSON("/jobs/api/task?name=limited", 200, &got)
		require.Len(t, got.Upcoming, 1)
		assert.Equal(t, got.Next, got.Upcoming[0])
		assert.Contains(t, f.get("/jobs/task?name=limited").body, "1 of its runs left")
	})
}

// TestRunPauseResume runs, pauses and resumes a task and a job through
// the page, and checks what the Table, the Job and the pages say.
func TestRunPauseResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil, task("daily"))
		defer f.stop()

		res := f.post("/jobs/run", form("kind", "task", "name", "daily"))
		require.Equal(t, 303, res.status)
		assert.Equal(t, "task?done=run&name=daily", res.header.Get("Location"))
		synctest.Wait()
		var d jsonDetail
		f.getJSON("/jobs/api/task?name=daily", 200, &d)
		require.Len(t, d.History, 1)
		assert.Equal(t, "Succeeded", d.History[0].Status)
		assert.Equal(t, "Manual", d.History[0].Reason)
		assert.Equal(t, 1, d.History[0].Attempt)
		require.NotNil(t, d.Last)
		assert.Equal(t, "Succeeded", d.Last.Status)
		assert.Len(t, d.Upcoming, 10)
		assert.Equal(t, d.Next, d.Upcoming[0])

		require.Equal(t, 303, f.post("/jobs/pause", form("kind", "task", "name", "daily", "from", "list")).status)
		f.getJSON("/jobs/api/task?name=daily", 200, &d)
		assert.True(t, d.Paused)
		assert.True(t, d.Next.IsZero())
		assert.Empty(t, d.Upcoming)
		assert.True(t, d.Definition.Paused)
		task, _, _ := f.defs.Get(context.Background(), "daily")
		assert.True(t, task.Paused, "the definition is paused, for every replica")
		assert.Contains(t, f.get("/jobs/").body, `<span class="badge paused">paused</span>`)
		assert.Contains(t, f.get("/jobs/").body, `formaction="resume"`)

		// A paused task is not run: the Table says so.
		res = f.post("/jobs/api/run", form("kind", "task", "name", "daily"))
		assert.Equal(t, 409, res.status)
		assert.Contains(t, res.body, "paused")

		require.Equal(t, 200, f.post("/jobs/api/resume", form("kind", "task", "name", "daily")).status)
		f.getJSON("/jobs/api/task?name=daily", 200, &d)
		assert.False(t, d.Paused)
		assert.False(t, d.Next.IsZero())

		// The Job.
		require.Equal(t, 303, f.post("/jobs/run", form("kind", "job", "name", "report")).status)
		synctest.Wait()
		assert.Equal(t, int64(1), f.jobRuns.Load())
		f.getJSON("/jobs/api/job?name=report", 200, &d)
		require.Len(t, d.History, 1)
		assert.Equal(t, "Manual", d.History[0].Reason)
		assert.Equal(t, "At 06:30 in UTC, Monday through Friday", d.Description)
		require.Equal(t, 303, f.post("/jobs/pause", form("kind", "job", "name", "report")).status)
		assert.True(t, f.job.Next().IsZero())
		f.getJSON("/jobs/api/job?name=report", 200, &d)
		assert.True(t, d.Paused)
		require.Equal(t, 303, f.post("/jobs/resume", form("kind", "job", "name", "report")).status)
		assert.False(t, f.job.Next().IsZero())

		// A Job paused elsewhere shows as paused, and a resume shows too.
		f.job.Pause()
		f.getJSON("/jobs/api/job?name=report", 200, &d)
		assert.True(t, d.Paused, "paused elsewhere")
		var l jsonList
		f.getJSON("/jobs/api/tasks?q=report", 200, &l)
		require.Len(t, l.Items, 1)
		assert.True(t, l.Items[0].Paused, "paused elsewhere, in the list")
		f.job.Resume()
		f.getJSON("/jobs/api/job?name=report", 200, &d)
		assert.False(t, d.Paused, "resumed elsewhere")
	})
}

// tasks returns the Table's tasks by name.
func (f *fixture) tasks() map[string]cron.TaskState {
	m := map[string]cron.TaskState{}
	for _, s := range f.table.Tasks() {
		m[s.Task.Name] = s
	}
	return m
}

func urlEscape(s string) string { return url.QueryEscape(s) }

// readAll reads the body of res.
func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}

// A task whose definition the Table refused (a handler it does not have)
// is on the list and on its page, refused, with why, escaped; a task whose
// new definition was refused shows that its previous one runs.
func TestRefusedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		typo := cron.Task{Name: "typo-task", Handler: `tikc<i>`, Spec: "0 9 * * *", Permanent: true}
		f := newFixture(t, nil, task("good"), typo)
		defer f.stop()
		list := f.get("/jobs/")
		require.Equal(t, 200, list.status)
		assert.Contains(t, list.body, "typo-task")
		assert.Contains(t, list.body, `<span class="badge refused">refused</span>`)
		assert.Contains(t, list.body, `handler: no handler &#34;tikc&lt;i&gt;&#34;`)
		assert.NotContains(t, list.body, "<i>")
		page := f.get("/jobs/task?name=typo-task")
		require.Equal(t, 200, page.status)
		assert.Contains(t, page.body, "it does not run")
		assert.NotContains(t, page.body, "not loaded yet")

		bad := task("good")
		bad.Handler = "nope"
		f.defs.set(bad)
		time.Sleep(2 * time.Second) // the Table's next looks
		page = f.get("/jobs/task?name=good")
		assert.Contains(t, page.body, "its previous definition runs")
		var api struct {
			Refused string `json:"refused"`
		}
		require.NoError(t, json.Unmarshal([]byte(f.get("/jobs/api/task?name=good").body), &api))
		assert.Contains(t, api.Refused, `no handler "nope"`)
	})
}

// TestPauseWithANote pauses a task and a job with a note and a length:
// the definition keeps them for every replica, the pages show the note,
// escaped, and the time it ends; the task resumes by itself at its end. A
// length that does not read is refused, naming what is wrong.
func TestPauseWithANote(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil, task("daily"))
		defer f.stop()
		note := `db upgrade <script>alert(1)</script> (ana)`
		res := f.post("/jobs/pause", form("kind", "task", "name", "daily", "note", note, "for", "2h"))
		require.Equal(t, 303, res.status, res.body)
		end := time.Now().Add(2 * time.Hour)
		def, _, err := f.defs.Get(context.Background(), "daily")
		require.NoError(t, err)
		assert.True(t, def.Paused)
		assert.Equal(t, note, def.PauseNote)
		assert.True(t, end.Equal(def.PausedUntil), "%v", def.PausedUntil)
		var d jsonDetail
		f.getJSON("/jobs/api/task?name=daily", 200, &d)
		assert.True(t, d.Paused)
		assert.Equal(t, note, d.PauseNote)
		page := f.get("/jobs/task?name=daily").body
		assert.NotContains(t, page, "<script>alert(1)")
		assert.Contains(t, page, `<q class="note">db upgrade &lt;script&gt;alert(1)&lt;/script&gt; (ana)</q>`)
		assert.Contains(t, page, "until <time")

		time.Sleep(2*time.Hour + time.Second)
		f.getJSON("/jobs/api/task?name=daily", 200, &d)
		assert.False(t, d.Paused, "the pause has ended")
		assert.Empty(t, d.PauseNote)

		res = f.post("/jobs/api/pause", form("kind", "task", "name", "daily", "for", "soon"))
		assert.Equal(t, 400, res.status)
		assert.Contains(t, res.body, `not \"soon\"`)
		res = f.post("/jobs/api/pause", form("kind", "task", "name", "daily", "for", "-1h"))
		assert.Equal(t, 400, res.status)

		require.Equal(t, 303, f.post("/jobs/pause", form("kind", "job", "name", "report", "note", "quarter end")).status)
		n, paused := f.job.PauseNote()
		assert.True(t, paused)
		assert.Equal(t, "quarter end", n.Note)
		f.getJSON("/jobs/api/job?name=report", 200, &d)
		assert.Equal(t, "quarter end", d.PauseNote)
	})
}

// TestBackfillFromThePage backfills a task from its page: the slots of
// the range, in the task's zone, run on this replica with Reason Backfill,
// and its page shows how far it got; a second backfill runs nothing, each
// slot having a record. A range that does not read, or a job, is refused.
func TestBackfillFromThePage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil, task("daily"))
		defer f.stop()
		synctest.Wait()
		res := f.post("/jobs/backfill", form("kind", "task", "name", "daily", "from", "1999-12-28T00:00", "to", "1999-12-31T12:00"))
		require.Equal(t, 303, res.status, res.body)
		assert.Equal(t, "task?done=backfill&name=daily", res.header.Get("Location"))
		synctest.Wait()
		var d struct {
			jsonDetail
			Backfill struct {
				Slots, Done, HadRecord, RanAgain int
				Running                          bool
				Error                            string
			} `json:"backfill"`
		}
		f.getJSON("/jobs/api/task?name=daily", 200, &d)
		assert.Equal(t, 4, d.Backfill.Slots, "09:00 on the 28th to the 31st")
		assert.Equal(t, 4, d.Backfill.Done)
		assert.Zero(t, d.Backfill.HadRecord)
		assert.False(t, d.Backfill.Running)
		var reasons []string
		for _, r := range d.History {
			reasons = append(reasons, r.Reason)
		}
		assert.Equal(t, []string{"Backfill", "Backfill", "Backfill", "Backfill"}, reasons)
		page := f.get("/jobs/task?name=daily").body
		assert.Contains(t, page, "4 of 4 slots handled")

		require.Equal(t, 303, f.post("/jobs/backfill", form("kind", "task", "name", "daily", "from", "1999-12-28T00:00", "to", "1999-12-31T12:00")).status)
		synctest.Wait()
		f.getJSON("/jobs/api/task?name=daily", 200, &d)
		assert.Equal(t, 4, d.Backfill.HadRecord, "every slot had a record")
		assert.Zero(t, d.Backfill.RanAgain)
		assert.Len(t, d.History, 4)
		page = f.get("/jobs/task?name=daily").body
		assert.Contains(t, page, `name="again" type="checkbox"`)
		assert.Contains(t, page, "Run again the slots that have a record")

		// Asked to, it runs them again, each at its second attempt.
		time.Sleep(time.Second) // after their runs ended
		require.Equal(t, 303, f.post("/jobs/backfill", form("kind", "task", "name", "daily", "from", "1999-12-28T00:00",
			"to", "1999-12-31T12:00", "again", "1")).status)
		synctest.Wait()
		f.getJSON("/jobs/api/task?name=daily", 200, &d)
		assert.Equal(t, 4, d.Backfill.RanAgain)
		assert.Zero(t, d.Backfill.HadRecord)
		require.Len(t, d.History, 4)
		for _, r := range d.History {
			assert.Equal(t, "Backfill", r.Reason)
			assert.Equal(t, 2, r.Attempt)
		}
		assert.Contains(t, f.get("/jobs/task?name=daily").body, "4 of them ran again")

		res = f.post("/jobs/api/backfill", form("kind", "task", "name", "daily", "from", "yesterday", "to", "1999-12-31T12:00"))
		assert.Equal(t, 400, res.status)
		assert.Contains(t, res.body, "start must be a time")
		res = f.post("/jobs/api/backfill", form("kind", "job", "name", "report", "from", "1999-12-28T00:00", "to", "1999-12-31T12:00"))
		assert.Equal(t, 400, res.status)
		res = f.post("/jobs/api/backfill", form("kind", "task", "name", "daily", "from", "1999-12-31T12:00", "to", "1999-12-28T00:00"))
		assert.Equal(t, 400, res.status, "a range that ends before it starts")
		assert.Contains(t, res.body, "start is after its end")
		res = f.post("/jobs/api/backfill", form("kind", "task", "name", "daily", "from", "1990-01-01T00:00", "to", "1999-12-28T00:00"))
		assert.Equal(t, 422, res.status)
		assert.Contains(t, res.body, "more than 1000 slots: backfill it in parts")
		require.Equal(t, 303, f.post("/jobs/cancel-backfill", form("kind", "task", "name", "daily")).status)
	})
}

// TestWhatAPersonReads checks what a browser showed wrong: a failed run's
// error is on the list, its first line cut with a cue, and whole on the
// task's page; times read to the second and durations under a
// millisecond as such; a task's definition shows its times in its zone;
// the edit form shows the name as text, not as a field that looks
// editable, and Save is the primary button.
func TestWhatAPersonReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := task("paris")
		d.Zone, d.Start, d.Permanent, d.End = "Europe/Paris", time.Date(2000, 1, 5, 8, 30, 0, 0, time.UTC), false, time.Date(2000, 6, 1, 16, 0, 0, 0, time.UTC)
		f := newFixture(t, nil, d)
		defer f.stop()
		msg := strings.Repeat("connection refused ", 10) + "\nat the second line"
		due := time.Date(1999, 12, 31, 9, 0, 0, 0, time.UTC)
		rec := schedule.Record{Job: "paris", Due: due, Status: schedule.Running, Node: "n", Attempt: 1,
			Start: due.Add(1234 * time.Millisecond)}
		require.NoError(t, f.store.Claim(context.Background(), rec))
		rec.Status, rec.End, rec.Err = schedule.Failed, rec.Start.Add(300*time.Microsecond), msg
		require.NoError(t, f.store.Finish(context.Background(), rec))

		list := f.get("/jobs/").body
		assert.Contains(t, list, `<span class="err">connection refused connection refused`)
		assert.Contains(t, list, "connec…</span>", "its first line cut at 120 bytes, with a cue")
		assert.Contains(t, list, `<span class="took">&lt;1ms</span>`)
		assert.Contains(t, list, "tasks and jobs")

		page := f.get("/jobs/task?name=paris").body
		assert.Contains(t, page, "at the second line</pre>", "the whole error")
		assert.Contains(t, page, ">1999-12-31 10:00:01 CET</time>", "to the second, in the task's zone")
		assert.Contains(t, page, "from <time datetime=\"2000-01-05T08:30:00Z\" title=\"2000-01-05 08:30:00.000 UTC\">2000-01-05 09:30:00 CET</time>")
		assert.Contains(t, page, "until <time datetime=\"2000-06-01T16:00:00Z\" title=\"2000-06-01 16:00:00.000 UTC\">2000-06-01 18:00:00 CEST</time>")

		form := f.get("/jobs/edit?name=paris").body
		assert.Contains(t, form, `<p class="fixed-name"><code>paris</code>`)
		assert.NotContains(t, form, `id="name"`)
		assert.Contains(t, form, `id="save" class="primary"`)
		assert.Contains(t, form, `name="confirm" type="checkbox" value="1" required`)
	})
}

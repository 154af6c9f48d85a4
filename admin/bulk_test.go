package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
)

// The JSON of api/bulk, as a script reads it.
type jsonBulk struct {
	Do     string `json:"do"`
	Count  int    `json:"count"`
	All    bool   `json:"all"`
	Items  []struct{ Kind, Name string }
	Done   int `json:"done"`
	Failed []struct {
		Kind  string `json:"kind"`
		Name  string `json:"name"`
		Error string `json:"error"`
	} `json:"failed"`
}

// hidden matches a hidden field of a form, as the templates write it.
var hidden = regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)">`)

// confirmForm returns the fields that the confirmation page's form posts,
// as a browser without script posts them: its hidden fields, and the
// fields edit sets.
func confirmForm(t *testing.T, page string, kv ...string) url.Values {
	t.Helper()
	v := url.Values{}
	for _, m := range hidden.FindAllStringSubmatch(page, -1) {
		v.Add(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	require.Equal(t, "1", v.Get("confirm"), "the page has no confirmation form: %s", page)
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// TestBulkSelected pauses two tasks ticked on the list: the confirmation
// page names them and changes nothing; its form, posted, pauses both.
func TestBulkSelected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, nil, task("a"), task("b"), task("c"))
		defer f.stop()
		synctest.Wait()
		list := f.get("/jobs/?q=").body
		assert.Contains(t, list, `<form id="bulk" class="bulk" method="post" action="bulk">`)
		assert.Contains(t, list, `<input type="checkbox" name="sel" value="task:a" form="bulk" aria-label="Select a">`)
		assert.Contains(t, list, `<input type="checkbox" name="sel" value="job:report" form="bulk"`)
		assert.Contains(t, list, `or all 4 tasks and jobs`)
		assert.Contains(t, list, `<button type="submit" name="do" value="pause">Pause selected</button>`)

		res := f.post("/jobs/bulk", form("do", "pause", "sel", "task:a", "sel", "task:b", "back", "q=&page=1"))
		require.Equal(t, 200, res.status, res.body)
		assert.Contains(t, res.body, "Pause 2 tasks and jobs?")
		assert.Contains(t, res.body, `href="task?name=a">a</a>`)
		assert.Contains(t, res.body, `href="task?name=b">b</a>`)
		assert.NotContains(t, res.body, `href="task?name=c"`)
		assert.Contains(t, res.body, "Nothing has changed yet.")
		assert.Contains(t, res.body, `<input id="note" name="note"`)
		assert.Contains(t, res.body, `<a href="./">Cancel</a>`)
		for _, name := range []string{"a", "b", "c"} {
			assert.False(t, f.tasks()[name].Task.Paused, "%s paused before the confirmation", name)
		}

		confirmed := confirmForm(t, res.body, "note", "database upgrade", "for", "2h")
		res = f.post("/jobs/bulk", confirmed)
		require.Equal(t, 200, res.status, res.body)
		assert.Contains(t, res.body, "Pause: 2 done")
		again := f.post("/jobs/bulk", confirmed)
		assert.Equal(t, 409, again.status, "the same confirmation sent again, as a reload of the result sends it")
		assert.Contains(t, again.body, "carried out already")
		assert.NotContains(t, res.body, "Not done")
		ts := f.tasks()
		for _, name := range []string{"a", "b"} {
			assert.True(t, ts[name].Task.Paused, name)
			assert.Equal(t, "database upgrade", ts[name].Task.PauseNote, name)
			assert.False(t, ts[name].Task.PausedUntil.IsZero(), name)
			d, _, err := f.defs.Get(context.Background(), name)
			require.NoError(t, err)
			assert.True(t, d.Paused, "the definition of %s", name)
		}
		assert.False(t, ts["c"].Task.Paused)

		// Run now: a paused task is not run, and says so; the Job runs.
		res = f.post("/jobs/bulk", form("do", "run", "sel", "task:a", "sel", "task:c", "sel", "job:report",
			"sel", "task:nope", "confirm", "1"))
		require.Equal(t, 200, res.status, res.body)
		assert.Contains(t, res.body, "Run now: 2 done, 2 failed")
		assert.Contains(t, res.body, "It is paused: resume it first.")
		assert.Contains(t, res.body, "There is no such task or job")
		synctest.Wait()
		assert.Equal(t, int64(1), f.jobRuns.Load())

		// As JSON: resume them.
		res = f.post("/jobs/api/bulk", form("do", "resume", "sel", "task:a", "sel", "task:b"))
		require.Equal(t, 200, res.status, res.body)
		var b jsonBulk
		require.NoError(t, json.Unmarshal([]byte(res.body), &b))
		assert.Equal(t, 2, b.Count, "without confirm=1, what it would do")
		assert.True(t, f.tasks()["a"].Task.Paused)
		res = f.post("/jobs/api/bulk", form("do", "resume", "sel", "task:a", "sel", "task:b", "sel", "job:nope", "confirm", "1"))
		require.Equal(t, 200, res.status, res.body)
		b = jsonBulk{}
		require.NoError(t, json.Unmarshal([]byte(res.body), &b))
		assert.Equal(t, 2, b.Done)
		require.Len(t, b.Failed, 1)
		assert.Equal(t, "job", b.Failed[0].Kind)
		assert.Equal(t, "nope", b.Failed[0].Name)
		assert.False(t, f.tasks()["a"].Task.Paused)
		assert.False(t, f.tasks()["b"].Task.Paused)

		// What does not read.
		for _, c := range []struct {
			body url.Values
			msg  string
		}{
			{form("sel", "task:a"), "The action must be run, pause or resume."},
			{form("do", "delete", "sel", "task:a"), "The action must be run, pause or resume."},
			{form("do", "pause"), "Nothing is selected"},
			{form("do", "pause", "sel", "a"), `A selection is task:NAME or job:NAME, not &#34;a&#34;.`},
			{form("do", "pause", "sel", "task:a", "for", "soon"), "a duration such as 2h"},
			{form("do", "pause", "all", "1", "state", "broken"), "The state must be one of"},
		} {
			res := f.post("/jobs/bulk", c.body)
			assert.Equal(t, 400, res.status, c.body)
			assert.Contains(t, res.body, c.msg, c.body)
		}
		assert.False(t, f.tasks()["a"].Task.Paused)
	})
}

// TestBulkAllMatching pauses every task a filter matches, 1,000, and
// refuses a filter that matches 1,001, or as many ticked.
func TestBulkAllMatching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var defs []cron.Task
		for i := range 1000 {
			defs = append(defs, task(fmt.Sprintf("t-%04d", i)))
		}
		defs = append(defs, cron.Task{Name: "t-1000", Handler: "fail", Spec: "0 9 * * *", Permanent: true})
		f := newFixture(t, nil, defs...)
		defer f.stop()
		synctest.Wait()

		list := f.get("/jobs/?handler=ok").body
		assert.Contains(t, list, "or all 1000 matching this filter")
		assert.Contains(t, list, `<input type="hidden" name="handler" value="ok">`)

		res := f.post("/jobs/bulk", form("do", "pause", "all", "1", "handler", "ok", "back", "handler=ok&page=3"))
		require.Equal(t, 200, res.status, res.body)
		assert.Contains(t, res.body, "Pause 1000 tasks and jobs?")
		assert.Contains(t, res.body, "Every task and job handler “ok” will be paused")
		assert.Contains(t, res.body, `href="task?name=t-0049"`)
		assert.NotContains(t, res.body, `href="task?name=t-0050"`, "50 named")
		assert.Contains(t, res.body, "and 950 more.")
		assert.Contains(t, res.body, `<a href="./?handler=ok&amp;page=3">Cancel</a>`)
		assert.Zero(t, paused(f), "paused before the confirmation")

		res = f.post("/jobs/bulk", confirmForm(t, res.body))
		require.Equal(t, 200, res.status, res.body)
		assert.Contains(t, res.body, "Pause: 1000 done")
		assert.Equal(t, 1000, paused(f))
		assert.False(t, f.tasks()["t-1000"].Task.Paused)

		// 1,001: refused, with what to do.
		res = f.post("/jobs/bulk", form("do", "resume", "all", "1", "q", "t-"))
		assert.Equal(t, 422, res.status)
		assert.Contains(t, res.body, "The filter matches 1,001; act on 1,000 at most: narrow the filter.")
		res = f.post("/jobs/api/bulk", form("do", "resume", "all", "1", "q", "t-", "confirm", "1"))
		assert.Equal(t, 422, res.status)
		sel := form("do", "resume", "confirm", "1")
		for _, d := range defs {
			sel.Add("sel", "task:"+d.Name)
		}
		res = f.post("/jobs/bulk", sel)
		assert.Equal(t, 422, res.status)
		assert.Contains(t, res.body, "1,001 are selected; act on 1,000 at most: select fewer.")
		assert.Equal(t, 1000, paused(f), "nothing resumed")

		// The filter matches others than those confirmed: asked again.
		res = f.post("/jobs/bulk", form("do", "resume", "all", "1", "q", "t-0", "count", "999", "confirm", "1"))
		require.Equal(t, 200, res.status, res.body)
		assert.Contains(t, res.body, "The filter matched 999 when you asked; it matches 1000 now.")
		confirm := res.body
		assert.Equal(t, 1000, paused(f), "nothing resumed")
		res = f.post("/jobs/api/bulk", form("do", "resume", "all", "1", "q", "t-0", "count", "999", "confirm", "1"))
		assert.Equal(t, 409, res.status)
		assert.Contains(t, res.body, "The filter matches 1,000 now, not 999: nothing was done.")
		assert.Equal(t, 1000, paused(f), "nothing resumed")
		res = f.post("/jobs/bulk", confirmForm(t, confirm))
		assert.Contains(t, res.body, "Resume: 1000 done")
		assert.Zero(t, paused(f))
	})
}

// paused counts the definitions of f that are paused.
func paused(f *fixture) int {
	n := 0
	for _, s := range f.table.Tasks() {
		d, _, err := f.defs.Get(context.Background(), s.Task.Name)
		if err == nil && d.Paused {
			n++
		}
	}
	return n
}

// TestBulkEscaped: a name with a script is text on the confirmation page
// and the result page, and goes through the confirmation as it is.
func TestBulkEscaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const evil = `<script>alert("x")</script>`
		f := newFixture(t, nil, task(evil))
		defer f.stop()
		synctest.Wait()
		list := f.get("/jobs/").body
		assert.NotContains(t, list, "<script>alert")
		assert.Contains(t, list, `value="task:&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"`)

		res := f.post("/jobs/bulk", form("do", "pause", "sel", "task:"+evil, "note", `<img src=x onerror=alert(1)>`))
		require.Equal(t, 200, res.status)
		assert.NotContains(t, res.body, "<script>alert")
		assert.NotContains(t, res.body, "<img src=x")
		assert.Contains(t, res.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</a>")
		res = f.post("/jobs/bulk", confirmForm(t, res.body))
		require.Equal(t, 200, res.status)
		assert.Contains(t, res.body, "Pause: 1 done")
		assert.True(t, f.tasks()[evil].Task.Paused)

		res = f.post("/jobs/bulk", form("do", "run", "sel", "task:"+evil, "confirm", "1"))
		assert.Contains(t, res.body, "1 failed")
		assert.NotContains(t, res.body, "<script>alert")
		assert.Contains(t, res.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</span>")
	})
}

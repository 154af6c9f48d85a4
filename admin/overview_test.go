package admin_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// The JSON of api/overview, as a script reads it.
type jsonOverview struct {
	AsOf   time.Time `json:"asOf"`
	Total  int       `json:"total"`
	Counts []struct {
		State string `json:"state"`
		Count int    `json:"count"`
		URL   string `json:"url"`
	} `json:"counts"`
	Nodes      []admin.Node `json:"nodes"`
	NodesError string       `json:"nodesError"`
	Chart      *struct {
		From     time.Time `json:"from"`
		Step     string    `json:"step"`
		Outcomes []string  `json:"outcomes"`
		Hours    []struct {
			Start  time.Time `json:"start"`
			Counts []int     `json:"counts"`
		} `json:"hours"`
		Totals []int `json:"totals"`
	} `json:"chart"`
	Warning string `json:"warning"`
}

// count returns the count of state in o, and its link.
func (o *jsonOverview) count(state string) (int, string) {
	for _, c := range o.Counts {
		if c.State == state {
			return c.Count, c.URL
		}
	}
	return -1, ""
}

// names returns the names of the items of every page of the list at
// target (a path and query with a ?), in order.
func (f *fixture) names(target string) []string {
	f.t.Helper()
	var names []string
	for page := 1; ; page++ {
		var l jsonList
		f.getJSON(target+"&page="+strconv.Itoa(page), 200, &l)
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
		if page >= l.Pages {
			return names
		}
	}
}

// overviewFixture is a fixture whose tasks are in every state: "a-ok" ran
// and succeeded, and had a slot skipped two hours before; "b-fail" failed;
// "c-slow" runs now; "d-paused" is paused; "e-never" and the Job "report"
// have never run. Its nodes are two, one gone, named with a script.
func overviewFixture(t *testing.T, edit func(*admin.Options)) *fixture {
	t.Helper()
	nodes := func(context.Context) ([]admin.Node, error) {
		return []admin.Node{
			{Name: "node-a", Live: true, Running: 1, RunLimit: 4, Heartbeat: time.Now(), Version: "v1.2.0"},
			{Name: `<script>alert("node")</script>`, Heartbeat: time.Now().Add(-time.Hour)},
		}, nil
	}
	f := newFixture(t, func(o *admin.Options) {
		o.Nodes = nodes
		if edit != nil {
			edit(o)
		}
	},
		task("a-ok"),
		cron.Task{Name: "b-fail", Handler: "fail", BusinessID: "shop-7", Spec: "0 9 * * *", Permanent: true},
		cron.Task{Name: "c-slow", Handler: "slow", Spec: "0 9 * * *", Zone: "Europe/Paris", Permanent: true},
		task("d-paused"), task("e-never"))
	synctest.Wait() // the Table has loaded the definitions
	ctx := context.Background()
	require.NoError(t, f.store.Note(ctx, []schedule.Record{{Job: "a-ok", Due: time.Now().Add(-2 * time.Hour), Status: schedule.Skipped}}))
	require.NoError(t, f.table.RunNow("a-ok"))
	require.NoError(t, f.table.RunNow("b-fail"))
	require.NoError(t, f.table.Pause("d-paused"))
	synctest.Wait()
	require.NoError(t, f.table.RunNow("c-slow"))
	synctest.Wait() // c-slow waits for its 400ms
	return f
}

// TestOverviewCounts counts the tasks and jobs in each state, and each
// count links to the list of exactly those.
func TestOverviewCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := overviewFixture(t, nil)
		defer f.stop()

		var o jsonOverview
		f.getJSON("/jobs/api/overview", 200, &o)
		assert.Equal(t, 6, o.Total, "five tasks and the Job")
		assert.Empty(t, o.Warning)
		want := map[string][]string{
			"failing": {"b-fail"},
			"late":    nil,
			"running": {"c-slow"},
			"paused":  {"d-paused"},
			"never":   {"d-paused", "e-never", "report"},
			"refused": nil,
		}
		for state, names := range want {
			n, link := o.count(state)
			assert.Equal(t, len(names), n, state)
			assert.Equal(t, "./?state="+state, link)
			got := f.names("/jobs/api/tasks?state=" + state)
			assert.Equal(t, names, got, "the list of the %s", state)
		}

		page := f.get("/jobs/")
		require.Equal(t, 200, page.status)
		assert.Contains(t, page.body, `<section class="overview"`)
		assert.Contains(t, page.body, `href="./?state=failing" title="Their last run failed."><span class="n">1</span> failing</a>`)
		assert.Contains(t, page.body, `<span class="n">3</span> never run</a>`)

		// The list of the failing, as a page, says so, and marks its count.
		page = f.get("/jobs/?state=failing")
		assert.Contains(t, page.body, "1 task or job, failing, page 1 of 1")
		assert.Contains(t, page.body, `href="./?state=failing" title="Their last run failed." aria-current="page"`)
		assert.Contains(t, page.body, `<a class="name" href="task?name=b-fail">b-fail</a>`)
		assert.NotContains(t, page.body, `href="task?name=a-ok"`)

		// A write through the page counts again at once.
		require.Equal(t, 303, f.post("/jobs/resume", form("kind", "task", "name", "d-paused")).status)
		f.getJSON("/jobs/api/overview", 200, &o)
		n, _ := o.count("paused")
		assert.Equal(t, 0, n, "resumed")

		synctest.Wait()
		time.Sleep(time.Second) // c-slow ends
		synctest.Wait()
	})
}

// TestOverviewNodes lists the nodes Options.Nodes gives, as text; an error
// reading them is said, and the rest of the overview shown.
func TestOverviewNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := overviewFixture(t, nil)
		var o jsonOverview
		f.getJSON("/jobs/api/overview", 200, &o)
		require.Len(t, o.Nodes, 2)
		assert.Equal(t, "node-a", o.Nodes[0].Name)
		assert.True(t, o.Nodes[0].Live)
		page := f.get("/jobs/")
		assert.Contains(t, page.body, "<p>1 live, 2 in the last 24 hours.</p>")
		assert.Contains(t, page.body, `<span class="node-name">node-a</span> <span class="badge live">live</span> 1 running of 4`)
		assert.Contains(t, page.body, "&lt;script&gt;alert(&#34;node&#34;)&lt;/script&gt;")
		assert.NotContains(t, page.body, `<script>alert`)
		time.Sleep(time.Second)
		f.stop()

		f = newFixture(t, func(o *admin.Options) {
			o.Nodes = func(context.Context) ([]admin.Node, error) { return nil, errors.New("database is down") }
		}, task("a"))
		defer f.stop()
		page = f.get("/jobs/")
		assert.Contains(t, page.body, "The nodes could not be read: database is down")
		assert.Contains(t, page.body, `<span class="n">2</span> never run`)

		f2 := newFixture(t, func(o *admin.Options) { o.Nodes = nil }, task("a"))
		defer f2.stop()
		assert.NotContains(t, f2.get("/jobs/").body, "<h3>Nodes</h3>", "no Nodes, no list")
	})
}

// TestOverviewChart draws the runs of the last 24 hours by hour and
// outcome, in an SVG with its title and description, and as a table.
func TestOverviewChart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := overviewFixture(t, nil)
		defer f.stop()

		var o jsonOverview
		f.getJSON("/jobs/api/overview", 200, &o)
		require.NotNil(t, o.Chart)
		c := o.Chart
		assert.Equal(t, []string{"Succeeded", "Failed", "Skipped or missed", "Running, cancelled or handed over"}, c.Outcomes)
		assert.Equal(t, "1h", c.Step)
		require.Len(t, c.Hours, 24)
		now := time.Now()
		assert.True(t, now.Truncate(time.Hour).Add(-23*time.Hour).Equal(c.From), "from %v", c.From)
		assert.Equal(t, []int{1, 1, 0, 1}, c.Hours[23].Counts, "this hour: a-ok, b-fail, c-slow running")
		assert.Equal(t, []int{0, 0, 1, 0}, c.Hours[21].Counts, "the slot of a-ok skipped two hours ago")
		assert.Equal(t, []int{1, 1, 1, 1}, c.Totals)

		page := f.get("/jobs/").body
		assert.Contains(t, page, `<svg viewBox="0 0 720 220" role="img" aria-labelledby="chart-t chart-d" class="runs">`)
		assert.Contains(t, page, `<title id="chart-t">Runs per hour, the last 24 hours, by outcome</title>`)
		assert.Contains(t, page, `<desc id="chart-d">Stacked bars, one per hour from Dec 31 01:00 UTC, by outcome. Totals: 1 succeeded, 1 failed, 1 skipped or missed, 1 running, cancelled or handed over.`)
		assert.Contains(t, page, `<title>Jan 1 00:00–01:00: 1 succeeded, 1 failed, 0 skipped or missed, 1 running, cancelled or handed over</title>`)
		assert.Contains(t, page, `fill="url(#p-failed)"`, "a pattern for each outcome, not a colour only")
		assert.Contains(t, page, `<pattern id="p-skipped"`)
		assert.Contains(t, page, `<summary>The runs per hour as a table</summary>`)
		assert.Contains(t, page, `<th scope="col">Skipped or missed</th>`)
		assert.Contains(t, page, `<tfoot><tr><th scope="row">Total</th><td data-label="Succeeded">1</td><td data-label="Failed">1</td>`)
		assert.NotContains(t, page, "<script>", "no script in the page but its file")

		// Without a Store, no chart.
		f2 := newFixture(t, func(o *admin.Options) { o.Store = nil }, task("a"))
		defer f2.stop()
		f2.getJSON("/jobs/api/overview", 200, &o)
		assert.Nil(t, o.Chart)
		assert.NotContains(t, f2.get("/jobs/").body, "<svg")
		time.Sleep(time.Second)
	})
}

// A runCounter is a MemoryStore that counts runs by hour itself
// (admin.RunCounter), and counts its calls of History.
type runCounter struct {
	*schedule.MemoryStore
	histories int
}

func (s *runCounter) History(ctx context.Context, job string, limit int) ([]schedule.Record, error) {
	s.histories++
	return s.MemoryStore.History(ctx, job, limit)
}

func (s *runCounter) CountRuns(_ context.Context, from time.Time, step time.Duration, n int) ([]map[schedule.Status]int, error) {
	out := make([]map[schedule.Status]int, n)
	out[n-1] = map[schedule.Status]int{schedule.Succeeded: 40, schedule.Missed: 2, schedule.Canceled: 1}
	out[0] = map[schedule.Status]int{schedule.Failed: 3}
	return out, nil
}

// The chart is read in one call of a Store that is a RunCounter, and not
// from the histories.
func TestOverviewRunCounter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &runCounter{MemoryStore: schedule.NewMemoryStore(10)}
		f := newFixture(t, func(o *admin.Options) { o.Store = store }, task("a"), task("b"))
		defer f.stop()
		synctest.Wait()
		var o jsonOverview
		f.getJSON("/jobs/api/overview", 200, &o)
		require.NotNil(t, o.Chart)
		assert.Equal(t, []int{40, 0, 2, 1}, o.Chart.Hours[23].Counts)
		assert.Equal(t, []int{0, 3, 0, 0}, o.Chart.Hours[0].Counts)
		assert.Equal(t, 0, store.histories)
		assert.Contains(t, f.get("/jobs/").body, `<text x="38" y="10" text-anchor="end" dominant-baseline="middle" class="axis">100</text>`,
			"the scale's top, above the 43 runs of the last hour")
	})
}

// TestListFilters filters the list by state, handler, business id, zone
// and name, together, and pages them; an unknown state is refused.
func TestListFilters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := overviewFixture(t, func(o *admin.Options) { o.PageSize = 2 })
		defer f.stop()
		for target, want := range map[string][]string{
			"/jobs/api/tasks?handler=fail":                {"b-fail"},
			"/jobs/api/tasks?handler=ok":                  {"a-ok", "d-paused", "e-never"},
			"/jobs/api/tasks?business=shop-7":             {"b-fail"},
			"/jobs/api/tasks?zone=Europe%2FParis":         {"c-slow"},
			"/jobs/api/tasks?zone=UTC":                    {"a-ok", "b-fail", "d-paused", "e-never", "report"},
			"/jobs/api/tasks?zone=UTC&state=never":        {"d-paused", "e-never", "report"},
			"/jobs/api/tasks?zone=UTC&state=never&q=REP":  {"report"},
			"/jobs/api/tasks?handler=ok&q=zzz":            nil,
			"/jobs/api/tasks?handler=nothing&state=never": nil,
		} {
			assert.Equal(t, want, f.names(target), target)
		}
		var l jsonList
		f.getJSON("/jobs/api/tasks?handler=ok&page=2", 200, &l)
		assert.Equal(t, 3, l.Total)
		assert.Equal(t, 2, l.Pages)

		page := f.get("/jobs/?handler=ok&zone=UTC")
		assert.Contains(t, page.body, "3 tasks and jobs, handler “ok”, zone “UTC”, page 1 of 2")
		assert.Contains(t, page.body, `href="./?handler=ok&amp;page=2&amp;zone=UTC" rel="next"`, "the pages keep the filters")
		assert.Contains(t, page.body, `<option value="ok">`, "the handlers to choose from")
		assert.Contains(t, page.body, `<option value="Europe/Paris">`, "the zones")
		assert.Contains(t, f.get("/jobs/?handler=nothing").body, "No task or job is handler “nothing”.")

		res := f.get("/jobs/api/tasks?state=broken")
		assert.Equal(t, 400, res.status)
		assert.Contains(t, res.body, "The state must be one of failing, late, running, paused, never, refused.")
		time.Sleep(time.Second)
	})
}

// TestOverviewEscaped: a task's name, its business id and a filter's text
// reach the overview and the filtered list as text.
func TestOverviewEscaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const evil = `<script>alert("x")</script>`
		const img = `<img src=x onerror=alert(1)>`
		f := newFixture(t, nil, cron.Task{Name: evil, Handler: "fail", BusinessID: img, Spec: "0 9 * * *", Permanent: true})
		defer f.stop()
		synctest.Wait()
		require.Equal(t, 303, f.post("/jobs/run", form("kind", "task", "name", evil)).status)
		synctest.Wait()
		for _, target := range []string{"/jobs/", "/jobs/?state=failing", "/jobs/?business=" + urlEscape(img),
			"/jobs/?handler=" + urlEscape(evil) + "&zone=" + urlEscape(img) + "&q=" + urlEscape(evil)} {
			res := f.get(target)
			require.Equal(t, 200, res.status, target)
			assert.NotContains(t, res.body, "<script>alert", target)
			assert.NotContains(t, res.body, "<img src=x", target)
		}
		res := f.get("/jobs/?business=" + urlEscape(img))
		assert.Contains(t, res.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "the task, found by its business id")
		assert.Contains(t, res.body, `value="&lt;img src=x onerror=alert(1)&gt;"`, "the filter, in its field")
		ov := f.get("/jobs/api/overview").body
		assert.NotContains(t, ov, "<")
	})
}

// Without Authorize, the page is read-only and still has its overview.
func TestOverviewReadOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := overviewFixture(t, func(o *admin.Options) { o.Authorize = nil })
		defer f.stop()
		page := f.get("/jobs/?state=failing")
		assert.Contains(t, page.body, `<section class="overview"`)
		assert.Contains(t, page.body, "read-only")
		assert.Contains(t, page.body, `<svg viewBox=`)
		assert.NotContains(t, page.body, `formaction="pause"`)
		assert.True(t, slices.Contains(f.names("/jobs/api/tasks?state=failing"), "b-fail"))
		time.Sleep(time.Second)
	})
}

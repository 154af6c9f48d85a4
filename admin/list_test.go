package admin_test

import (
	"context"
	"fmt"
	"net/http"
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

// TestListPages pages and searches the list, as a page and as JSON.
func TestListPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var defs []cron.Task
		for i := range 120 {
			defs = append(defs, task(fmt.Sprintf("shop-%03d", i)))
		}
		defs = append(defs, task("Nightly Export"))
		f := newFixture(t, func(o *admin.Options) { o.PageSize = 50 }, defs...)
		defer f.stop()

		var l jsonList
		f.getJSON("/jobs/api/tasks", 200, &l)
		assert.Equal(t, 122, l.Total, "120 shops, the export, the job")
		assert.Equal(t, 3, l.Pages)
		assert.Equal(t, 1, l.Page)
		require.Len(t, l.Items, 50)
		assert.Equal(t, "Nightly Export", l.Items[0].Name, "sorted by name, bytewise")
		assert.Equal(t, "report", l.Items[1].Name)
		assert.Equal(t, "job", l.Items[1].Kind)
		assert.Equal(t, "shop-000", l.Items[2].Name)
		assert.Equal(t, "0 9 * * *", l.Items[2].Spec)
		assert.Equal(t, "UTC", l.Items[2].Zone)
		assert.Equal(t, "At 09:00 in UTC", l.Items[2].Description)
		assert.Equal(t, time.Date(2000, 1, 1, 9, 0, 0, 0, time.UTC), l.Items[2].Next.UTC())

		f.getJSON("/jobs/api/tasks?page=3", 200, &l)
		require.Len(t, l.Items, 22)
		assert.Equal(t, "shop-119", l.Items[21].Name)
		f.getJSON("/jobs/api/tasks?page=9", 200, &l)
		assert.Empty(t, l.Items, "past the end")

		f.getJSON("/jobs/api/tasks?q=SHOP-11", 200, &l)
		assert.Equal(t, 10, l.Total, "any case")
		assert.Equal(t, "shop-110", l.Items[0].Name)
		f.getJSON("/jobs/api/tasks?q=export", 200, &l)
		require.Len(t, l.Items, 1)
		assert.Equal(t, "Nightly Export", l.Items[0].Name)
		f.getJSON("/jobs/api/tasks?q=shop&page=3", 200, &l)
		assert.Equal(t, 120, l.Total)
		require.Len(t, l.Items, 20)
		assert.Equal(t, "shop-100", l.Items[0].Name)

		page := f.get("/jobs/?q=shop&page=2")
		assert.Contains(t, page.body, `href="./?q=shop" rel="prev"`)
		assert.Contains(t, page.body, `href="./?page=3&amp;q=shop" rel="next"`)
		assert.Contains(t, page.body, `name="back" value="page=2&amp;q=shop"`)
		assert.Contains(t, page.body, "120 tasks and jobs named like “shop”, page 2 of 3")
		assert.Contains(t, f.get("/jobs/?q=zzz").body, "No job is named like “zzz”.")
	})
}

// TestHistoryPages pages a job's history, newest first.
func TestHistoryPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, func(o *admin.Options) { o.PageSize = 10 }, task("daily"))
		defer f.stop()
		start := time.Now().UTC().Add(-time.Hour)
		for i := range 25 {
			due := start.Add(time.Duration(i) * time.Minute)
			r := schedule.Record{Job: "report", Due: due, Status: schedule.Running, Start: due, Node: "n1", Attempt: 1}
			require.NoError(t, f.store.Claim(context.Background(), r))
			r.Status, r.End = schedule.Succeeded, due.Add(1500*time.Millisecond)
			if i%5 == 0 {
				r.Status, r.Err = schedule.Failed, fmt.Sprintf("boom %d", i)
			}
			require.NoError(t, f.store.Finish(context.Background(), r))
		}
		var d jsonDetail
		f.getJSON("/jobs/api/job?name=report", 200, &d)
		require.Len(t, d.History, 10)
		assert.True(t, d.More)
		assert.Equal(t, start.Add(24*time.Minute), d.History[0].Due.UTC(), "newest first")
		assert.Equal(t, "1.5s", d.History[0].Duration)
		assert.Equal(t, "Failed", d.History[4].Status)
		assert.Equal(t, "boom 20", d.History[4].Error)
		require.NotNil(t, d.Last)
		assert.Equal(t, start.Add(24*time.Minute), d.Last.Due.UTC())
		f.getJSON("/jobs/api/job?name=report&page=3", 200, &d)
		require.Len(t, d.History, 5)
		assert.False(t, d.More)
		assert.Equal(t, start, d.History[4].Due.UTC())
		f.getJSON("/jobs/api/job?name=report&page=4", 200, &d)
		assert.Empty(t, d.History)

		page := f.get("/jobs/job?name=report&page=2")
		assert.Contains(t, page.body, `href="job?name=report" rel="prev"`)
		assert.Contains(t, page.body, `href="job?name=report&amp;page=3" rel="next"`)
		assert.Contains(t, page.body, "boom 10")
		assert.Equal(t, 10, strings.Count(page.body, `<td data-label="Due">`))
	})
}

// TestSnapshot checks that the list reuses its reading of the Table for
// SnapshotAge, and that a write through the page makes it read again.
func TestSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, func(o *admin.Options) { o.SnapshotAge = time.Minute }, task("a"))
		defer f.stop()
		var l jsonList
		f.getJSON("/jobs/api/tasks", 200, &l)
		require.Equal(t, 2, l.Total)

		// A task defined elsewhere is not listed until the snapshot ages.
		_, err := f.defs.Create(context.Background(), task("b"))
		require.NoError(t, err)
		synctest.Wait()
		f.getJSON("/jobs/api/tasks", 200, &l)
		assert.Equal(t, 2, l.Total)
		time.Sleep(time.Minute)
		f.getJSON("/jobs/api/tasks", 200, &l)
		assert.Equal(t, 3, l.Total)

		// A pause through the page shows at once.
		require.Equal(t, 200, f.post("/jobs/api/pause", form("kind", "task", "name", "a")).status)
		f.getJSON("/jobs/api/tasks?q=a", 200, &l)
		require.NotEmpty(t, l.Items)
		assert.True(t, l.Items[0].Paused)
	})
}

// TestNewPanics checks the misuses New refuses.
func TestNewPanics(t *testing.T) {
	job := func(name string) *schedule.Job {
		return schedule.NewJob(name, schedule.Every(time.Hour), func(context.Context, schedule.Run) error { return nil })
	}
	for _, c := range []struct {
		o    admin.Options
		want string
	}{
		{admin.Options{Jobs: []*schedule.Job{nil}}, "admin: nil Job in Options.Jobs"},
		{admin.Options{Jobs: []*schedule.Job{job("a"), job("a")}}, `admin: two Jobs named "a"`},
		{admin.Options{Jobs: []*schedule.Job{job("a")}, Specs: map[string]string{"b": "@hourly"}}, `admin: Options.Specs names no Job: "b"`},
		{admin.Options{Jobs: []*schedule.Job{job("a")}, Specs: map[string]string{"a": "@often"}}, `admin: the spec of Job "a": cron: descriptor "@often": unknown; want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every`},
	} {
		assert.PanicsWithValue(t, c.want, func() { admin.New(c.o) })
	}
	assert.NotPanics(t, func() { admin.New(admin.Options{}).ServeHTTP(discard{}, mustRequest("GET", "/")) })
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

func mustRequest(method, target string) *http.Request {
	r, err := http.NewRequest(method, "http://admin.test"+target, nil)
	if err != nil {
		panic(err)
	}
	return r
}

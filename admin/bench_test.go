package admin_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// benchSpecs and benchZones are what a service's users pick, as in cron's
// BenchmarkTable, less the specs due every few minutes, whose runs would
// come in the middle of the measure.
var (
	benchSpecs = []string{"0 9 * * 1-5", "0 9 * * *", "0 * * * *", "30 2 * * *", "0 0 1 * *",
		"15 10 * * 1", "0 18 * * 5", "0 12 1,15 * *", "45 23 * * *", "0 6 * * 0,6"}
	benchZones = []string{"", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Europe/London", "Australia/Sydney"}
)

// serve serves one GET of target and returns its status and body.
func serve(h http.Handler, target string) (int, []byte) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "http://admin.test"+target, nil))
	return w.Code, w.Body.Bytes()
}

// report reports the size of a page, as sent and gzipped, and the time
// to serve it.
func report(b *testing.B, body []byte) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(body)
	zw.Close()
	b.ReportMetric(float64(len(body)), "B/page")
	b.ReportMetric(float64(z.Len()), "gzB/page")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
}

// benchTable returns a Table of n tasks in 10 specs and 6 zones, each
// with a last record in a MemoryStore (one in 7 Failed), its store and the
// definitions. The Table stops at the end of the benchmark.
func benchTable(b *testing.B, n int) (*cron.Table, *schedule.MemoryStore, []cron.Task) {
	ctx := context.Background()
	store := schedule.NewMemoryStore(10)
	defs := make([]cron.Task, n)
	due := time.Now().Truncate(time.Second) // no slot since: no catch-up runs
	for i := range defs {
		name := fmt.Sprintf("shop-%06d report", i)
		defs[i] = cron.Task{Name: name, Handler: "ok", BusinessID: "shop-" + strconv.Itoa(i),
			Spec: benchSpecs[i%len(benchSpecs)], Zone: benchZones[i%len(benchZones)], Permanent: true}
		r := schedule.Record{Job: name, Due: due, Status: schedule.Running, Start: due, Node: "node-1", Attempt: 1}
		if err := store.Claim(ctx, r); err != nil {
			b.Fatal(err)
		}
		r.Status, r.End = schedule.Succeeded, due.Add(1200*time.Millisecond)
		if i%7 == 0 {
			r.Status, r.Err = schedule.Failed, "shop unreachable: connection refused"
		}
		if err := store.Finish(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	w := wheel.New()
	b.Cleanup(func() { w.Stop() })
	tab := cron.NewTable(handlers, cron.WithLocation(time.UTC), cron.WithStore(store),
		cron.WithJobOptions(schedule.WithScheduler(w)))
	if _, err := tab.Apply(ctx, defs); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tab.Stop(ctx) })
	return tab, store, defs
}

// BenchmarkListPage measures the list with 100,000 tasks, each with a
// last record in a MemoryStore: a page from the snapshot of the names in
// cache (SnapshotAge, as most requests are); a page that reads the names
// again (SnapshotAge < 0, as the first request after a second does), and
// one that also merges them again (as after a task came or went); a
// search, the last page, the JSON, and a task's page. B/page is the size
// of the HTML sent. Run it three times and take the medians
// (admin/DESIGN.md):
//
//	cd admin && go test -run '^$' -bench '^BenchmarkListPage$' -benchtime 20x -count 3 .
func BenchmarkListPage(b *testing.B) {
	const n = 100_000
	tab, store, defs := benchTable(b, n)
	page := func(age time.Duration) http.Handler {
		return admin.New(admin.Options{Table: tab, Store: store, Authorize: allow, Location: time.UTC, SnapshotAge: age})
	}
	cached, fresh := page(time.Hour), page(-1)
	for _, c := range []struct {
		name   string
		h      http.Handler // nil: a new handler for each request
		target string
	}{
		{"snapshot=cached", cached, "/"},
		{"snapshot=read", fresh, "/"},
		{"snapshot=read/names-changed", nil, "/"},
		{"snapshot=cached/search", cached, "/?q=shop-0999"},
		{"snapshot=cached/last-page", cached, "/?page=2000"},
		{"snapshot=cached/json", cached, "/api/tasks"},
		{"task", cached, "/task?name=" + url.QueryEscape(defs[n/2].Name)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			h := c.h
			if h != nil {
				serve(h, c.target) // the snapshot, read
			}
			var body []byte
			for b.Loop() {
				if c.h == nil {
					h = page(-1) // its first request reads the names and merges them, as after a task came or went
				}
				var code int
				if code, body = serve(h, c.target); code != 200 {
					b.Fatalf("status %d", code)
				}
			}
			report(b, body)
		})
	}
}

// BenchmarkJobPage measures a job's page with 10,000 records in its
// history, in a MemoryStore: its first page of 50, and its last, the
// 200th, for which the store reads all 10,000 (History has no offset).
//
//	cd admin && go test -run '^$' -bench '^BenchmarkJobPage$' -benchtime 20x -count 3 .
func BenchmarkJobPage(b *testing.B) {
	const n = 10_000
	ctx := context.Background()
	store := schedule.NewMemoryStore(n)
	due := time.Now().Add(-n * time.Minute).Truncate(time.Minute)
	for i := range n {
		r := schedule.Record{Job: "report", Due: due, Status: schedule.Running, Start: due, Node: "node-1", Attempt: 1}
		if err := store.Claim(ctx, r); err != nil {
			b.Fatal(err)
		}
		r.Status, r.End = schedule.Succeeded, due.Add(1200*time.Millisecond)
		if i%7 == 0 {
			r.Status, r.Err = schedule.Failed, "shop unreachable: connection refused"
		}
		if err := store.Finish(ctx, r); err != nil {
			b.Fatal(err)
		}
		due = due.Add(time.Minute)
	}
	s, err := cron.Parse("0 * * * *", time.UTC)
	if err != nil {
		b.Fatal(err)
	}
	job := schedule.NewJob("report", s, func(context.Context, schedule.Run) error { return nil }, schedule.WithStore(store))
	if err := job.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer job.Stop(ctx)
	h := admin.New(admin.Options{Jobs: []*schedule.Job{job}, Specs: map[string]string{"report": "0 * * * *"},
		Store: store, Authorize: allow, Location: time.UTC})
	for _, page := range []int{1, 200} {
		b.Run("page="+strconv.Itoa(page), func(b *testing.B) {
			b.ReportAllocs()
			target := "/job?name=report&page=" + strconv.Itoa(page)
			var body []byte
			for b.Loop() {
				var code int
				if code, body = serve(h, target); code != 200 {
					b.Fatalf("status %d", code)
				}
			}
			report(b, body)
		})
	}
}

// BenchmarkOverview measures the list's page with its overview, with
// 100,000 tasks, each with a last record in a MemoryStore (one in 7
// Failed): the page when the overview's census is in cache (OverviewAge,
// as most requests are), and when the request reads it (OverviewAge < 0,
// as one request each OverviewAge does: the state of every task, in one
// TasksOf, and the History of each for the chart, since a MemoryStore is
// not a RunCounter); api/overview; and the list filtered by state, and by
// handler and zone, from the census in cache.
//
//	cd admin && go test -run '^$' -bench '^BenchmarkOverview$' -benchtime 20x -count 3 .
func BenchmarkOverview(b *testing.B) {
	const n = 100_000
	tab, store, _ := benchTable(b, n)
	page := func(age time.Duration) http.Handler {
		return admin.New(admin.Options{Table: tab, Store: store, Authorize: allow, Location: time.UTC,
			SnapshotAge: time.Hour, OverviewAge: age})
	}
	cached, fresh := page(time.Hour), page(-1)
	for _, c := range []struct {
		name   string
		h      http.Handler
		target string
	}{
		{"census=cached", cached, "/"},
		{"census=read", fresh, "/"},
		{"census=cached/json", cached, "/api/overview"},
		{"census=cached/failing", cached, "/?state=failing"},
		{"census=cached/handler+zone", cached, "/?handler=ok&zone=Asia%2FTokyo&page=100"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			serve(c.h, c.target) // the snapshot and the census, read
			var body []byte
			for b.Loop() {
				var code int
				if code, body = serve(c.h, c.target); code != 200 {
					b.Fatalf("status %d", code)
				}
			}
			report(b, body)
		})
	}
}

package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A fixture is a service with a Table following in-memory definitions, a
// Job of its own, one Store for both, and the page mounted at /jobs/.
type fixture struct {
	t       testing.TB
	table   *cron.Table
	store   *schedule.MemoryStore
	defs    *memDefs
	job     *schedule.Job
	jobRuns atomic.Int64
	h       http.Handler
}

// The handlers of the fixture's tasks: "ok" succeeds, "fail" fails with
// an error that quotes the task's business id, "slow" succeeds after
// 400ms.
var handlers = map[string]cron.Handler{
	"ok": func(context.Context, string, schedule.Run) error { return nil },
	"fail": func(_ context.Context, id string, _ schedule.Run) error {
		return errors.New("cannot reach " + id + ": connection refused")
	},
	"slow": func(ctx context.Context, _ string, _ schedule.Run) error {
		select {
		case <-time.After(400 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	},
}

// task returns a permanent task of the handler "ok", at 09:00 UTC every
// day.
func task(name string) cron.Task {
	return cron.Task{Name: name, Handler: "ok", Spec: "0 9 * * *", Permanent: true}
}

// allow is an Authorize that lets everyone write.
func allow(*http.Request) bool { return true }

// newFixture starts a fixture whose definitions are defs. Its page has
// the Table, the Job "report" (at 06:30 on weekdays), the Store, the
// Definitions, Authorize allow, and the zone UTC; edit changes those
// options first. Call stop at the end.
func newFixture(t testing.TB, edit func(*admin.Options), defs ...cron.Task) *fixture {
	f := &fixture{t: t, store: schedule.NewMemoryStore(100_000), defs: newMemDefs(defs...)}
	f.table = cron.NewTable(handlers, cron.WithLocation(time.UTC), cron.WithStore(f.store))
	if err := f.table.Follow(context.Background(), f.defs); err != nil {
		t.Fatal(err)
	}
	const spec = "30 6 * * 1-5"
	s, err := cron.Parse(spec, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	f.job = schedule.NewJob("report", s, func(context.Context, schedule.Run) error {
		f.jobRuns.Add(1)
		return nil
	}, schedule.WithStore(f.store))
	if err := f.job.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := admin.Options{Table: f.table, Jobs: []*schedule.Job{f.job}, Specs: map[string]string{"report": spec},
		Store: f.store, Definitions: f.defs, Authorize: allow, Location: time.UTC, Title: "Test jobs"}
	if edit != nil {
		edit(&o)
	}
	mux := http.NewServeMux()
	mux.Handle("/jobs/", http.StripPrefix("/jobs", admin.New(o)))
	f.h = mux
	return f
}

// stop stops the Table and the Job.
func (f *fixture) stop() {
	f.t.Helper()
	if err := f.table.Stop(context.Background()); err != nil {
		f.t.Error(err)
	}
	if err := f.job.Stop(context.Background()); err != nil {
		f.t.Error(err)
	}
}

// A response is what the handler answered.
type response struct {
	status int
	header http.Header
	body   string
}

// do serves a request for target, with form as its body if not nil, and
// the headers hdr, given as name, value, name, value...
func (f *fixture) do(method, target string, form url.Values, hdr ...string) response {
	f.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, "http://admin.test"+target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, string(b)}
}

// get is do for a GET.
func (f *fixture) get(target string) response {
	f.t.Helper()
	return f.do(http.MethodGet, target, nil)
}

// post is do for a form's POST.
func (f *fixture) post(target string, form url.Values) response {
	f.t.Helper()
	return f.do(http.MethodPost, target, form)
}

// postJSON posts body, JSON, to target.
func (f *fixture) postJSON(target, body string) response {
	f.t.Helper()
	r := httptest.NewRequest(http.MethodPost, "http://admin.test"+target, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return response{w.Code, w.Header(), w.Body.String()}
}

// getJSON gets target and decodes its JSON body into v, after checking
// its status.
func (f *fixture) getJSON(target string, status int, v any) {
	f.t.Helper()
	res := f.get(target)
	if res.status != status {
		f.t.Fatalf("GET %s: status %d, want %d: %s", target, res.status, status, res.body)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/json" {
		f.t.Fatalf("GET %s: Content-Type %q", target, ct)
	}
	reflect.ValueOf(v).Elem().SetZero() // the fields omitted are zero
	if err := json.Unmarshal([]byte(res.body), v); err != nil {
		f.t.Fatalf("GET %s: %v: %s", target, err, res.body)
	}
}

// form returns the form of the fields, given as name, value, ...
func form(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

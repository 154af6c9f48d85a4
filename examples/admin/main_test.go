package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones of the tasks, wherever the host has none

	"go.uber.org/goleak"

	"github.com/circulation-go/circulation/examples/internal/cmdtest"
)

func TestMain(m *testing.M) {
	cmdtest.RunMainIfChild(main)
	goleak.VerifyTestMain(m)
}

// TestService starts the service on a free port and uses its page as its
// users would: the viewer looks, the admin runs a task, and defines one.
func TestService(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var out strings.Builder
	c := config{addr: "127.0.0.1:0", adminPass: "a-secret", viewerPass: "v-secret", location: time.UTC}
	go func() { done <- serve(ctx, c, &out, func(url string) { ready <- url }) }()
	var base string
	select {
	case base = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, out.String())
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		http.DefaultClient.CloseIdleConnections()
	}()
	if !strings.Contains(out.String(), "admin page: "+base) {
		t.Errorf("the URL is not printed:\n%s", out.String())
	}

	do := func(method, path, user, pass string, form url.Values) (int, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		r, err := http.NewRequest(method, base+path, body)
		if err != nil {
			t.Fatal(err)
		}
		if form != nil {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if user != "" {
			r.SetBasicAuth(user, pass)
		}
		res, err := http.DefaultTransport.RoundTrip(r) // no redirect followed
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	if code, _ := do("GET", "", "", "", nil); code != 401 {
		t.Errorf("no user: %d, want 401", code)
	}
	if code, _ := do("GET", "", "admin", "wrong", nil); code != 401 {
		t.Errorf("a wrong password: %d, want 401", code)
	}
	code, page := do("GET", "", "viewer", "v-secret", nil)
	if code != 200 || !strings.Contains(page, "shop-1 daily report") || strings.Contains(page, "Run now") {
		t.Errorf("the viewer's list: %d, want the tasks and no button:\n%s", code, page)
	}
	run := url.Values{"kind": {"task"}, "name": {"shop-3 weekly digest"}}
	if code, _ := do("POST", "run", "viewer", "v-secret", run); code != 403 {
		t.Errorf("the viewer's run: %d, want 403", code)
	}
	if code, page := do("GET", "", "admin", "a-secret", nil); code != 200 || !strings.Contains(page, "Run now") {
		t.Errorf("the admin's list: %d, want the buttons", code)
	}
	if code, _ := do("POST", "run", "admin", "a-secret", run); code != 303 {
		t.Errorf("the admin's run: %d, want 303", code)
	}

	// The run's record reaches the store, and the task's page.
	var task struct {
		Loaded  bool `json:"loaded"`
		History []struct {
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"history"`
	}
	get := func(path string) {
		t.Helper()
		code, body := do("GET", path, "viewer", "v-secret", nil)
		if code != 200 {
			t.Fatalf("GET %s: %d: %s", path, code, body)
		}
		task.History = nil
		if err := json.Unmarshal([]byte(body), &task); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the record of the run", func() bool {
		get("api/task?name=" + url.QueryEscape("shop-3 weekly digest"))
		return len(task.History) == 1 && task.History[0].Status == "Succeeded" && task.History[0].Reason == "Manual"
	})

	// A task defined by the admin: the Table loads it.
	def := url.Values{"name": {"shop-4 report"}, "handler": {"report"}, "businessId": {"shop-4"},
		"spec": {"0 7 * * *"}, "permanent": {"1"}, "version": {"0"}}
	if code, body := do("POST", "create", "admin", "a-secret", def); code != 303 {
		t.Fatalf("create: %d: %s", code, body)
	}
	waitFor(t, "the new task loaded", func() bool {
		get("api/task?name=" + url.QueryEscape("shop-4 report"))
		return task.Loaded
	})

	// The audit log, in the SQLite file, says who did what.
	code, body := do("GET", "api/audit", "viewer", "v-secret", nil)
	if code != 200 {
		t.Fatalf("GET api/audit: %d: %s", code, body)
	}
	var log struct {
		Entries []struct{ Actor, Action, Kind, Name string } `json:"entries"`
	}
	if err := json.Unmarshal([]byte(body), &log); err != nil {
		t.Fatal(err)
	}
	want := []struct{ Actor, Action, Kind, Name string }{
		{"admin", "create", "task", "shop-4 report"},
		{"admin", "run", "task", "shop-3 weekly digest"},
	}
	if !reflect.DeepEqual(log.Entries, want) {
		t.Errorf("the audit log: %+v, want %+v", log.Entries, want)
	}
}

// waitFor calls cond until it holds, for 30 seconds at most: the service
// runs on the real clock.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30s", what)
		}
		<-tick.C
	}
}

// TestFlags checks what the program says of bad flags.
func TestFlags(t *testing.T) {
	_, stderr, code := cmdtest.Run(t, "extra")
	if code != 2 || !strings.Contains(stderr, `admin: unexpected argument "extra"`) {
		t.Errorf("an argument: exit %d, %q", code, stderr)
	}
	_, stderr, code = cmdtest.Run(t, "-addr", "256.0.0.1:http-alt-nope", "-db", t.TempDir()+"/jobs.db")
	if code != 1 || !strings.HasPrefix(stderr, "admin: listen tcp") {
		t.Errorf("a bad address: exit %d, %q", code, stderr)
	}
	_, stderr, code = cmdtest.Run(t, "-db", "/no/such/folder/jobs.db")
	if code != 1 || !strings.Contains(stderr, "/no/such/folder") {
		t.Errorf("a bad file: exit %d, %q", code, stderr)
	}
}

package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A service mounts the page under /jobs/. Without Authorize it is
// read-only; its JSON routes serve scripts.
func ExampleNew() {
	report := func(ctx context.Context, shop string, r schedule.Run) error { return nil }
	table := cron.NewTable(map[string]cron.Handler{"report": report}, cron.WithLocation(time.UTC))
	defer table.Stop(context.Background())
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := table.Apply(context.Background(), []cron.Task{
		{Name: "shop-1 daily", Handler: "report", BusinessID: "shop-1", Spec: "0 9 * * *", Zone: "Europe/Paris", Start: start, Permanent: true},
	}); err != nil {
		fmt.Println(err)
	}

	mux := http.NewServeMux()
	mux.Handle("/jobs/", http.StripPrefix("/jobs", admin.New(admin.Options{Table: table, Location: time.UTC})))

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/jobs/api/tasks?q=shop", nil))
	var list struct {
		Total int `json:"total"`
		Items []struct {
			Name, Description, Zone string
			Next                    time.Time
		} `json:"items"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
		fmt.Println(err)
	}
	fmt.Println(w.Code, list.Total)
	for _, t := range list.Items {
		fmt.Printf("%s: %s; next %s\n", t.Name, t.Description, t.Next.Format(time.RFC3339))
	}

	w = httptest.NewRecorder()
	pause := url.Values{"kind": {"task"}, "name": {"shop-1 daily"}}
	r := httptest.NewRequest("POST", "/jobs/api/pause", strings.NewReader(pause.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	mux.ServeHTTP(w, r)
	fmt.Println(w.Code, strings.TrimSpace(w.Body.String()))
	// Output:
	// 200 1
	// shop-1 daily: At 09:00 in Europe/Paris; next 2030-01-01T09:00:00+01:00
	// 403 {"error":"This page is read-only: no change can be made here."}
}

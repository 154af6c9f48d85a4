package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// A page is what serving one admin page took, median of 5.
type page struct {
	took  time.Duration
	stmts uint64 // sent by the Store
}

// adminPages serves pages of the admin page of tb, on s, each five times,
// and returns the median time of each, and the statements s sent for it:
// a page of the list that reads the names again (SnapshotAge < 0, as the
// first request after a second does), first on a new handler (as after a
// task came or went: its list is merged again), then on one that read
// them before; a search; and a task's page.
func adminPages(tb *cron.Table, s *sqlstore.Store, names []string) ([4]page, error) {
	newHandler := func() http.Handler {
		return admin.New(admin.Options{Table: tb, Store: s, Location: time.UTC, SnapshotAge: -1})
	}
	h := newHandler()
	var ps [4]page
	for i, target := range []string{"/?page=2", "/?page=2", "/?q=task-99", "/task?name=" + names[len(names)/2]} {
		var tooks []time.Duration
		for range 5 {
			if i == 0 {
				h = newHandler()
			}
			before := s.Stats().Statements
			began := time.Now()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "http://admin.test"+target, nil))
			tooks = append(tooks, time.Since(began))
			if w.Code != 200 {
				return ps, fmt.Errorf("admin: GET %s: %d", target, w.Code)
			}
			ps[i].stmts = s.Stats().Statements - before
		}
		slices.Sort(tooks)
		ps[i].took = tooks[2]
	}
	return ps, nil
}

// overviewPages serves the admin page's first page, its overview above
// the list, five times each: reading the census of every task's state for
// each request (OverviewAge < 0), which is what a reading costs; while the
// census is read again in the background (the request that finds it old
// and starts the reading, and the one after, during it); and from the
// census cached.
func overviewPages(tb *cron.Table, s *sqlstore.Store) ([3]page, error) {
	var ps [3]page
	for i, age := range []time.Duration{-1, 2 * time.Second, time.Hour} {
		h := admin.New(admin.Options{Table: tb, Store: s, Location: time.UTC, OverviewAge: age, SnapshotAge: time.Hour})
		serve := func(target string) (string, error) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "http://admin.test"+target, nil))
			if w.Code != 200 {
				return "", fmt.Errorf("admin: GET %s: %d", target, w.Code)
			}
			return w.Body.String(), nil
		}
		asOf := func() (string, error) {
			body, err := serve("/api/overview")
			if err != nil {
				return "", err
			}
			var o struct {
				AsOf string `json:"asOf"`
			}
			return o.AsOf, json.Unmarshal([]byte(body), &o)
		}
		if _, err := serve("/"); err != nil { // the names, and the census cached
			return ps, err
		}
		read, err := asOf()
		if err != nil {
			return ps, err
		}
		var tooks []time.Duration
		for range 5 {
			if i == 1 {
				// The census is old, not older than twice its age: the
				// next request is served it and starts reading it again.
				time.Sleep(age + 10*time.Millisecond)
			}
			before := s.Stats().Statements
			for k := range 1 + i%2 {
				began := time.Now()
				if _, err := serve("/"); err != nil {
					return ps, err
				}
				tooks = append(tooks, time.Since(began))
				if k == 0 {
					ps[i].stmts = s.Stats().Statements - before
				}
			}
			for i == 1 { // until the census read in the background is in
				now, err := asOf()
				if err != nil {
					return ps, err
				}
				if now != read {
					read = now
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		slices.Sort(tooks)
		ps[i].took = tooks[len(tooks)/2]
	}
	return ps, nil
}

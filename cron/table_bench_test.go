package cron_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// tableSpecs and tableZones are what a service's users pick: a dozen
// specs, most tasks in a zone of their own, half of them in a window.
var (
	tableSpecs = []string{"0 9 * * 1-5", "0 9 * * *", "*/5 * * * *", "0 * * * *", "30 2 * * *", "0 0 1 * *",
		"15 10 * * 1", "0 18 * * 5", "*/15 8-18 * * 1-5", "0 12 1,15 * *", "45 23 * * *", "0 6 * * 0,6"}
	tableZones = []string{"", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Europe/London", "Australia/Sydney"}
)

func tableTasks(n, changed int) []cron.Task {
	ts := make([]cron.Task, n)
	for i := range ts {
		spec := tableSpecs[i%len(tableSpecs)]
		if i < changed {
			spec = tableSpecs[(i+1)%len(tableSpecs)]
		}
		ts[i] = cron.Task{Name: "task-" + strconv.Itoa(i), Handler: "h", BusinessID: "b-" + strconv.Itoa(i),
			Spec: spec, Zone: tableZones[i%len(tableZones)], Permanent: true}
		if i%2 == 1 { // half of them in a window of their own
			ts[i].Permanent = false
			ts[i].Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
			ts[i].End = ts[i].Start.AddDate(50, 0, 0)
		}
	}
	return ts
}

// BenchmarkTable measures a Table of many tasks on one wheel.Wheel: the
// heap each task holds once applied, the time of its first Apply, of an
// Apply of the same definitions, and of one with 1% of them changed.
// Run it once per size:
//
//	cd cron && go test -run '^$' -bench '^BenchmarkTable$' -benchtime 1x -count 3 .
func BenchmarkTable(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			if testing.Short() && n > 100_000 {
				b.Skip("-short: check.sh's run of every benchmark once")
			}
			for b.Loop() {
				defs, changed := tableTasks(n, 0), tableTasks(n, n/100)
				w := wheel.New()
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				before := ms.HeapAlloc
				tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }},
					cron.WithLocation(time.UTC), cron.WithJobOptions(schedule.WithScheduler(w)))
				start := time.Now()
				if _, err := tab.Apply(context.Background(), defs); err != nil {
					b.Fatal(err)
				}
				apply := time.Since(start)
				runtime.GC()
				runtime.ReadMemStats(&ms)
				perTask := float64(ms.HeapAlloc-before) / float64(n)
				start = time.Now()
				if _, err := tab.Apply(context.Background(), defs); err != nil {
					b.Fatal(err)
				}
				same := time.Since(start)
				start = time.Now()
				ch, err := tab.Apply(context.Background(), changed)
				if err != nil {
					b.Fatal(err)
				}
				onePct := time.Since(start)
				if len(ch.Changed) != n/100 {
					b.Fatalf("%d changed, want %d", len(ch.Changed), n/100)
				}
				b.ReportMetric(perTask, "B/task")
				b.ReportMetric(apply.Seconds(), "apply-s")
				b.ReportMetric(same.Seconds(), "reapply-same-s")
				b.ReportMetric(onePct.Seconds(), "reapply-1%-s")
				if err := tab.Stop(context.Background()); err != nil {
					b.Fatal(err)
				}
				w.Stop()
				runtime.KeepAlive(defs)
			}
		})
	}
}

// BenchmarkTableTasks measures Tasks on a Table of 100,000 tasks, on the
// default Store (a schedule.MemoryStore, read one task at a time): the
// inventory sorted by name, each task's definition, next run, last record
// and runs in flight.
//
//	cd cron && go test -run '^$' -bench '^BenchmarkTableTasks$' -benchtime 10x -count 1 .
func BenchmarkTableTasks(b *testing.B) {
	const n = 100_000
	w := wheel.New()
	defer w.Stop()
	tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }},
		cron.WithLocation(time.UTC), cron.WithJobOptions(schedule.WithScheduler(w)))
	if _, err := tab.Apply(context.Background(), tableTasks(n, 0)); err != nil {
		b.Fatal(err)
	}
	defer tab.Stop(context.Background())
	b.ReportAllocs()
	for b.Loop() {
		if ts := tab.Tasks(); len(ts) != n {
			b.Fatalf("%d tasks, want %d", len(ts), n)
		}
	}
}

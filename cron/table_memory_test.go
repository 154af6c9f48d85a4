package cron_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/wheel"
)

// A Table of 100,000 tasks holds each in under 500 bytes of heap (about
// 462 bytes, as this test logs it; BenchmarkTable measures it at other
// sizes). A time since which each task is scheduled, kept in the default
// MemoryStore, once made it about 510.
func TestTableMemory(t *testing.T) {
	if race || testing.Short() {
		t.Skip("the race detector and -short: BenchmarkTable measures it")
	}
	const n = 100_000
	defs := tableTasks(n, 0)
	w := wheel.New()
	defer w.Stop()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }},
		cron.WithLocation(time.UTC), cron.WithJobOptions(schedule.WithScheduler(w)))
	if _, err := tab.Apply(context.Background(), defs); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	perTask := float64(ms.HeapAlloc-before) / n
	if err := tab.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(defs)
	t.Logf("%.0f heap bytes a task", perTask)
	if perTask > 500 {
		t.Errorf("%.0f heap bytes a task, want under 500", perTask)
	}
}

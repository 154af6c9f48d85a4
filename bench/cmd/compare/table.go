package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// A row of the table: one figure of one workload, and wheel's goal for it.
type row struct {
	label  string
	key    string // workload.figure
	format string // for one value
	goal   string
	// met reports whether wheel meets the goal, given its median and its
	// ratio to std's median.
	met func(v, ratio float64) bool
}

// cpuRows replaces the wall-clock rows of rows when compare runs with
// -clock cpu: the same loops timed by the process's CPU time, which other
// work on the machine does not inflate. For two goroutines, ops per CPU
// second close to one goroutine's means they do not contend: with two
// free processors they would scale.
func cpuRows(rs []row) []row {
	for i, r := range rs {
		switch r.key {
		case "schedule.schedule_ns", "schedule.cancel_ns":
			rs[i].key = strings.Replace(r.key, "_ns", "_cpu_ns", 1)
			rs[i].label = strings.Replace(r.label, "ns/op", "CPU ns/op", 1)
		case "steady1.ops_per_s", "steady2.ops_per_s":
			rs[i].key = strings.Replace(r.key, "ops_per_s", "ops_per_cpu_s", 1)
			rs[i].label = strings.Replace(r.label, "ops/s", "ops per CPU s", 1)
		}
	}
	return rs
}

func rows(c config) []row {
	k := func(n int) string {
		if n%(1<<20) == 0 {
			return fmt.Sprintf("%dM", n>>20)
		}
		return fmt.Sprintf("%dk", n/1000)
	}
	return []row{
		{"schedule, delays U[1s,60s], " + k(c.N) + " pending: ns/op", "schedule.schedule_ns", "%.0f", "≤ 0.5× std",
			func(_, r float64) bool { return r <= 0.5 }},
		{"cancel (Stop) at " + k(c.N) + " pending, oldest first: ns/op", "schedule.cancel_ns", "%.0f", "≤ 0.5× std",
			func(_, r float64) bool { return r <= 0.5 }},
		{"heap bytes per pending timer", "schedule.heap_bytes", "%.1f", "≤ 48",
			func(v, _ float64) bool { return v <= 48 }},
		{"steady stop-oldest + schedule-new, " + k(c.Ring) + " pending, 1 goroutine: ops/s", "steady1.ops_per_s", "%.3gM", "≥ 2.5× std",
			func(_, r float64) bool { return r >= 2.5 }},
		{"same, 2 goroutines: ops/s", "steady2.ops_per_s", "%.3gM", "≥ 2× std",
			func(_, r float64) bool { return r >= 2 }},
		{k(c.N) + " timers due within 1 s: CPU s", "burst.cpu_s", "%.2f", "≤ 0.5× std",
			func(_, r float64) bool { return r <= 0.5 }},
		{k(c.N) + " timers due within 1 s: peak RSS MB", "burst.rss_mb", "%.0f", "≤ 0.15× std",
			func(_, r float64) bool { return r <= 0.15 }},
		{"lateness p50, tick 1 ms: ms", "lateness.p50_ms", "%.2f", "",
			nil},
		{"lateness p99, tick 1 ms: ms", "lateness.p99_ms", "%.2f", "≤ 2",
			func(v, _ float64) bool { return v <= 2 }},
		{"lateness max, tick 1 ms: ms", "lateness.max_ms", "%.2f", "",
			nil},
		{"callbacks run early: %", "lateness.early_pc", "%.1f", "0",
			func(v, _ float64) bool { return v == 0 }},
		{"idle, one timer 1 h away: CPU µs per s", "idle.cpu_us_per_s", "%.0f", "no ticking",
			func(v, _ float64) bool { return v < 1000 }},
		{"hold " + k(c.N) + " timers U[1min,2min), none due: CPU ms per s", "hold.cpu_ms_per_s", "%.1f", "",
			nil},
	}
}

// printTable writes the medians as a markdown table, one column per
// implementation, with each figure's ratio to std's and whether wheel meets
// its goal (not judged when smoke: the sizes are too small).
func printTable(w io.Writer, impls []string, results map[string]map[string][]float64, c config, cpu, smoke bool) {
	fmt.Fprintf(w, "| workload | %s | goal for wheel |\n", strings.Join(impls, " | "))
	fmt.Fprintf(w, "| --- |%s --- |\n", strings.Repeat(" ---: |", len(impls)))
	rs := rows(c)
	if cpu {
		rs = cpuRows(rs)
	}
	for _, r := range rs {
		if _, ok := results[impls[0]][r.key]; !ok {
			continue
		}
		cells := []string{r.label}
		base := median(results["std"][r.key])
		for _, name := range impls {
			vs := results[name][r.key]
			if len(vs) == 0 {
				cells = append(cells, "")
				continue
			}
			v := median(vs)
			cell := format(r.format, v)
			if name != "std" && base > 0 && r.met != nil {
				cell += fmt.Sprintf(" (%.2f×)", v/base)
			}
			cells = append(cells, cell)
		}
		goal := r.goal
		// A goal relative to std is judged only when std ran too.
		relative := strings.Contains(r.goal, "std")
		if vs := results["wheel"][r.key]; len(vs) > 0 && r.met != nil && !smoke && (base > 0 || !relative) {
			v := median(vs)
			ratio := 0.0
			if base > 0 {
				ratio = v / base
			}
			if r.met(v, ratio) {
				goal += " ✓"
			} else {
				goal += " ✗"
			}
		}
		cells = append(cells, goal)
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

func format(f string, v float64) string {
	if strings.HasSuffix(f, "M") {
		return fmt.Sprintf(f, v/1e6)
	}
	return fmt.Sprintf(f, v)
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

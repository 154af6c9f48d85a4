// Command compare measures the runtime's timers (time.AfterFunc), package
// wheel and the Go timing wheels the module proxy serves, on the workloads
// of wheel's performance goals, and prints a markdown table of the medians
// of several runs with each figure's ratio to time.AfterFunc.
//
// Every figure comes from a fresh child process running one workload on
// one implementation, so that memory, CPU and garbage collection are
// measured alone; within a run the implementations alternate, so that load
// from elsewhere on the machine hits them alike.
//
//	go run ./cmd/compare              # full: 1M timers, 5 runs (a few minutes)
//	go run ./cmd/compare -smoke       # CI: small N, 1 run (a few seconds)
//	go run ./cmd/compare -clock cpu     # ns/op and ops/s by CPU time, for a busy machine
//	go run ./cmd/compare -impls std,wheel,wheel-go,wheel-pool,wheel-inline -workloads burst
//	go run ./cmd/compare -clock both -runs 7 -out ../bench/RESULTS.md -note "2 cores, shared"
//
// With -out, compare also writes the table to a markdown file that says
// when and how it was taken: the command, the date, the commit, the Go
// version, GOMAXPROCS, the processor and the load average. The project's
// documents quote their figures for these workloads from bench/RESULTS.md.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

func main() {
	var (
		smoke     = flag.Bool("smoke", false, "small sizes and one run, for CI")
		runs      = flag.Int("runs", 5, "runs per figure; the table shows medians")
		n         = flag.Int("n", 1<<20, "timers pending (schedule, cancel, heap) and due within 1 s (burst)")
		implList  = flag.String("impls", strings.Join(implOrder, ","), "implementations, comma-separated: "+strings.Join(names(), ","))
		workList  = flag.String("workloads", "", "workloads, comma-separated (default all)")
		child     = flag.String("child", "", "internal: run one workload on one implementation and print JSON")
		childImpl = flag.String("impl", "", "internal: the implementation for -child")
		clock     = flag.String("clock", "wall", "time ns/op and ops/s by the wall clock (wall), by the process's CPU time (cpu), or print both tables (both)")
		profile   = flag.String("cpuprofile", "", "with -child: write a CPU profile of the child to this file")
		out       = flag.String("out", "", "also write the results, with how and when they were taken, to this markdown file")
		note      = flag.String("note", "", "with -out: a note on the machine, such as what else ran on it")
	)
	flag.Parse()
	c := config{N: *n, Ring: 100_000, Steady: time.Second, Late: 20_000, Idle: 3 * time.Second, Hold: 2 * time.Second, Tick: time.Millisecond}
	if *smoke {
		*runs = 1
		c = config{N: 20_000, Ring: 10_000, Steady: 100 * time.Millisecond, Late: 1_000, Idle: 300 * time.Millisecond, Hold: 200 * time.Millisecond, Tick: time.Millisecond}
	}
	if *child != "" {
		if *profile != "" {
			f, err := os.Create(*profile)
			if err != nil {
				fail("%v", err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				fail("%v", err)
			}
			defer pprof.StopCPUProfile()
		}
		runChild(*child, *childImpl, c)
		return
	}

	if *clock != "wall" && *clock != "cpu" && *clock != "both" {
		fail("-clock %q: want wall, cpu or both", *clock)
	}
	impls := strings.Split(*implList, ",")
	works := workloads
	if *workList != "" {
		works = nil
		for _, name := range strings.Split(*workList, ",") {
			works = append(works, lookup(name))
		}
	}
	for _, name := range impls {
		if _, ok := implsByName(name); !ok {
			fail("unknown implementation %q", name)
		}
	}

	// results[impl][figure] holds one value per run.
	results := map[string]map[string][]float64{}
	for _, name := range impls {
		results[name] = map[string][]float64{}
	}
	load0, rev := loadavg(), commit()
	start := time.Now()
	for r := range *runs {
		for _, w := range works {
			for _, name := range impls {
				res := spawn(w.name, name, *smoke, *n)
				for k, v := range res {
					results[name][w.name+"."+k] = append(results[name][w.name+"."+k], v)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "run %d/%d done after %v\n", r+1, *runs, time.Since(start).Round(time.Second))
	}
	var tables bytes.Buffer
	w := io.MultiWriter(os.Stdout, &tables)
	fmt.Fprintf(w, "Medians of %d runs, each figure from a fresh process; N = %d; GOMAXPROCS = %s; load average %s → %s.\n\n",
		*runs, c.N, gomaxprocs(), load0, loadavg())
	if *smoke {
		fmt.Fprint(w, "Smoke run: sizes too small to judge the goals.\n\n")
	}
	if *clock != "cpu" {
		printTable(w, impls, results, c, false, *smoke)
	}
	if *clock == "both" {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "The same runs, ns/op and ops/s timed by the process's CPU time:")
		fmt.Fprintln(w)
	}
	if *clock != "wall" {
		printTable(w, impls, results, c, true, *smoke)
	}
	if *out != "" {
		taken := takenBy{
			Args:     os.Args[1:],
			Start:    start,
			Elapsed:  time.Since(start),
			Commit:   rev,
			CPU:      cpuModel(),
			NumCPU:   runtime.NumCPU(),
			Note:     *note,
			LoadFrom: load0,
			LoadTo:   loadavg(),
		}
		if err := os.WriteFile(*out, resultsFile(taken, tables.Bytes()), 0o666); err != nil {
			fail("%v", err)
		}
	}
}

func names() []string {
	var ns []string
	for name := range impls {
		ns = append(ns, name)
	}
	slices.Sort(ns)
	return ns
}

func implsByName(name string) (func(time.Duration) scheduler, bool) {
	f, ok := impls[name]
	return f, ok
}

func lookup(name string) workload {
	for _, w := range workloads {
		if w.name == name {
			return w
		}
	}
	fail("unknown workload %q", name)
	panic("unreachable")
}

// runChild runs workload work on implementation impl and prints the result
// as JSON.
func runChild(work, impl string, c config) {
	newImpl, ok := implsByName(impl)
	if !ok {
		fail("unknown implementation %q", impl)
	}
	res := lookup(work).run(func() scheduler { return newImpl(c.Tick) }, c)
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fail("%v", err)
	}
}

// spawn runs one workload on one implementation in a child process.
func spawn(work, impl string, smoke bool, n int) result {
	exe, err := os.Executable()
	if err != nil {
		fail("%v", err)
	}
	args := []string{"-child", work, "-impl", impl, "-n", fmt.Sprint(n)}
	if smoke {
		args = append(args, "-smoke")
	}
	cmd := exec.Command(exe, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		fail("%s on %s: %v", work, impl, err)
	}
	var res result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		fail("%s on %s: %v: %q", work, impl, err, out.String())
	}
	return res
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:1], "")
}

func gomaxprocs() string { return fmt.Sprint(runtime.GOMAXPROCS(0)) }

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "compare: "+format+"\n", args...)
	os.Exit(1)
}

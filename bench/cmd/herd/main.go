// Command herd measures a herd: many jobs due at the same instant, each
// run once, as the tasks that users define all at 09:00 are. It reports
// how late the runs start after the due time (p50, p99, the last), how
// long until every run is recorded, how many slots ran twice or never,
// the statements sent per slot, and each process's peak memory, with its
// goroutines, its stack memory and its heap at their peak.
//
// On a database, every job is a schedule.Job with WithStore(sqlstore), on a
// wheel.Wheel, due at one instant (schedule.Once), in -replicas processes
// that share the table; a run returns at once:
//
//	go run ./cmd/herd -store postgres -jobs 100000 -replicas 3
//	go run ./cmd/herd -store postgres -jobs 100000 -replicas 1
//	go run ./cmd/herd -store sqlite -jobs 100000
//
// With -lib river, the same herd on PostgreSQL runs on River
// (riverqueue/river) instead, for comparison: a queue has no job that waits
// in each process for its instant, so the parent inserts the jobs ahead,
// each with InsertOpts.ScheduledAt at the due instant, River's way of
// having a herd, before it starts the replicas, each a river.Client that
// works them; "all recorded" is then all completed (see river.go):
//
//	go run ./cmd/herd -store postgres -lib river -jobs 100000 -replicas 3
//
// In memory, the same herd on package schedule, robfig/cron v3 and gocron
// v2, one process each:
//
//	go run ./cmd/herd -store memory -lib schedule -jobs 100000
//	go run ./cmd/herd -store memory -lib robfig -jobs 100000
//
// PostgreSQL is a throwaway server started with initdb and pg_ctl in a
// temporary folder, unless -dsn names one. With -idle, herd instead holds
// -jobs idle jobs on PostgreSQL for that long and reports the statements
// they sent per second while none was due, and how long their start took
// (schedule.StartAll; with -each, one Start a job, its baseline):
//
//	go run ./cmd/herd -store postgres -jobs 100000 -idle 1s
//	go run ./cmd/herd -store postgres -jobs 100000 -idle 1s -each
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/circulation-go/circulation/schedule/sqlstore/sqlstoretest"
)

// options are herd's flags; the parent passes them on to its replicas.
type options struct {
	Store    string
	Lib      string
	Jobs     int
	Replicas int
	Lease    time.Duration
	Pool     int
	Lead     time.Duration
	Timeout  time.Duration
	DSN      string
	Idle     time.Duration
	Each     bool  // with Idle: start the jobs one Start each, not with StartAll
	Runs     int   // the Store's RunLimit, 0 for its default
	Due      int64 // Unix ns, for the replicas
	Node     string
	JSON     bool
	Race     bool   // the replicas race for every slot: sqlstore.WithSharing(false)
	Profile  string // a replica's CPU profile, from ready to its stop
	Heap     string // a replica's heap profile, once the herd has run
}

func main() {
	var o options
	flag.StringVar(&o.Store, "store", "postgres", "postgres, sqlite or memory")
	flag.StringVar(&o.Lib, "lib", "schedule", "with -store memory: schedule, robfig or gocron; with -store postgres: schedule or river")
	flag.IntVar(&o.Jobs, "jobs", 100_000, "jobs, each due once at the same instant")
	flag.IntVar(&o.Replicas, "replicas", 1, "processes sharing the database, each with every job")
	flag.DurationVar(&o.Lease, "lease", 30*time.Second, "the store's lease")
	flag.IntVar(&o.Pool, "pool", 16, "connections per replica (PostgreSQL); SQLite has one")
	flag.DurationVar(&o.Lead, "lead", 0, "time from the start to the due instant (default: enough to start the jobs)")
	flag.DurationVar(&o.Timeout, "timeout", 3*time.Minute, "give up waiting for the runs after this long past the due time")
	flag.StringVar(&o.DSN, "dsn", "", "a PostgreSQL to use instead of a throwaway one")
	flag.DurationVar(&o.Idle, "idle", 0, "hold idle jobs this long and report their statements per second")
	flag.BoolVar(&o.Each, "each", false, "with -idle: start the jobs with one Start each, not StartAll (its baseline)")
	flag.IntVar(&o.Runs, "runs", 0, "the runs in flight per replica (the Store's RunLimit, River's MaxWorkers); 0 for its default")
	flag.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	profile := flag.String("cpuprofile", "", "write a CPU profile of this process to the file")
	flag.StringVar(&o.Profile, "replicaprofile", "", "write each replica's CPU profile, from ready to its stop, to this file with .node appended")
	flag.StringVar(&o.Heap, "replicaheap", "", "write each replica's heap profile, once the herd has run, to this file with .node appended")
	child := flag.Bool("child", false, "internal: run as a replica")
	flag.Int64Var(&o.Due, "due", 0, "internal: the due instant of a replica, in Unix ns")
	flag.StringVar(&o.Node, "node", "", "internal: a replica's node name")
	flag.BoolVar(&o.Race, "race", false, "the replicas race for every slot (sqlstore.WithSharing(false)) rather than share the jobs")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "herd:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	var err error
	switch {
	case *child && o.Lib == "river":
		err = riverReplica(o)
	case *child:
		err = replica(o)
	case o.Store == "memory":
		err = memory(o)
	default:
		err = parent(o)
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "herd:", err)
		os.Exit(1)
	}
}

// A result is what a replica reports when it stops.
type result struct {
	Node     string
	Setup    time.Duration // from its start to all its jobs started
	Starts   []int32       // the jobs whose Func started, once per start
	Late     []int64       // each start's lateness, in ns, in the order of Starts
	RSS      int64         // peak resident memory, bytes
	Routines int           // peak goroutines, from ready until the herd has run (peaks)
	Stacks   int64         // peak bytes of stack memory, as Routines
	PeakHeap int64         // peak bytes of the heap's objects, live and not yet swept, as Routines
	Heap     int64         // live heap once the herd has run, its jobs not stopped yet (liveHeap), bytes
	CPU      time.Duration // user and system time
	Stats    map[string]uint64
	Leftover int // runs still waiting in the RunLimit when it stopped
}

// parent runs a herd on a database: it prepares the table, starts the
// replicas, waits for every run to be recorded, stops them and reports.
func parent(o options) error {
	if o.Replicas < 1 || o.Jobs < 1 {
		return fmt.Errorf("-replicas %d, -jobs %d: want at least 1", o.Replicas, o.Jobs)
	}
	switch {
	case o.Lib == "river" && o.Store != "postgres":
		return fmt.Errorf("-lib river: wants -store postgres")
	case o.Lib == "river" && (o.Idle > 0 || o.Race):
		return fmt.Errorf("-lib river: -idle and -race are for -lib schedule")
	case o.Lib != "schedule" && o.Lib != "river":
		return fmt.Errorf("-lib %q with -store %s: want schedule or river", o.Lib, o.Store)
	}
	switch o.Store {
	case "postgres":
		if o.DSN == "" {
			pg, err := sqlstoretest.StartPostgres("shared_buffers=256MB")
			if err != nil {
				return err
			}
			defer pg.Remove()
			o.DSN = pg.DSN()
		}
	case "sqlite":
		dir, err := os.MkdirTemp("", "herd-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.DSN = filepath.Join(dir, "herd.db")
	default:
		return fmt.Errorf("-store %q: want postgres, sqlite or memory", o.Store)
	}
	db, err := prepare(o)
	if err != nil {
		return err
	}
	defer db.Close()
	if o.Idle > 0 {
		return idle(o)
	}
	if o.Lead == 0 {
		o.Lead = 10*time.Second + time.Duration(o.Jobs/10_000)*time.Second
	}
	due := time.Now().Add(o.Lead).Truncate(time.Second)
	o.Due = due.UnixNano()
	if o.Lib == "river" {
		if err := insertRiver(o, due); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
		err   strings.Builder
	}
	var procs []*proc
	defer func() {
		for _, p := range procs {
			if p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
				_ = p.cmd.Wait()
			}
		}
	}()
	for i := range o.Replicas {
		p := &proc{cmd: exec.Command(exe, replicaArgs(o, fmt.Sprint("n", i))...)}
		p.cmd.Stderr = &p.err
		var err error
		if p.stdin, err = p.cmd.StdinPipe(); err != nil {
			return err
		}
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			return err
		}
		p.out = bufio.NewReaderSize(out, 1<<20)
		if err := p.cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		line, err := p.out.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "ready") {
			return fmt.Errorf("a replica did not get ready: %q %v: %s", line, err, p.err.String())
		}
	}
	if time.Now().After(due) {
		return fmt.Errorf("the replicas were ready after the due time: give a longer -lead than %v", o.Lead)
	}
	count := recordedSQL
	if o.Lib == "river" {
		count = completedSQL
	}
	recorded, err := awaitRecorded(db, o, due, count)
	if err != nil {
		return err
	}
	var results []result
	for _, p := range procs {
		p.stdin.Close()
		var r result
		if err := json.NewDecoder(p.out).Decode(&r); err != nil {
			return fmt.Errorf("reading a replica's result: %v: %s", err, p.err.String())
		}
		if err := p.cmd.Wait(); err != nil {
			return fmt.Errorf("a replica: %v: %s", err, p.err.String())
		}
		results = append(results, r)
	}
	return report(o, due, recorded, results)
}

func replicaArgs(o options, node string) []string {
	return []string{"-child", "-store", o.Store, "-lib", o.Lib, "-jobs", strconv.Itoa(o.Jobs), "-lease", o.Lease.String(),
		"-pool", strconv.Itoa(o.Pool), "-runs", strconv.Itoa(o.Runs), "-dsn", o.DSN, "-due", strconv.FormatInt(o.Due, 10), "-node", node,
		"-race=" + strconv.FormatBool(o.Race), "-replicaprofile", o.Profile, "-replicaheap", o.Heap}
}

// A summary is a herd's figures.
type summary struct {
	Store              string
	Lib                string `json:",omitempty"`
	Jobs, Replicas     int
	Lease              time.Duration `json:",omitempty"`
	AllStarted         time.Duration // the last first start, after the due time
	LateP50, LateP99   time.Duration
	AllRecorded        time.Duration `json:",omitempty"` // until every run had a Succeeded record (River: every job completed)
	RunsPerSecond      float64
	RanTwice, NeverRan int
	Shares             []float64           // per process: its part of the runs
	StatementsPerSlot  float64             `json:",omitempty"`
	PeakRSSMB          []float64           // per process
	PeakGoroutines     []int               // per process, from ready until the herd has run
	PeakStacksMB       []float64           // per process: its stack memory at its peak
	PeakHeapMB         []float64           // per process: its heap's objects, live and not yet swept, at their peak
	HeapAfterMB        []float64           // per process: its live heap once the herd has run
	CPUSeconds         []float64           // per process
	SetupSeconds       []float64           // per process: creating and starting its jobs
	Stats              []map[string]uint64 `json:",omitempty"`
}

func report(o options, due time.Time, recorded time.Duration, rs []result) error {
	s := summary{Store: o.Store, Jobs: o.Jobs, Replicas: len(rs), Lease: o.Lease, AllRecorded: recorded}
	if o.Store == "memory" || o.Lib == "river" {
		s.Lib, s.Lease = o.Lib, 0
	}
	starts := make([]int, o.Jobs)
	first := make([]int64, o.Jobs)
	for i := range first {
		first[i] = -1
	}
	var statements uint64
	for _, r := range rs {
		for k, j := range r.Starts {
			starts[j]++
			if l := r.Late[k]; first[j] < 0 || l < first[j] {
				first[j] = l
			}
		}
		s.PeakRSSMB = append(s.PeakRSSMB, float64(r.RSS)/1e6)
		s.HeapAfterMB = append(s.HeapAfterMB, float64(r.Heap)/1e6)
		s.PeakGoroutines = append(s.PeakGoroutines, r.Routines)
		s.PeakStacksMB = append(s.PeakStacksMB, float64(r.Stacks)/1e6)
		s.PeakHeapMB = append(s.PeakHeapMB, float64(r.PeakHeap)/1e6)
		s.Shares = append(s.Shares, float64(len(r.Starts))/float64(o.Jobs))
		s.CPUSeconds = append(s.CPUSeconds, r.CPU.Seconds())
		s.SetupSeconds = append(s.SetupSeconds, r.Setup.Seconds())
		statements += r.Stats["Statements"]
		if r.Stats != nil {
			s.Stats = append(s.Stats, r.Stats)
		}
	}
	var late []int64
	for j, n := range starts {
		switch {
		case n == 0:
			s.NeverRan++
		case n > 1:
			s.RanTwice++
		}
		if first[j] >= 0 {
			late = append(late, first[j])
		}
	}
	slices.Sort(late)
	if len(late) > 0 {
		s.AllStarted = time.Duration(late[len(late)-1])
		s.LateP50 = time.Duration(late[len(late)/2])
		s.LateP99 = time.Duration(late[len(late)*99/100])
	}
	end := s.AllStarted
	if recorded > 0 {
		end = recorded
	}
	if end > 0 {
		s.RunsPerSecond = float64(len(late)) / end.Seconds()
	}
	if o.Store != "memory" {
		s.StatementsPerSlot = float64(statements) / float64(o.Jobs)
	}
	if o.JSON {
		return json.NewEncoder(os.Stdout).Encode(s)
	}
	fmt.Printf("herd: %s", s.Store)
	if s.Lib != "" {
		fmt.Printf(" (%s)", s.Lib)
	}
	fmt.Printf(", %d jobs due at once, %d process(es)", s.Jobs, s.Replicas)
	if s.Lease > 0 {
		fmt.Printf(", lease %v", s.Lease)
	}
	fmt.Println()
	fmt.Printf("all started:     %.2f s after the due time (lateness p50 %.2f s, p99 %.2f s)\n",
		s.AllStarted.Seconds(), s.LateP50.Seconds(), s.LateP99.Seconds())
	if recorded > 0 {
		fmt.Printf("all recorded:    %.2f s\n", recorded.Seconds())
	}
	fmt.Printf("runs per second: %.0f\n", s.RunsPerSecond)
	fmt.Printf("ran twice: %d, never ran: %d\n", s.RanTwice, s.NeverRan)
	fmt.Printf("share of runs:   %s\n", floats(s.Shares, "%.3f"))
	if o.Store != "memory" {
		fmt.Printf("statements per slot: %.3f\n", s.StatementsPerSlot)
	}
	fmt.Printf("peak RSS, MB:    %s\n", floats(s.PeakRSSMB, "%.0f"))
	fmt.Printf("heap after, MB:  %s (live, once the herd has run)\n", floats(s.HeapAfterMB, "%.0f"))
	fmt.Printf("goroutines:      %s at the peak, stack memory %s MB\n", ints(s.PeakGoroutines), floats(s.PeakStacksMB, "%.0f"))
	fmt.Printf("heap peak, MB:   %s (objects, live and not yet swept)\n", floats(s.PeakHeapMB, "%.0f"))
	fmt.Printf("CPU, s:          %s\n", floats(s.CPUSeconds, "%.1f"))
	fmt.Printf("setup, s:        %s\n", floats(s.SetupSeconds, "%.1f"))
	for i, st := range s.Stats {
		fmt.Printf("store stats, n%d: %v\n", i, st)
	}
	if s.RanTwice > 0 || s.NeverRan > 0 {
		return fmt.Errorf("%d slots ran twice, %d never ran", s.RanTwice, s.NeverRan)
	}
	return nil
}

func floats(fs []float64, format string) string {
	var parts []string
	for _, f := range fs {
		parts = append(parts, fmt.Sprintf(format, f))
	}
	return strings.Join(parts, ", ")
}

func ints(is []int) string {
	var parts []string
	for _, i := range is {
		parts = append(parts, strconv.Itoa(i))
	}
	return strings.Join(parts, ", ")
}

package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
	"github.com/circulation-go/circulation/wheel"
)

// table is the herd's table of run records.
const table = "herd"

// openStore opens the database and Store of o.
func openStore(o options) (*sqlstore.Store, *sql.DB, error) {
	var db *sql.DB
	var err error
	d := sqlstore.PostgreSQL
	if o.Store == "sqlite" {
		d = sqlstore.SQLite
		db, err = sqlstore.OpenSQLite(o.DSN)
	} else {
		db, err = sql.Open("pgx", o.DSN)
		if err == nil {
			db.SetMaxOpenConns(o.Pool)
			db.SetMaxIdleConns(o.Pool)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	opts := []sqlstore.Option{sqlstore.WithTable(table), sqlstore.WithLease(o.Lease), sqlstore.WithSharing(!o.Race)}
	if o.Node != "" {
		opts = append(opts, sqlstore.WithNode(o.Node))
	}
	if o.Runs > 0 {
		opts = append(opts, sqlstore.WithRunLimit(o.Runs))
	}
	s, err := sqlstore.New(context.Background(), db, d, opts...)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return s, db, nil
}

// A start is one start of a job's Func.
type start struct {
	job  int32
	late int64
}

// replica runs every job of the herd on the shared table, until its
// standard input closes; then it stops them and prints its result.
func replica(o options) error {
	begin := time.Now()
	store, db, err := openStore(o)
	if err != nil {
		return err
	}
	defer db.Close()
	due := time.Unix(0, o.Due)
	w := wheel.New()
	defer w.Stop()
	starts := make([]start, 2*o.Jobs)
	var n atomic.Int64
	jobs := make([]*schedule.Job, o.Jobs)
	for i := range jobs {
		f := func(context.Context, schedule.Run) error {
			if k := n.Add(1) - 1; int(k) < len(starts) {
				starts[k] = start{job: int32(i), late: int64(time.Since(due))}
			}
			return nil
		}
		jobs[i] = schedule.NewJob("h"+strconv.Itoa(i), schedule.Once(due), f,
			schedule.WithStore(store), schedule.WithScheduler(w), schedule.WithNode(o.Node))
	}
	if err := schedule.StartAll(context.Background(), jobs...); err != nil {
		return err
	}
	// Ready once the Store shares the jobs with every replica: the
	// others' first heartbeats come a quarter lease apart at most.
	for !o.Race && o.Store != "sqlite" && len(store.Sharing()) < o.Replicas && time.Now().Before(due) {
		time.Sleep(10 * time.Millisecond)
	}
	setup := time.Since(begin)
	h, endProfile, err := hold(o)
	if err != nil {
		return err
	}
	waiting := store.RunLimit().Waiting()
	if err := each(jobs, func(j *schedule.Job) error { return j.Stop(context.Background()) }); err != nil {
		return err
	}
	endProfile()
	r := result{Node: o.Node, Setup: setup, RSS: peakRSS(), Heap: h.heap, Routines: h.routines, Stacks: h.stacks,
		PeakHeap: h.peakHeap, CPU: cpuTime(), Stats: statsMap(store.Stats()), Leftover: waiting}
	return send(r, starts[:min(int(n.Load()), len(starts))])
}

// A holding is what hold measured of a replica: its live heap once the
// herd has run (liveHeap), and its goroutines, its stack memory and its
// heap's objects at their peak, from ready until then (peaks).
type holding struct {
	heap     int64
	routines int
	stacks   int64
	peakHeap int64
}

// hold tells the parent that the replica is ready, profiles it from then
// on if o.Profile names a file, and waits until the parent closes its
// standard input: the herd has run. It returns what it measured, and the
// function that ends the profile.
func hold(o options) (h holding, endProfile func(), err error) {
	pk := watchPeaks()
	fmt.Println("ready")
	endProfile = func() {}
	if o.Profile != "" {
		f, err := os.Create(o.Profile + "." + o.Node)
		if err != nil {
			pk.stop()
			return h, nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			pk.stop()
			return h, nil, err
		}
		endProfile = func() {
			pprof.StopCPUProfile()
			f.Close()
		}
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	h.routines, h.stacks, h.peakHeap = pk.stop()
	h.heap = liveHeap()
	if o.Heap != "" {
		f, err := os.Create(o.Heap + "." + o.Node)
		if err != nil {
			return h, nil, err
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			return h, nil, err
		}
	}
	return h, endProfile, nil
}

// send writes r, with the starts its replica recorded, to standard
// output, where the parent reads it.
func send(r result, starts []start) error {
	for _, s := range starts {
		r.Starts = append(r.Starts, s.job)
		r.Late = append(r.Late, s.late)
	}
	out := bufio.NewWriter(os.Stdout)
	if err := json.NewEncoder(out).Encode(r); err != nil {
		return err
	}
	return out.Flush()
}

// liveHeap returns the bytes of the heap that a full collection leaves:
// once the herd has run, what the jobs, the store and the harness's own
// record of the starts (32 bytes a job) keep while the jobs wait for
// their next slots.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// each calls f for every job, 64 at a time, and returns the first error.
func each(jobs []*schedule.Job, f func(*schedule.Job) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 64)
	for w := range errs {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if int(i) >= len(jobs) {
					return
				}
				if err := f(jobs[i]); err != nil && errs[w] == nil {
					errs[w] = err
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// peakRSS returns the process's peak resident memory (VmHWM), in bytes.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// cpuTime returns the process's user and system time.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// statsMap returns the fields of a Store's Stats by name.
func statsMap(st sqlstore.Stats) map[string]uint64 {
	m := map[string]uint64{}
	v := reflect.ValueOf(st)
	for i := range v.NumField() {
		m[v.Type().Field(i).Name] = v.Field(i).Uint()
	}
	return m
}

// Command tablestart measures a cron.Table of many tasks that follows the
// definitions table of schedule/sqlstore (Store.Definitions), in one
// process: the read of every definition (Definitions.Tasks), which each
// start and each change applied does; the Table's first start, when no
// task has a record yet, and a second, of a new Table on a new Store, once
// every task has one; the statements each start sends per task; Tasks on
// the whole table; and how soon a change of one definition is applied,
// written by another Store (seen at the next poll of the version) and by
// the Table's own (seen at once, through Changes). It also serves the
// admin page of the started Table, every task with a record: a page of
// the list that reads the names again (as the first request after
// SnapshotAge does), a search, and a task's page, each with the
// statements it sent, medians of 5.
//
//	go run ./cmd/tablestart -store postgres -tasks 100000 -rounds 3
//	go run ./cmd/tablestart -store sqlite -tasks 100000 -rounds 3
//
// The tasks are those of cron's BenchmarkTable: a dozen specs, six zones,
// half of them in a window of their own. The first thousand are written
// with Definitions.Create, and copied by one INSERT ... SELECT to make
// -tasks. Between the two starts every task runs once, by RunNow, so that
// each has a record. All the jobs share one wheel.Wheel. Each round has
// tables of its own; PostgreSQL is a throwaway server started by the
// command, unless -dsn names one.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
	"github.com/circulation-go/circulation/schedule/sqlstore/sqlstoretest"
	"github.com/circulation-go/circulation/wheel"
)

type options struct {
	store  string
	tasks  int
	rounds int
	dsn    string
	pool   int
	runs   int // records a task, its run and copies of it an hour apart before it
}

func main() {
	var o options
	flag.StringVar(&o.store, "store", "postgres", "postgres or sqlite")
	flag.IntVar(&o.tasks, "tasks", 100_000, "tasks, a multiple of 1,000 above 1,000")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds, each on tables of its own; the medians are reported")
	flag.StringVar(&o.dsn, "dsn", "", "a PostgreSQL to use instead of a throwaway one")
	flag.IntVar(&o.pool, "pool", 16, "connections per Store on PostgreSQL; SQLite has one")
	flag.IntVar(&o.runs, "records", 1, "records a task before the second start: its run, and copies of it an hour apart before it")
	profile := flag.String("cpuprofile", "", "write a CPU profile to the file")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tablestart:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
	}
	err := run(o)
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tablestart:", err)
		os.Exit(1)
	}
}

// A round is what one round measured.
type round struct {
	create      time.Duration // a Create, on average
	read        time.Duration // Definitions.Tasks: every definition, read and decoded
	first       time.Duration // Follow, no task with a record
	firstStmts  uint64
	heapPerTask float64 // the Table's heap after its first start, per task
	records     time.Duration
	stop        time.Duration // Stop of the Table, every task with a record
	second      time.Duration // Follow, every task with a record
	secondStmts uint64
	tasks       time.Duration // Tasks, every task with a record
	polled      time.Duration // a change by another Store, until the Table applied it
	own         time.Duration // a change by the Table's Store
	pages       [4]page       // the admin page's list read again (names changed, and not), a search, a task's page
	overview    [3]page       // the admin page's overview: its census read for the request, read in the background, and cached
}

func run(o options) error {
	if o.tasks < 1000 || o.tasks%1000 != 0 || o.rounds < 1 {
		return fmt.Errorf("-tasks %d, -rounds %d: want a multiple of 1,000 and at least a round", o.tasks, o.rounds)
	}
	switch o.store {
	case "postgres":
		if o.dsn == "" {
			pg, err := sqlstoretest.StartPostgres("shared_buffers=256MB")
			if err != nil {
				return err
			}
			defer pg.Remove()
			o.dsn = pg.DSN()
		}
	case "sqlite":
		dir, err := os.MkdirTemp("", "tablestart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.dsn = dir
	default:
		return fmt.Errorf("-store %q: want postgres or sqlite", o.store)
	}
	fmt.Printf("tablestart: %s, %d tasks, %d rounds, %d cores\n", o.store, o.tasks, o.rounds, runtime.NumCPU())
	var rs []round
	for k := range o.rounds {
		r, err := measure(o, fmt.Sprintf("tablestart%d", k+1))
		if err != nil {
			return err
		}
		fmt.Printf("round %d: definitions read in %.2f s; first start %.2f s (%.4f statements a task), second %.2f s (%.4f), Tasks %.0f ms, "+
			"a change applied in %.0f ms (another Store) and %.0f ms (its own); heap %.0f B a task; "+
			"%d runs recorded in %.1f s, Stop %.2f s; a Create %.1f ms; "+
			"admin: list read again %.1f ms (%d statements), names unchanged %.1f ms (%d), search %.1f ms (%d), a task's page %.1f ms (%d); "+
			"overview: census read %.1f ms (%d statements), a request while it is read in the background %.1f ms, cached %.1f ms (%d)\n",
			k+1, r.read.Seconds(), r.first.Seconds(), float64(r.firstStmts)/float64(o.tasks), r.second.Seconds(),
			float64(r.secondStmts)/float64(o.tasks), ms(r.tasks), ms(r.polled), ms(r.own), r.heapPerTask,
			o.tasks, r.records.Seconds(), r.stop.Seconds(), ms(r.create),
			ms(r.pages[0].took), r.pages[0].stmts, ms(r.pages[1].took), r.pages[1].stmts, ms(r.pages[2].took), r.pages[2].stmts,
			ms(r.pages[3].took), r.pages[3].stmts, ms(r.overview[0].took), r.overview[0].stmts, ms(r.overview[1].took), ms(r.overview[2].took), r.overview[2].stmts)
		rs = append(rs, r)
	}
	med := func(f func(round) float64) float64 {
		vs := make([]float64, len(rs))
		for i, r := range rs {
			vs[i] = f(r)
		}
		slices.Sort(vs)
		return vs[len(vs)/2]
	}
	fmt.Println("medians:")
	fmt.Println("| store | definitions read | first start | statements a task | second start | statements a task | Tasks() | change, another Store | change, own Store | heap a task |")
	fmt.Printf("| %s | %.2f s | %.2f s | %.4f | %.2f s | %.4f | %.0f ms | %.0f ms | %.0f ms | %.0f B |\n", o.store,
		med(func(r round) float64 { return r.read.Seconds() }),
		med(func(r round) float64 { return r.first.Seconds() }),
		med(func(r round) float64 { return float64(r.firstStmts) / float64(o.tasks) }),
		med(func(r round) float64 { return r.second.Seconds() }),
		med(func(r round) float64 { return float64(r.secondStmts) / float64(o.tasks) }),
		med(func(r round) float64 { return ms(r.tasks) }),
		med(func(r round) float64 { return ms(r.polled) }),
		med(func(r round) float64 { return ms(r.own) }),
		med(func(r round) float64 { return r.heapPerTask }))
	fmt.Println("| store | Tasks() | admin list, names read again | names unchanged | search | a task's page |")
	fmt.Printf("| %s | %.0f ms | %.1f ms (%.0f statements) | %.1f ms (%.0f) | %.1f ms (%.0f) | %.1f ms (%.0f) |\n", o.store,
		med(func(r round) float64 { return ms(r.tasks) }),
		med(func(r round) float64 { return ms(r.pages[0].took) }),
		med(func(r round) float64 { return float64(r.pages[0].stmts) }),
		med(func(r round) float64 { return ms(r.pages[1].took) }),
		med(func(r round) float64 { return float64(r.pages[1].stmts) }),
		med(func(r round) float64 { return ms(r.pages[2].took) }),
		med(func(r round) float64 { return float64(r.pages[2].stmts) }),
		med(func(r round) float64 { return ms(r.pages[3].took) }),
		med(func(r round) float64 { return float64(r.pages[3].stmts) }))
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// open opens a Store on the table of o's database, on a pool of its own.
func open(o options, table string) (*sqlstore.Store, *sql.DB, error) {
	var db *sql.DB
	var err error
	d := sqlstore.PostgreSQL
	if o.store == "sqlite" {
		d = sqlstore.SQLite
		db, err = sqlstore.OpenSQLite(filepath.Join(o.dsn, table+".db"))
	} else {
		db, err = sql.Open("pgx", o.dsn)
		if err == nil {
			db.SetMaxOpenConns(o.pool)
			db.SetMaxIdleConns(o.pool)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	s, err := sqlstore.New(context.Background(), db, d, sqlstore.WithTable(table))
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return s, db, nil
}

// measure runs a round on fresh tables named after table.
func measure(o options, table string) (r round, err error) {
	ctx := context.Background()
	if o.store == "postgres" {
		db, err := sql.Open("pgx", o.dsn)
		if err != nil {
			return r, err
		}
		err = sqlstore.Drop(ctx, db, sqlstore.PostgreSQL, table)
		db.Close()
		if err != nil {
			return r, err
		}
	}
	ed, edb, err := open(o, table) // the editor's Store
	if err != nil {
		return r, err
	}
	defer edb.Close()
	if r.create, err = define(ctx, ed, edb, table, o.tasks); err != nil {
		return r, err
	}
	began := time.Now()
	if _, _, err := ed.Definitions().Tasks(ctx); err != nil {
		return r, err
	}
	r.read = time.Since(began)

	w := wheel.New()
	defer w.Stop()
	// start starts a Table on a new Store, and returns how long Follow
	// took and the statements the Store sent meanwhile.
	start := func() (*cron.Table, *sqlstore.Store, *sql.DB, time.Duration, uint64, error) {
		s, db, err := open(o, table)
		if err != nil {
			return nil, nil, nil, 0, 0, err
		}
		tb := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }},
			cron.WithStore(s), cron.WithLocation(time.UTC),
			cron.WithJobOptions(schedule.WithScheduler(w), schedule.WithNode("tablestart")))
		runtime.GC()
		before := s.Stats().Statements
		began := time.Now()
		err = tb.Follow(ctx, s.Definitions())
		took := time.Since(began)
		if err != nil {
			db.Close()
			return nil, nil, nil, 0, 0, err
		}
		return tb, s, db, took, s.Stats().Statements - before, nil
	}

	var mem runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&mem)
	heap := mem.HeapAlloc
	tb, s1, db, took, stmts, err := start()
	if err != nil {
		return r, err
	}
	r.first, r.firstStmts = took, stmts
	runtime.GC()
	runtime.ReadMemStats(&mem)
	r.heapPerTask = (float64(mem.HeapAlloc) - float64(heap)) / float64(o.tasks)
	names, err := check(tb, o.tasks)
	if err != nil {
		return r, err
	}

	// Every task runs once, so that each has a record.
	began = time.Now()
	for _, name := range names {
		if err := tb.RunNow(name); err != nil {
			return r, err
		}
	}
	if err := awaitRecords(edb, table, o.tasks, 5*time.Minute); err != nil {
		return r, err
	}
	r.records = time.Since(began)
	if o.runs > 1 {
		// Copies of every record, an hour apart before it, as if the
		// tasks had run every hour, in one statement.
		cols := "reason, status, start_ns, end_ns, node, err, attempt, lease_until, released, planned_ns"
		copies := fmt.Sprintf(`WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %d)
INSERT INTO %s (job, due, %s) SELECT job, due - k.i * %d, %s FROM %[2]s, k`, o.runs-1, table, cols, int64(time.Hour), cols)
		if _, err := edb.ExecContext(ctx, copies); err != nil {
			return r, fmt.Errorf("copying the records: %w", err)
		}
	}
	began = time.Now()
	if err := tb.Stop(ctx); err != nil {
		return r, err
	}
	r.stop = time.Since(began)
	s1.Close()
	db.Close()

	tb, s, db, took, stmts, err := start()
	if err != nil {
		return r, err
	}
	defer db.Close()
	defer s.Close()
	defer tb.Stop(ctx)
	r.second, r.secondStmts = took, stmts
	began = time.Now()
	if _, err := check(tb, o.tasks); err != nil {
		return r, err
	}
	r.tasks = time.Since(began)
	if r.pages, err = adminPages(tb, s, names); err != nil {
		return r, err
	}
	if r.overview, err = overviewPages(tb, s); err != nil {
		return r, err
	}

	// A change written by another Store, which the Table sees at its next
	// look at the version, at a random point of its polls; then one
	// written by its own, which it applies at once.
	name := names[0]
	time.Sleep(rand.N(time.Second))
	if r.polled, err = change(ctx, tb, ed.Definitions(), name, "* * * * * *", func(next time.Time) bool {
		return next.Before(time.Now().Add(2 * time.Second))
	}); err != nil {
		return r, err
	}
	if r.own, err = change(ctx, tb, s.Definitions(), name, "0 0 1 1 *", func(next time.Time) bool {
		return next.After(time.Now().Add(24 * time.Hour))
	}); err != nil {
		return r, err
	}
	return r, nil
}

// define writes n definitions: the first thousand by Create, then copies
// of them by one statement, and returns the time a Create took, on
// average.
func define(ctx context.Context, s *sqlstore.Store, db *sql.DB, table string, n int) (time.Duration, error) {
	defs := s.Definitions()
	const distinct = 1000
	began := time.Now()
	for _, t := range tableTasks(distinct) {
		if _, err := defs.Create(ctx, t); err != nil {
			return 0, err
		}
	}
	create := time.Since(began) / distinct
	if n == distinct {
		return create, nil
	}
	cols := "handler, business_id, spec, zone, start_at, end_at, permanent, once, paused, overlap, misfire, timeout, " +
		"retry_attempts, retry_backoff, version, created_at, updated_at"
	copies := fmt.Sprintf(`WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %d)
INSERT INTO %s_tasks (name, %s) SELECT name || '-' || CAST(k.i AS TEXT), %s FROM %[2]s_tasks, k`, n/distinct-1, table, cols, cols)
	if _, err := db.ExecContext(ctx, copies); err != nil {
		return 0, fmt.Errorf("copying the definitions: %w", err)
	}
	// The copies count as a write: a follower reads them.
	if _, err := db.ExecContext(ctx, "UPDATE "+table+"_tasks_version SET version = version + 1"); err != nil {
		return 0, err
	}
	return create, nil
}

// tableSpecs and tableZones are those of cron's BenchmarkTable.
var (
	tableSpecs = []string{"0 9 * * 1-5", "0 9 * * *", "*/5 * * * *", "0 * * * *", "30 2 * * *", "0 0 1 * *",
		"15 10 * * 1", "0 18 * * 5", "*/15 8-18 * * 1-5", "0 12 1,15 * *", "45 23 * * *", "0 6 * * 0,6"}
	tableZones = []string{"", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Europe/London", "Australia/Sydney"}
)

func tableTasks(n int) []cron.Task {
	ts := make([]cron.Task, n)
	for i := range ts {
		ts[i] = cron.Task{Name: "task-" + strconv.Itoa(i), Handler: "h", BusinessID: "b-" + strconv.Itoa(i),
			Spec: tableSpecs[i%len(tableSpecs)], Zone: tableZones[i%len(tableZones)], Permanent: true}
		if i%2 == 1 { // half of them in a window of their own
			ts[i].Permanent = false
			ts[i].Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
			ts[i].End = ts[i].Start.AddDate(50, 0, 0)
		}
	}
	return ts
}

// check reads the Table's Tasks, and returns their names if there are n,
// each with a next run.
func check(tb *cron.Table, n int) ([]string, error) {
	ts, err := tb.TasksContext(context.Background())
	if err != nil {
		return nil, err
	}
	if len(ts) != n {
		return nil, fmt.Errorf("the Table runs %d tasks, want %d", len(ts), n)
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		if t.Next.IsZero() {
			return nil, fmt.Errorf("task %s has no next run", t.Task.Name)
		}
		names[i] = t.Task.Name
	}
	return names, nil
}

// awaitRecords waits until n runs have a Succeeded record, for up to d.
func awaitRecords(db *sql.DB, table string, n int, d time.Duration) error {
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		var k int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + table + " WHERE status = 1").Scan(&k); err != nil {
			return err
		}
		if k >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d runs recorded after %v", k, n, d)
		}
	}
}

// change sets the spec of the definition name through defs, and returns
// the time from the write's start until the Table's next run of the task
// is one that applied says is of the new spec.
func change(ctx context.Context, tb *cron.Table, defs *sqlstore.Definitions, name, spec string, applied func(time.Time) bool) (time.Duration, error) {
	t, v, err := defs.Get(ctx, name)
	if err != nil {
		return 0, err
	}
	t.Spec = spec
	began := time.Now()
	if _, err := defs.Update(ctx, t, v); err != nil {
		return 0, err
	}
	for deadline := began.Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if next, ok := tb.Next(name); ok && applied(next) {
			return time.Since(began), nil
		}
	}
	return 0, fmt.Errorf("the change of %s not applied within a minute", name)
}

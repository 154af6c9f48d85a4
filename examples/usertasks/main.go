// Command usertasks tells the story of a service whose users define their
// own scheduled tasks.
//
// Each task is a row of a table: a cron spec, a window or "permanent",
// run-once, whether its runs may overlap, a missed-run policy, and the
// handler that runs it with the task's business id; many tasks share one
// handler, registered once in code. The service loads the table into a
// cron.Table and reloads it when it changes. Here the table is a JSON
// file, read by a Trigger every 100ms and at once when the program, as a
// user would through a UI, writes a new version of it and says so (the
// config-reload pattern: a periodic pull, and a Fire for "update now").
//
// The story lasts six seconds or so, with tasks every second or two:
//
//   - report-shop-1 runs every second, until a user makes it every two;
//   - report-shop-2 runs in a window that ends after three seconds;
//   - welcome-mail runs once;
//   - export-orders takes 1.5s, overstays its one-second slots (the
//     overlapped ones are skipped), and is removed while a run is in
//     flight: that run goes on to its end, and no other starts;
//   - report-shop-3 is added by a user while the service runs.
//
// The execution records are printed at the end:
//
//	cd examples/usertasks && go run .
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/circulation-go/circulation"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "usertasks: unexpected argument %q (the story takes none)\n", os.Args[1])
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err := run(ctx, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "usertasks: %v\n", err)
		os.Exit(1)
	}
}

// The story's timeline, from its start, the first even second after the
// program starts: the tasks' first slot.
const (
	addTask     = 2500 * time.Millisecond // a user adds report-shop-3 and makes report-shop-1 every 2s
	removeTask  = 4200 * time.Millisecond // a user removes export-orders, whose run of 4s is in flight
	storyLength = 5800 * time.Millisecond
	exportTakes = 1500 * time.Millisecond
)

// report is what happened, for the tests.
type report struct {
	start   time.Time
	added   time.Time // when report-shop-3 was added
	removed time.Time // when the removal of export-orders was applied
	end     time.Time
	reloads []cron.Changes
	records map[string][]schedule.Record // by task, oldest first
	calls   map[string][]string          // business ids each handler was called with
	maxBusy int                          // the most runs of export-orders at once
	errs    []error                      // errors of reloads
}

// run tells the story, printing it to w.
func run(ctx context.Context, w io.Writer) (*report, error) {
	dir, err := os.MkdirTemp("", "usertasks")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "tasks.json")

	rep := &report{start: time.Now().Truncate(2 * time.Second).Add(2 * time.Second), calls: map[string][]string{}}
	var logMu sync.Mutex // the loader logs on its goroutine
	log := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(w, "%6.3fs  %s\n", time.Since(rep.start).Seconds(), fmt.Sprintf(format, args...))
	}

	// The handlers, registered once in code, by name.
	var mu sync.Mutex
	busy := 0
	call := func(handler, business string) {
		mu.Lock()
		rep.calls[handler] = append(rep.calls[handler], business)
		mu.Unlock()
	}
	handlers := map[string]cron.Handler{
		"report": func(ctx context.Context, business string, r schedule.Run) error {
			call("report", business)
			return nil
		},
		"mail": func(ctx context.Context, business string, r schedule.Run) error {
			call("mail", business)
			return nil
		},
		"export": func(ctx context.Context, business string, r schedule.Run) error {
			call("export", business)
			mu.Lock()
			busy++
			rep.maxBusy = max(rep.maxBusy, busy)
			mu.Unlock()
			defer func() {
				mu.Lock()
				busy--
				mu.Unlock()
			}()
			select {
			case <-time.After(exportTakes):
				log("export-orders: the run of %.0fs is done", r.Due.Sub(rep.start).Seconds())
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}
	// Every record a job completes, of runs and of slots that did not run.
	records := map[string][]schedule.Record{}
	observe := func(r schedule.Record) {
		mu.Lock()
		records[r.Job] = append(records[r.Job], r)
		mu.Unlock()
	}
	table := cron.NewTable(handlers, cron.WithLocation(time.Local),
		cron.WithJobOptions(schedule.WithObserver(observe)))

	// The table of definitions, as a user edits it.
	start := rep.start
	defs := []cron.Task{
		{Name: "report-shop-1", Handler: "report", BusinessID: "shop-1", Spec: "* * * * * ?", Start: start, Permanent: true},
		{Name: "report-shop-2", Handler: "report", BusinessID: "shop-2", Spec: "* * * * * ?",
			Start: start.Add(time.Second), End: start.Add(3 * time.Second)},
		{Name: "welcome-mail", Handler: "mail", BusinessID: "user-42", Spec: "* * * * * ?", Once: true,
			Start: start.Add(time.Second), End: start.Add(time.Hour)},
		{Name: "export-orders", Handler: "export", BusinessID: "orders", Spec: "* * * * * ?", Start: start, Permanent: true,
			Misfire: "skip"},
	}
	write := func(defs []cron.Task) error {
		b, err := json.MarshalIndent(defs, "", "  ")
		if err != nil {
			return err
		}
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return err
		}
		return os.Rename(tmp, file) // the reader sees the old file or the new, whole
	}
	if err := write(defs); err != nil {
		return nil, err
	}

	// The loader: a Trigger that reads the file every 100ms, and at once
	// when fired, and applies it when its content changed.
	var last [32]byte
	loaded := make(chan struct{}, 1) // a reload applied, for the story to wait on
	reload := func(ctx context.Context) (time.Duration, bool) {
		b, err := os.ReadFile(file)
		if err != nil {
			log("reload: %v", err)
			return 100 * time.Millisecond, true
		}
		if sum := sha256.Sum256(b); sum != last {
			var defs []cron.Task
			if err := json.Unmarshal(b, &defs); err != nil {
				log("reload: %v", err)
				return 100 * time.Millisecond, true
			}
			last = sum
			ch, err := table.Apply(ctx, defs)
			mu.Lock()
			rep.reloads = append(rep.reloads, ch)
			if err != nil {
				rep.errs = append(rep.errs, err)
			}
			mu.Unlock()
			log("reload: added %v, changed %v, removed %v", ch.Added, ch.Changed, ch.Removed)
			if err != nil {
				log("reload: %v", err)
			}
			select {
			case loaded <- struct{}{}:
			default:
			}
		}
		return 100 * time.Millisecond, true
	}
	loader := circulation.Bind(nil, reload)
	loader.Fire()
	<-loaded
	log("4 tasks loaded from %s; the story starts at 0s", filepath.Base(file))

	sleep := func(until time.Duration) bool {
		select {
		case <-time.After(time.Until(start.Add(until))):
			return true
		case <-ctx.Done():
			return false
		}
	}
	if sleep(addTask) {
		defs[0].Spec = "*/2 * * * * ?"
		defs = append(defs, cron.Task{Name: "report-shop-3", Handler: "report", BusinessID: "shop-3", Spec: "* * * * * ?",
			Permanent: true})
		if err := write(defs); err != nil {
			return nil, err
		}
		rep.added = time.Now()
		log("a user adds report-shop-3 and makes report-shop-1 every 2s")
		loader.Fire()
		<-loaded
	}
	if sleep(removeTask) {
		defs = slices.DeleteFunc(defs, func(d cron.Task) bool { return d.Name == "export-orders" })
		if err := write(defs); err != nil {
			return nil, err
		}
		log("a user removes export-orders, whose run is in flight")
		loader.Fire()
		<-loaded
		rep.removed = time.Now()
	}
	sleep(storyLength)

	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = errors.Join(loader.Stop(stopCtx), table.Stop(stopCtx))
	rep.end = time.Now()
	log("stopped")

	mu.Lock()
	rep.records = records
	mu.Unlock()
	fmt.Fprintln(w, "\nthe execution records, by slot (seconds from the start):")
	for _, name := range []string{"report-shop-1", "report-shop-2", "welcome-mail", "export-orders", "report-shop-3"} {
		rs := rep.records[name]
		slices.SortFunc(rs, func(a, b schedule.Record) int { return a.Due.Compare(b.Due) })
		fmt.Fprintf(w, "  %-14s", name)
		for _, r := range rs {
			fmt.Fprintf(w, "  %.0fs %s", r.Due.Sub(start).Seconds(), r.Status)
		}
		fmt.Fprintln(w)
	}
	return rep, err
}

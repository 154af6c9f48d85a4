package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// deployConfig configures the deploy helper.
type deployConfig struct {
	Lease    time.Duration
	Run      time.Duration // each run of handler "h" lasts this long
	Shutdown time.Duration // at the end, Table.Shutdown with this much grace, if not zero; Table.Stop otherwise
	Mutant   string        // a name of sqlstore.Mutants: the replica runs a broken store
}

// deploy runs a cron.Table that follows the Store's Definitions, as a
// service's replica does, until its standard input closes; then it stops
// the Table (or shuts it down) and exits. Its handler "h" works for Run.
// It prints a line for each event, with its wall-clock time:
//
//	<unixnano> ready
//	<unixnano> refused <task> <field>           Tasks reports the definition refused
//	<unixnano> start <task> <due> <reason> <attempt>
//	<unixnano> end <task> <due> <reason> <attempt>     the handler returned, its work done
//	<unixnano> quit <task> <due> <reason> <attempt>    the handler returned, cancelled
func deploy() error {
	var c deployConfig
	if err := json.Unmarshal([]byte(os.Getenv(envArg)), &c); err != nil {
		return err
	}
	s, db, err := helperStore(sqlstore.WithLease(c.Lease), sqlstore.WithHistory(1_000_000, 1_000_000))
	if err != nil {
		return err
	}
	defer db.Close()
	defer s.Close()
	var mu sync.Mutex
	say := func(format string, args ...any) {
		line := strconv.FormatInt(time.Now().UnixNano(), 10) + " " + fmt.Sprintf(format, args...) + "\n"
		mu.Lock()
		_, _ = os.Stdout.WriteString(line)
		mu.Unlock()
	}
	h := func(ctx context.Context, _ string, r schedule.Run) error {
		say("start %s %d %d %d", r.Job, r.Due.UnixNano(), r.Reason, r.Attempt)
		t := time.NewTimer(c.Run)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			say("quit %s %d %d %d", r.Job, r.Due.UnixNano(), r.Reason, r.Attempt)
			return context.Cause(ctx)
		}
		say("end %s %d %d %d", r.Job, r.Due.UnixNano(), r.Reason, r.Attempt)
		return nil
	}
	tab := cron.NewTable(map[string]cron.Handler{"h": h}, cron.WithStore(s), cron.WithLocation(time.UTC),
		cron.WithJobOptions(schedule.WithNode(os.Getenv(envNode)), schedule.WithObserver(func(r schedule.Record) {
			if r.Err != "" {
				fmt.Fprintf(os.Stderr, "%s %v %v: %s\n", r.Job, r.Due.UTC().Format("15:04:05.0"), r.Status, r.Err)
			}
		})))
	// The README's idiom: a replica exits if Follow fails.
	if err := tab.Follow(context.Background(), s.Definitions(), cron.WithErrorHandler(func(err error) {
		fmt.Fprintf(os.Stderr, "following: %v\n", err)
	})); err != nil {
		return err
	}
	for _, ts := range tab.Tasks() {
		var te *cron.TaskError
		if errors.As(ts.Refused, &te) {
			say("refused %s %s", ts.Task.Name, te.Field)
		}
	}
	say("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if c.Shutdown > 0 {
		grace, cancel := context.WithTimeout(context.Background(), c.Shutdown)
		defer cancel()
		if err := tab.Shutdown(grace); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil
	}
	stop, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return tab.Stop(stop)
}

// A deployEvent is a line a deploy helper printed.
type deployEvent struct {
	at      time.Time
	node    string
	kind    string
	task    string
	field   string // refused
	due     int64
	reason  schedule.Reason
	attempt int
}

func parseDeployEvent(node, line string) (deployEvent, error) {
	f := strings.Fields(line)
	bad := fmt.Errorf("bad line %q", line)
	if len(f) < 2 {
		return deployEvent{}, bad
	}
	at, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return deployEvent{}, bad
	}
	e := deployEvent{at: time.Unix(0, at), node: node, kind: f[1]}
	switch {
	case e.kind == "ready" && len(f) == 2:
	case e.kind == "refused" && len(f) == 4:
		e.task, e.field = f[2], f[3]
	case (e.kind == "start" || e.kind == "end" || e.kind == "quit") && len(f) == 6:
		e.task = f[2]
		n := make([]int64, 3)
		for i := range n {
			if n[i], err = strconv.ParseInt(f[3+i], 10, 64); err != nil {
				return deployEvent{}, bad
			}
		}
		e.due, e.reason, e.attempt = n[0], schedule.Reason(n[1]), int(n[2])
	default:
		return deployEvent{}, bad
	}
	return e, nil
}

// A fleet is the replicas of a service, deploy helpers, on one store.
type fleet struct {
	t      *testing.T
	b      backend
	dsn    string
	table  string
	cfg    deployConfig
	mu     sync.Mutex
	events []deployEvent
	procs  map[string]*replicaProc
}

func newFleet(t *testing.T, b backend, cfg deployConfig) *fleet {
	f := &fleet{t: t, b: b, dsn: b.dsn(t), table: tableFor(t), cfg: cfg, procs: map[string]*replicaProc{}}
	newStore(t, b, f.dsn) // the schema, once
	return f
}

// start starts a replica named node and waits until it is ready.
func (f *fleet) start(node string) {
	t := f.t
	t.Helper()
	arg, _ := json.Marshal(f.cfg)
	env := []string{envDriver + "=" + f.b.driver, envDSN + "=" + f.dsn, envTable + "=" + f.table, envArg + "=" + string(arg),
		envMutant + "=" + f.cfg.Mutant}
	f.procs[node] = startProc(t, "deploy", node, env, patience, func(line string) bool {
		e, err := parseDeployEvent(node, line)
		if err != nil {
			t.Errorf("%s: %v", node, err)
			return false
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.events = append(f.events, e)
		return e.kind == "ready"
	})
}

// stop stops the replica node as an orchestrator does, and waits for it.
func (f *fleet) stop(node string) {
	f.t.Helper()
	p := f.procs[node]
	p.stdin.Close()
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		f.t.Errorf("%s: %v: %s", node, err, p.err.String())
	}
	f.t.Cleanup(func() {
		if f.t.Failed() && p.err.Len() > 0 {
			f.t.Logf("%s's standard error:\n%s", node, p.err.String())
		}
	})
	delete(f.procs, node)
}

// inFlight returns how many runs node started and has not ended.
func (f *fleet) inFlight(node string) int {
	type run struct {
		task    string
		due     int64
		attempt int
	}
	on := map[run]bool{}
	for _, e := range f.snapshot() {
		if e.node != node {
			continue
		}
		k := run{e.task, e.due, e.attempt}
		switch e.kind {
		case "start":
			on[k] = true
		case "end", "quit":
			delete(on, k)
		}
	}
	return len(on)
}

func (f *fleet) snapshot() []deployEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]deployEvent(nil), f.events...)
}

// rolling defines tasks tasks of run every 2 s (overlap allow: a slot runs
// whatever the run before it does, so that what is counted is the
// hand-over, not the policy), runs
// them on three replica processes, and restarts each replica in turn, as
// a deploy does: a replica is stopped (Table.Stop, or Table.Shutdown), the
// one with the most runs in flight first, and a new one starts a second
// later. It returns, of the slots due while the
// replicas were up, how many were not completed once with one Succeeded
// record (lost), how many completed twice, and how many runs were taken
// over (Recovered).
func rolling(t *testing.T, b backend, cfg deployConfig, tasks int) (lost, twice, recovered int) {
	f := newFleet(t, b, cfg)
	defs := newStore(t, b, f.dsn).Definitions()
	for i := range tasks {
		_, err := defs.Create(ctx, cron.Task{Name: fmt.Sprintf("t%02d", i), Handler: "h", Spec: "*/2 * * * * *",
			Permanent: true, Overlap: "allow"})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		f.start(fmt.Sprint("n", i))
	}
	from := time.Now()
	old := []string{"n0", "n1", "n2"}
	for i := range 3 {
		// 300 ms into a slot: its runs are in flight, with more than a
		// second to go. The replicas race for the claims, and one may
		// win them all: each turn stops the old replica that holds the
		// most runs in flight, as a deploy may stop them in any order,
		// waiting a little for runs a loaded machine starts late.
		time.Sleep(2*time.Second - time.Duration(time.Now().UnixNano())%(2*time.Second) + 300*time.Millisecond)
		var next string
		for deadline := time.Now().Add(500 * time.Millisecond); ; time.Sleep(20 * time.Millisecond) {
			most := -1
			for _, n := range old {
				if k := f.inFlight(n); k > most {
					next, most = n, k
				}
			}
			if most > 0 || time.Now().After(deadline) {
				break
			}
		}
		old = slices.DeleteFunc(old, func(n string) bool { return n == next })
		f.stop(next)
		time.Sleep(time.Second)
		f.start(fmt.Sprint("n", i+3))
	}
	time.Sleep(3 * time.Second)
	to := time.Now().Add(-time.Second)
	// Every slot due by then ends before the last replicas stop: each has
	// a final record (a busy machine may start a run late, or take one
	// over late), or the wait gives up and the checks below say which.
	s := newStore(t, b, f.dsn)
	every := schedule.Every(2 * time.Second)
	final := func() bool {
		for i := range tasks {
			h, err := s.History(ctx, fmt.Sprintf("t%02d", i), 1000)
			if err != nil {
				return false
			}
			rec := map[int64]schedule.Status{}
			for _, r := range h {
				rec[r.Due.UnixNano()] = r.Status
			}
			for due := every.Next(from); !due.After(to); due = every.Next(due) {
				if st, ok := rec[due.UnixNano()]; !ok || st == schedule.Running || st == schedule.Released {
					return false
				}
			}
		}
		return true
	}
	for deadline := time.Now().Add(patience); !final() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	for i := 3; i < 6; i++ {
		f.stop(fmt.Sprint("n", i))
	}

	ends := map[string]int{}
	for _, e := range f.snapshot() {
		switch e.kind {
		case "end":
			ends[e.task+" "+strconv.FormatInt(e.due, 10)]++
		case "start":
			if e.reason == schedule.Recovered {
				recovered++
			}
		}
	}
	slots := 0
	for i := range tasks {
		job := fmt.Sprintf("t%02d", i)
		h, err := s.History(ctx, job, 1000)
		if err != nil {
			t.Fatal(err)
		}
		rec := map[int64]schedule.Record{}
		for _, r := range h {
			rec[r.Due.UnixNano()] = r
		}
		for due := every.Next(from); !due.After(to); due = every.Next(due) {
			slots++
			k := job + " " + strconv.FormatInt(due.UnixNano(), 10)
			r := rec[due.UnixNano()]
			switch {
			case ends[k] > 1:
				twice++
				t.Logf("%s at %v completed %d times", job, due.UTC().Format("15:04:05"), ends[k])
			case ends[k] == 0 || r.Status != schedule.Succeeded:
				lost++
				if lost <= 5 {
					t.Logf("%s at %v: completed %d times, record %v %v attempt %d", job, due.UTC().Format("15:04:05"),
						ends[k], r.Status, r.Reason, r.Attempt)
				}
			}
		}
	}
	t.Logf("%d slots of %d tasks, %d runs taken over, %d lost, %d completed twice", slots, tasks, recovered, lost, twice)
	return lost, twice, recovered
}

// TestRollingRestart restarts three replicas in turn, each Stopped or Shut
// down, then started again a second later, while 50 tasks of 1.5 s fall
// due every 2 s (20 on SQLite): no slot is lost, none is completed twice. A stopped
// replica hands its runs over, and the others take them over at once.
func TestRollingRestart(t *testing.T) {
	for _, how := range []string{"Stop", "Shutdown"} {
		t.Run(how, func(t *testing.T) {
			// One fleet at a time: SQLite's one writer serves three
			// replicas of 50 tasks, under the race detector on a loaded
			// machine, without a second fleet beside it.
			eachBackend(t, func(t *testing.T, b backend) {
				// A lease long beside the writes of a loaded machine (a run
				// whose lease a stalled write let expire is taken over, and
				// may complete twice: what the test counts is the hand-over).
				cfg := deployConfig{Lease: 8 * time.Second, Run: 1500 * time.Millisecond}
				if how == "Shutdown" {
					cfg.Shutdown = 500 * time.Millisecond
				}
				// SQLite's one writer serves the three replicas' claims,
				// renewals and finishes in turn: 20 tasks, where
				// PostgreSQL takes 50. (Under the race detector its engine,
				// Go code, runs instrumented in every replica: with 50
				// tasks on a machine kept busy, its writes waited past
				// the lease.)
				tasks := 50
				if b.name == "SQLite" {
					tasks = 20
				}
				lost, twice, recovered := rolling(t, b, cfg, tasks)
				if lost > 0 || twice > 0 {
					t.Errorf("%d slots lost, %d completed twice", lost, twice)
				}
				if recovered == 0 {
					t.Errorf("no run was handed over: the test proves nothing")
				}
			})
		})
	}
}

// TestUnknownHandlerWhileReplicasStart defines a task whose handler no
// replica has ("tikc") beside a good one, and starts three replicas that
// follow the definitions as the README says, exiting if Follow fails: all
// three start, each reports the task refused, naming its field, and runs
// the good one. Before, Follow returned the refusal, and every replica
// exited at every start.
func TestUnknownHandlerWhileReplicasStart(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		f := newFleet(t, b, deployConfig{Lease: 2 * time.Second, Run: 10 * time.Millisecond})
		defs := newStore(t, b, f.dsn).Definitions()
		_, err := defs.Create(ctx, cron.Task{Name: "good", Handler: "h", Spec: "* * * * * *", Permanent: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = defs.Create(ctx, cron.Task{Name: "typo-task", Handler: "tikc", Spec: "* * * * * *", Permanent: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			f.start(fmt.Sprint("n", i))
		}
		// The good task runs, on one of them.
		deadline := time.Now().Add(patience)
		for !slices.ContainsFunc(f.snapshot(), func(e deployEvent) bool { return e.kind == "end" }) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		for i := range 3 {
			f.stop(fmt.Sprint("n", i))
		}
		refused := map[string]string{}
		ran := 0
		for _, e := range f.snapshot() {
			switch e.kind {
			case "refused":
				refused[e.node] = e.task + " " + e.field
			case "end":
				if e.task != "good" {
					t.Errorf("%s ran %s", e.node, e.task)
				}
				ran++
			}
		}
		for i := range 3 {
			if got := refused[fmt.Sprint("n", i)]; got != "typo-task handler" {
				t.Errorf("n%d reports %q refused, want typo-task's handler", i, got)
			}
		}
		if ran == 0 {
			t.Error("the good task never ran")
		}
	})
}

// With WithHandlers, Definitions refuse a handler the service does not
// have where it is typed: Create and Update return a *cron.TaskError
// naming the field, and save nothing.
func TestDefinitionsWithHandlers(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		defs := newStore(t, b, b.dsn(t), sqlstore.WithHandlers("mail", "report")).Definitions()
		v, err := defs.Create(ctx, cron.Task{Name: "t", Handler: "mail", Spec: "@daily", Permanent: true})
		if err != nil {
			t.Fatal(err)
		}
		var te *cron.TaskError
		_, err = defs.Create(ctx, cron.Task{Name: "u", Handler: "tikc", Spec: "@daily", Permanent: true})
		if !errors.As(err, &te) || te.Field != "handler" || te.Task != "u" {
			t.Fatalf("Create with an unknown handler: %v", err)
		}
		if got := err.Error(); got != `cron: task "u": handler: no handler "tikc"` {
			t.Errorf("error %q", got)
		}
		_, err = defs.Update(ctx, cron.Task{Name: "t", Handler: "mial", Spec: "@daily", Permanent: true}, v)
		if !errors.As(err, &te) || te.Field != "handler" {
			t.Fatalf("Update with an unknown handler: %v", err)
		}
		ts, _, err := defs.Tasks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 1 || ts[0].Handler != "mail" {
			t.Errorf("saved: %+v", ts)
		}
	})
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// An event is a line of a replica: it is ready, a run started, ended its
// work, or quit, cancelled.
type event struct {
	node    string
	what    string // ready, start, end, quit
	at      time.Time
	due     time.Time
	reason  schedule.Reason
	attempt int
}

// A proc is a replica process.
type proc struct {
	node  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // its output is read to the end
}

// A demo is the three replicas and what they said.
type demo struct {
	w      io.Writer
	dsn    string
	exe    string
	events chan event
	all    []event
	procs  map[string]*proc
	killed map[string]time.Time // the nodes killed, and when
}

// run starts three replicas on the store at dsn, restarts one mid-run,
// kills another mid-run, stops the rest and prints a summary.
func run(w io.Writer, dsn string) error {
	ctx := context.Background()
	where := "PostgreSQL"
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		where = "SQLite"
	}
	if dsn == "" {
		dir, err := os.MkdirTemp("", "cluster-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "jobs.db")
		dsn, where = sqlstore.SQLiteDSN(path), "SQLite file "+path
	}
	// The schema, once, before the replicas start.
	store, db, err := open(ctx, dsn, sqlstore.WithTable("cluster_runs"), sqlstore.WithHistory(1000, 1000))
	if err != nil {
		return err
	}
	defer db.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "3 replicas of job %q, Every(%v), runs of %v (OverlapSkip), lease %v, on %s\n", job, every, runTime, lease, where)
	d := &demo{w: w, dsn: dsn, exe: exe, events: make(chan event, 10000), procs: map[string]*proc{}, killed: map[string]time.Time{}}
	defer d.killAll()
	for _, node := range []string{"n1", "n2", "n3"} {
		if err := d.start(node); err != nil {
			return err
		}
	}
	from := time.Now()
	deadline := time.Now().Add(time.Minute) // a bound for a loaded machine, not a figure

	// A deploy: the replica that starts the next run after a second is
	// stopped 100 ms into it, and started again 300 ms later.
	time.Sleep(time.Second)
	d.drain()
	victim, ok := d.next(deadline, func(e event) bool { return e.what == "start" })
	if !ok {
		return fmt.Errorf("no run started")
	}
	time.Sleep(100 * time.Millisecond)
	mark := len(d.all)
	stopped := time.Now()
	if err := d.stop(victim.node); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s  %s runs the slot, and is restarted mid-run: it stops, and hands its run over\n", clock(victim.due), victim.node)
	time.Sleep(300 * time.Millisecond)
	if err := d.start(victim.node + "'"); err != nil {
		return err
	}
	handed, ok := d.since(mark, deadline, func(e event) bool { return e.what == "start" && e.due.Equal(victim.due) })
	if !ok {
		return fmt.Errorf("the slot handed over was not taken over")
	}
	fmt.Fprintf(w, "%s  %s takes the slot over, %v after the stop\n", clock(handed.due), handed.node,
		handed.at.Sub(stopped).Round(10*time.Millisecond))

	// A crash: the replica that starts the next run is killed 100 ms into it.
	d.drain()
	crash, ok := d.next(deadline, func(e event) bool { return e.what == "start" && e.reason != schedule.Recovered })
	if !ok {
		return fmt.Errorf("no run started")
	}
	time.Sleep(100 * time.Millisecond)
	d.kill(crash.node)
	fmt.Fprintf(w, "%s  %s runs the slot, and is killed (SIGKILL) mid-run\n", clock(crash.due), crash.node)
	mark = len(d.all)
	taken, ok := d.since(mark, deadline, func(e event) bool { return e.what == "start" && e.due.Equal(crash.due) })
	if !ok {
		return fmt.Errorf("the killed run was not taken over")
	}
	fmt.Fprintf(w, "%s  %s takes the slot over, %v after the kill, once its lease expired\n", clock(taken.due), taken.node,
		taken.at.Sub(d.killed[crash.node]).Round(10*time.Millisecond))
	if _, ok := d.next(deadline, func(e event) bool { return e.due.Equal(crash.due) && e.what == "end" }); !ok {
		return fmt.Errorf("the slot taken over did not end")
	}
	to := time.Now().Add(-runTime)
	for node := range d.procs {
		if _, dead := d.killed[node]; !dead {
			if err := d.stop(node); err != nil {
				return err
			}
		}
	}
	d.drain()
	return d.summarize(ctx, store, from, to, victim, crash)
}

// start starts the replica node, and waits until it is ready.
func (d *demo) start(node string) error {
	p := &proc{node: node, cmd: exec.Command(d.exe), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), envNode+"="+node, envDSN+"="+d.dsn)
	p.cmd.Stderr = os.Stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return err
	}
	if err := p.cmd.Start(); err != nil {
		return err
	}
	d.procs[node] = p
	go read(p, out, d.events)
	if _, ok := d.next(time.Now().Add(10*time.Second), func(e event) bool { return e.what == "ready" && e.node == node }); !ok {
		return fmt.Errorf("%s not ready", node)
	}
	return nil
}

// stop stops the replica node as an orchestrator does, and waits for it.
func (d *demo) stop(node string) error {
	p := d.procs[node]
	p.stdin.Close()
	<-p.done
	delete(d.procs, node)
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %v", node, err)
	}
	return nil
}

// kill kills the replica node with SIGKILL.
func (d *demo) kill(node string) {
	p := d.procs[node]
	_ = p.cmd.Process.Kill()
	d.killed[node] = time.Now()
	<-p.done
	_ = p.cmd.Wait()
	delete(d.procs, node)
}

func (d *demo) killAll() {
	for node := range d.procs {
		d.kill(node)
	}
}

// since returns the first event from the i-th on that match accepts,
// among those read and the next, or false at the deadline.
func (d *demo) since(i int, deadline time.Time, match func(event) bool) (event, bool) {
	for _, e := range d.all[i:] {
		if match(e) {
			return e, true
		}
	}
	return d.next(deadline, match)
}

// next returns the next event that match accepts, keeping every event,
// or false at the deadline.
func (d *demo) next(deadline time.Time, match func(event) bool) (event, bool) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		select {
		case e := <-d.events:
			d.all = append(d.all, e)
			if match(e) {
				return e, true
			}
		case <-t.C:
			return event{}, false
		}
	}
}

// drain keeps the events left.
func (d *demo) drain() {
	for {
		select {
		case e := <-d.events:
			d.all = append(d.all, e)
		default:
			return
		}
	}
}

// read turns the lines of a replica into events.
func read(p *proc, out io.Reader, events chan<- event) {
	defer close(p.done)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var e event
		var at, due int64
		if _, err := fmt.Sscanf(sc.Text(), "%d %s %d %d %d", &at, &e.what, &due, &e.reason, &e.attempt); err != nil {
			continue
		}
		e.node, e.at, e.due = p.node, time.Unix(0, at), time.Unix(0, due)
		events <- e
	}
}

// summarize checks, from the replicas' lines and the store, that no two
// runs were in flight at once, and that each slot between from and to has
// one record: Succeeded, its run ended once, or Skipped.
func (d *demo) summarize(ctx context.Context, s *sqlstore.Store, from, to time.Time, handed, crashed event) error {
	w := d.w
	// The runs in flight at once, from each run's start to its end, quit,
	// or the kill of its replica, by the replicas' clock (one machine's).
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	open := map[string]int{}
	for _, e := range d.all {
		switch e.what {
		case "start":
			edges = append(edges, edge{e.at, +1})
			open[e.node]++
		case "end", "quit":
			edges = append(edges, edge{e.at, -1})
			open[e.node]--
		}
	}
	for node, n := range open {
		if at, ok := d.killed[node]; ok && n > 0 {
			edges = append(edges, edge{at, -n})
		}
	}
	slices.SortStableFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d
	})
	most, n := 0, 0
	for _, e := range edges {
		n += e.d
		most = max(most, n)
	}
	if most > 1 {
		return fmt.Errorf("%d runs in flight at once on the replicas", most)
	}

	ends := map[int64][]event{}
	for _, e := range d.all {
		if e.what == "end" {
			ends[e.due.UnixNano()] = append(ends[e.due.UnixNano()], e)
		}
	}
	recs, err := s.History(ctx, job, 1000)
	if err != nil {
		return err
	}
	byDue := map[int64]schedule.Record{}
	for _, r := range recs {
		byDue[r.Due.UnixNano()] = r
	}
	perNode := map[string]int{}
	ran, skipped := 0, 0
	sched := schedule.Every(every)
	for t := sched.Next(from); !t.After(to); t = sched.Next(t) {
		r, ok := byDue[t.UnixNano()]
		switch {
		case !ok:
			return fmt.Errorf("slot %s has no record", clock(t))
		case r.Status == schedule.Skipped:
			skipped++
			continue
		case r.Status != schedule.Succeeded:
			return fmt.Errorf("slot %s is %v in the store", clock(t), r.Status)
		}
		if es := ends[t.UnixNano()]; len(es) != 1 || es[0].node != r.Node {
			return fmt.Errorf("slot %s ran to its end %d times; the store says on %s", clock(t), len(es), r.Node)
		}
		ran++
		perNode[r.Node]++
	}
	nodes := make([]string, 0, len(perNode))
	for n := range perNode {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	fmt.Fprintf(w, "\nNo two runs in flight at once on the three replicas. %d slots: %d Skipped (a run was in flight), %d run to their end exactly once:",
		ran+skipped, skipped, ran)
	for _, n := range nodes {
		fmt.Fprintf(w, " %s %d,", n, perNode[n])
	}
	fmt.Fprintf(w, " by the replicas' output and the store.\n")
	for _, c := range []struct {
		what string
		e    event
	}{{"handed over", handed}, {"killed", crashed}} {
		r := byDue[c.e.due.UnixNano()]
		fmt.Fprintf(w, "The slot %s %s: %v by %s, attempt %d, reason %v.\n", clock(c.e.due), c.what, r.Status, r.Node, r.Attempt, r.Reason)
	}
	return nil
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// An event is a line of a replica: a run started or ended.
type event struct {
	node   string
	what   string // ready, start, end
	due    time.Time
	reason schedule.Reason
	at     time.Time // when the parent read it
}

// A proc is a replica process.
type proc struct {
	node  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // its output is read to the end
}

// run starts three replicas on the store at dsn, kills one mid-run, waits
// for its slot to be taken over, stops the others and prints a summary.
func run(w io.Writer, dsn string) error {
	ctx := context.Background()
	where := "PostgreSQL"
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
	fmt.Fprintf(w, "3 replicas of job %q, Every(%v), runs of %v, lease %v, on %s\n", job, every, runTime, lease, where)

	events := make(chan event, 1000)
	var procs []*proc
	defer func() {
		for _, p := range procs {
			if p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
				<-p.done
				_ = p.cmd.Wait()
			}
		}
	}()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for _, node := range []string{"n1", "n2", "n3"} {
		p := &proc{node: node, cmd: exec.Command(exe), done: make(chan struct{})}
		p.cmd.Env = append(os.Environ(), envNode+"="+node, envDSN+"="+dsn)
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
		procs = append(procs, p)
		go read(p, out, events)
	}

	var all []event
	ready := 0
	var from time.Time   // every replica is ready
	var victim event     // the run killed
	var killed time.Time // when
	var taken event      // its takeover
	deadline := time.After(8 * time.Second)
	var stopAt <-chan time.Time
loop:
	for {
		select {
		case e := <-events:
			all = append(all, e)
			switch {
			case e.what == "ready":
				if ready++; ready == len(procs) {
					from = time.Now()
				}
			case e.what != "start":
			case killed.IsZero() && !from.IsZero() && e.node == "n2" && time.Since(from) > 1200*time.Millisecond:
				_ = procs[1].cmd.Process.Kill()
				victim, killed = e, time.Now()
				fmt.Fprintf(w, "%s  %s runs the slot, and is killed (SIGKILL) mid-run\n", clock(e.due), e.node)
			case e.reason == schedule.Recovered:
				fmt.Fprintf(w, "%s  %s takes the slot over, %v after the kill\n", clock(e.due), e.node, time.Since(killed).Round(10*time.Millisecond))
				if e.due.Equal(victim.due) {
					taken = e
					stopAt = time.After(time.Second)
				}
			default:
				fmt.Fprintf(w, "%s  %s runs the slot\n", clock(e.due), e.node)
			}
		case <-stopAt:
			break loop
		case <-deadline:
			return fmt.Errorf("the killed run was not taken over within 8s")
		}
	}
	to := time.Now().Add(-runTime - 50*time.Millisecond)
	for _, p := range procs {
		if p == procs[1] {
			continue
		}
		p.stdin.Close()
	}
	for _, p := range procs {
		<-p.done
		if err := p.cmd.Wait(); err != nil && p != procs[1] {
			return fmt.Errorf("%s: %v", p.node, err)
		}
	}
	for {
		select {
		case e := <-events:
			all = append(all, e)
			continue
		default:
		}
		break
	}
	return summarize(ctx, w, store, all, from, to, taken)
}

// read turns the lines of a replica into events.
func read(p *proc, out io.Reader, events chan<- event) {
	defer close(p.done)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var e event
		var due int64
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %d", &e.what, &due, &e.reason); err != nil {
			continue
		}
		e.node, e.due, e.at = p.node, time.Unix(0, due), time.Now()
		events <- e
	}
}

// summarize checks, from the replicas' lines and the store, that each slot
// between from and to ran to its end exactly once.
func summarize(ctx context.Context, w io.Writer, s *sqlstore.Store, all []event, from, to time.Time, taken event) error {
	ends := map[int64][]event{}
	for _, e := range all {
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
	slots := 0
	sched := schedule.Every(every)
	for t := sched.Next(from); !t.After(to); t = sched.Next(t) {
		slots++
		r := byDue[t.UnixNano()]
		// The killed replica may have ended a run and died before
		// recording it: its slot was taken over and run again. Only
		// the run the store records counts.
		var es []event
		for _, e := range ends[t.UnixNano()] {
			if e.node == r.Node || e.node != "n2" {
				es = append(es, e)
			}
		}
		if len(es) != 1 {
			return fmt.Errorf("slot %s ran to its end %d times", clock(t), len(es))
		}
		if r.Status != schedule.Succeeded || r.Node != es[0].node {
			return fmt.Errorf("slot %s: the store says %v on %q, the replicas %s", clock(t), r.Status, r.Node, es[0].node)
		}
		perNode[r.Node]++
	}
	r := byDue[taken.due.UnixNano()]
	nodes := make([]string, 0, len(perNode))
	for n := range perNode {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	fmt.Fprintf(w, "\n%d slots, each run to its end exactly once:", slots)
	for _, n := range nodes {
		fmt.Fprintf(w, " %s %d,", n, perNode[n])
	}
	fmt.Fprintf(w, " by the replicas' output and the store.\nThe killed slot %s: %v by %s, attempt %d, reason %v.\n",
		clock(taken.due), r.Status, r.Node, r.Attempt, r.Reason)
	return nil
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

package sqlstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// replicaConfig is what a replica process runs, passed as JSON in envArg.
type replicaConfig struct {
	Every   time.Duration
	Lease   time.Duration
	Misfire schedule.Misfire
	MinRun  time.Duration // each run lasts between MinRun and MaxRun
	MaxRun  time.Duration
	Slow    string // the node whose runs all last SlowRun
	SlowRun time.Duration
	Grace   time.Duration // WithGrace, if not zero

	Overlap     string        // the overlap policy, as a Task names it; OverlapAllow if empty
	MaxParallel int           // WithMaxParallel
	Buffer      int           // WithBufferLimit, if not zero
	Shutdown    time.Duration // at the end, Shutdown with this much grace, if not zero; Stop otherwise
	Mutant      string        // a name of sqlstore.Mutants: the replicas run a broken store
	Race        bool          // WithSharing(false): the replicas race for every slot
}

const replicaJob = "r"

// replica runs the job replicaJob on the Store the environment names, with
// OverlapAllow unless the config says otherwise, until its standard input
// closes; then it stops the job (or shuts it down) and exits. It prints a
// line for each event, with its wall-clock time:
//
//	<unixnano> ready
//	<unixnano> start <due> <reason>       the Func started
//	<unixnano> end <due> <reason>         the Func returned, its work done
//	<unixnano> quit <due> <reason>        the Func returned, cancelled
//	<unixnano> rec <due> <status> <reason> <attempt>   the Observer saw a Record
//
// Each line is one write of under 4 KiB to a pipe, whole even if the
// process is killed right after.
func replica() error {
	var c replicaConfig
	if err := json.Unmarshal([]byte(os.Getenv(envArg)), &c); err != nil {
		return err
	}
	s, db, err := helperStore(sqlstore.WithLease(c.Lease), sqlstore.WithHistory(1_000_000, 1_000_000), sqlstore.WithSharing(!c.Race))
	if err != nil {
		return err
	}
	defer db.Close()
	say := func(format string, args ...any) {
		_, _ = os.Stdout.WriteString(strconv.FormatInt(time.Now().UnixNano(), 10) + " " + fmt.Sprintf(format, args...) + "\n")
	}
	run := func(ctx context.Context, r schedule.Run) error {
		say("start %d %d", r.Due.UnixNano(), r.Reason)
		d := c.MinRun
		if c.MaxRun > c.MinRun {
			d += rand.N(c.MaxRun - c.MinRun)
		}
		if c.Slow != "" && c.Slow == os.Getenv(envNode) {
			d = c.SlowRun
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			say("quit %d %d", r.Due.UnixNano(), r.Reason)
			return context.Cause(ctx)
		}
		say("end %d %d", r.Due.UnixNano(), r.Reason)
		return nil
	}
	overlap := schedule.OverlapAllow
	if c.Overlap != "" {
		o, ok := map[string]schedule.Overlap{"skip": schedule.OverlapSkip, "buffer-one": schedule.OverlapBufferOne,
			"replace": schedule.OverlapReplace, "allow": schedule.OverlapAllow, "buffer-all": schedule.OverlapBufferAll}[c.Overlap]
		if !ok {
			return fmt.Errorf("unknown overlap %q", c.Overlap)
		}
		overlap = o
	}
	opts := []schedule.Option{
		schedule.WithStore(s), schedule.WithNode(os.Getenv(envNode)),
		schedule.WithOverlap(overlap), schedule.WithMaxParallel(c.MaxParallel), schedule.WithMisfire(c.Misfire),
		schedule.WithObserver(func(r schedule.Record) {
			say("rec %d %d %d %d", r.Due.UnixNano(), r.Status, r.Reason, r.Attempt)
			if r.Err != "" {
				fmt.Fprintf(os.Stderr, "%v %v: %s\n", r.Due.UTC().Format("15:04:05.0"), r.Status, r.Err)
			}
		}),
	}
	if c.Buffer > 0 {
		opts = append(opts, schedule.WithBufferLimit(c.Buffer))
	}
	if c.Grace != 0 {
		opts = append(opts, schedule.WithGrace(c.Grace))
	}
	j := schedule.NewJob(replicaJob, schedule.Every(c.Every), run, opts...)
	if err := j.Start(context.Background()); err != nil {
		return err
	}
	say("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if c.Shutdown > 0 {
		grace, cancel := context.WithTimeout(context.Background(), c.Shutdown)
		defer cancel()
		if err := j.Shutdown(grace); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil
	}
	stop, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return j.Stop(stop)
}

// An event is a line a replica printed.
type event struct {
	at     time.Time
	node   string
	kind   string // ready, start, end, quit, rec
	due    int64
	status schedule.Status
	reason schedule.Reason
	try    int
}

// A replicaProc is a running replica process.
type replicaProc struct {
	node  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when its output is read to the end
	err   strings.Builder
}

// startProc starts the test binary as a helper process in role, named
// node, with env added to its environment, and reads its standard output
// on a goroutine: line gets each line, and reports true at the one that
// says the process is ready. startProc returns once it is, and fails t if
// the process exits first or is not ready within wait. The process is
// killed at the end of the test if it still runs.
func startProc(t *testing.T, role, node string, env []string, wait time.Duration, line func(string) (ready bool)) *replicaProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &replicaProc{node: node, cmd: exec.Command(exe), done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), helperEnv+"="+role, envNode+"="+node), env...)
	p.cmd.Stderr = &p.err
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
			_ = p.cmd.Wait()
		}
	})
	ready := make(chan struct{})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		said := false
		for sc.Scan() {
			if line(sc.Text()) && !said {
				said = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-p.done:
		_ = p.cmd.Wait()
		t.Fatalf("%s exited before it was ready: %s", node, p.err.String())
	case <-time.After(wait):
		t.Fatalf("%s not ready after %v: %s", node, wait, p.err.String())
	}
	return p
}

// A cluster collects the events of its replicas.
type cluster struct {
	t      *testing.T
	b      backend
	dsn    string
	table  string
	cfg    replicaConfig
	mu     sync.Mutex
	events []event
	notify chan event // every event, if set, also goes here
	procs  []*replicaProc
}

func newCluster(t *testing.T, b backend, cfg replicaConfig) *cluster {
	c := &cluster{t: t, b: b, dsn: b.dsn(t), table: tableFor(t), cfg: cfg, notify: make(chan event, 100_000)}
	newStore(t, b, c.dsn) // the schema, once
	return c
}

// start starts a replica named node and waits until it is ready.
func (c *cluster) start(node string) *replicaProc {
	t := c.t
	t.Helper()
	arg, _ := json.Marshal(c.cfg)
	env := []string{envDriver + "=" + c.b.driver, envDSN + "=" + c.dsn, envTable + "=" + c.table, envArg + "=" + string(arg),
		envMutant + "=" + c.cfg.Mutant}
	p := startProc(t, "replica", node, env, patience, func(line string) bool {
		e, err := parseEvent(node, line)
		if err != nil {
			t.Errorf("%s: %v", node, err)
			return false
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.events = append(c.events, e)
		if c.notify != nil {
			select {
			case c.notify <- e:
			default:
				t.Errorf("%s: notify channel full", node)
			}
		}
		return e.kind == "ready"
	})
	c.procs = append(c.procs, p)
	return p
}

func parseEvent(node, line string) (event, error) {
	f := strings.Fields(line)
	var n []int64
	for _, s := range f {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			n = append(n, v)
		}
	}
	if len(f) < 2 || len(n) != len(f)-1 {
		return event{}, fmt.Errorf("bad line %q", line)
	}
	e := event{at: time.Unix(0, n[0]), node: node, kind: f[1]}
	switch {
	case e.kind == "ready" && len(n) == 1:
	case (e.kind == "start" || e.kind == "end" || e.kind == "quit") && len(n) == 3:
		e.due, e.reason = n[1], schedule.Reason(n[2])
	case e.kind == "rec" && len(n) == 5:
		e.due, e.status, e.reason, e.try = n[1], schedule.Status(n[2]), schedule.Reason(n[3]), int(n[4])
	default:
		return event{}, fmt.Errorf("bad line %q", line)
	}
	return e, nil
}

// stop stops a replica the way an orchestrator does, and waits for it.
// If the test has failed, it logs what the replica wrote to its standard
// error: the errors of its records.
func (c *cluster) stop(p *replicaProc) {
	c.t.Helper()
	p.stdin.Close()
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		c.t.Errorf("%s: %v: %s", p.node, err, p.err.String())
	}
	c.t.Cleanup(func() {
		if c.t.Failed() && p.err.Len() > 0 {
			c.t.Logf("%s's standard error:\n%s", p.node, p.err.String())
		}
	})
}

// kill kills a replica with SIGKILL.
func (c *cluster) kill(p *replicaProc) {
	_ = p.cmd.Process.Kill()
	<-p.done
	_ = p.cmd.Wait()
}

func (c *cluster) snapshot() []event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event(nil), c.events...)
}

// settled returns the latest due time whose run should have ended by now,
// when every run starts within 300ms of its slot; await waits for the
// ones that did not.
func (c *cluster) settled() time.Time {
	return time.Now().Add(-c.cfg.MaxRun - 300*time.Millisecond)
}

// await waits, for up to patience, until each slot in (from, to] has a
// Succeeded record, seen by an observer or in the store (a replica killed
// after its Finish landed never printed its own), before the replicas are
// stopped: a stop cancels the claims in flight, and a loaded machine (the
// race detector, other work) may start a run later than settled allows. A
// slot that is truly lost fails the checks that follow.
func (c *cluster) await(from, to time.Time) {
	slots := c.slotsBetween(from, to)
	s := newStore(c.t, c.b, c.dsn)
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ok := map[int64]bool{}
		for _, e := range c.snapshot() {
			if e.kind == "rec" && e.status == schedule.Succeeded {
				ok[e.due] = true
			}
		}
		if h, err := s.History(ctx, replicaJob, 1_000_000); err == nil && len(ok) < len(slots) {
			for _, r := range h {
				if r.Status == schedule.Succeeded {
					ok[r.Due.UnixNano()] = true
				}
			}
		}
		missing := 0
		for _, due := range slots {
			if !ok[due] {
				missing++
			}
		}
		if missing == 0 {
			return
		}
	}
}

// slotsBetween returns the slots of the schedule in (from, to].
func (c *cluster) slotsBetween(from, to time.Time) []int64 {
	var out []int64
	s := schedule.Every(c.cfg.Every)
	for t := s.Next(from); !t.After(to); t = s.Next(t) {
		out = append(out, t.UnixNano())
	}
	return out
}

// tally counts, per slot, the runs started, the runs ended, and the
// records each kind of status reached the observers with.
type tally struct {
	starts, ends map[int64][]event
	recs         map[int64][]event
}

func tallyOf(events []event) tally {
	tl := tally{starts: map[int64][]event{}, ends: map[int64][]event{}, recs: map[int64][]event{}}
	for _, e := range events {
		switch e.kind {
		case "start":
			tl.starts[e.due] = append(tl.starts[e.due], e)
		case "end":
			tl.ends[e.due] = append(tl.ends[e.due], e)
		case "rec":
			tl.recs[e.due] = append(tl.recs[e.due], e)
		}
	}
	return tl
}

// checkNoneTwice fails t if any slot's Func returned twice, anywhere.
func (tl tally) checkNoneTwice(t *testing.T) {
	t.Helper()
	for due, es := range tl.ends {
		if len(es) > 1 {
			t.Errorf("slot %v ran to its end %d times: %v", time.Unix(0, due).UTC(), len(es), es)
		}
	}
}

// checkOnce fails t unless each of slots ran to its end exactly once and
// reached an observer as Succeeded once, with the given reason, if ok.
func (tl tally) checkOnce(t *testing.T, slots []int64, reason func(int64) (schedule.Reason, bool)) {
	t.Helper()
	for _, due := range slots {
		ends := tl.ends[due]
		if len(ends) != 1 {
			t.Errorf("slot %v ran to its end %d times; starts %v; records %v", time.Unix(0, due).UTC(), len(ends), tl.starts[due], tl.recs[due])
			continue
		}
		if want, ok := reason(due); ok && ends[0].reason != want {
			t.Errorf("slot %v ran as %v, want %v", time.Unix(0, due).UTC(), ends[0].reason, want)
		}
		ok := 0
		for _, r := range tl.recs[due] {
			if r.status == schedule.Succeeded {
				ok++
			}
		}
		if ok != 1 {
			t.Errorf("slot %v has %d Succeeded records: %v", time.Unix(0, due).UTC(), ok, tl.recs[due])
		}
	}
}

// checkStore fails t unless the store holds a Succeeded record of each of
// slots.
func (c *cluster) checkStore(slots []int64) map[int64]schedule.Record {
	t := c.t
	t.Helper()
	s := newStore(t, c.b, c.dsn)
	h, err := s.History(ctx, replicaJob, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[int64]schedule.Record{}
	for _, r := range h {
		recs[r.Due.UnixNano()] = r
	}
	for _, due := range slots {
		r, ok := recs[due]
		switch {
		case !ok:
			t.Errorf("slot %v has no record in the store", time.Unix(0, due).UTC())
		case r.Status != schedule.Succeeded:
			t.Errorf("slot %v is %v in the store: %+v", time.Unix(0, due).UTC(), r.Status, r)
		}
	}
	return recs
}

// next waits for an event that match accepts, for up to d.
func (c *cluster) next(d time.Duration, match func(event) bool) (event, bool) {
	timeout := time.After(d)
	for {
		select {
		case e := <-c.notify:
			if match(e) {
				return e, true
			}
		case <-timeout:
			return event{}, false
		}
	}
}

// drain empties the notify channel.
func (c *cluster) drain() {
	for {
		select {
		case <-c.notify:
		default:
			return
		}
	}
}

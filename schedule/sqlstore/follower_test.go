package sqlstore_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
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

const (
	// followReport is how often a follower reads its Table's Tasks and
	// reports them if they changed: a change is seen applied up to this
	// much, plus a read of the Store, after it was.
	followReport = 50 * time.Millisecond
	// followGrace is the followers' WithGrace: a run that starts late on a
	// loaded machine is still on time, so that a late tick does not make
	// a slot Missed (run-once). What the test checks is each change
	// applied by every replica and each slot once, not the timer.
	followGrace = 5 * time.Second
)

// follower runs a cron.Table on the Store the environment names,
// following its Definitions at the default poll interval (1s), with one
// handler, "rec", whose runs last up to 50ms, until its standard input
// closes; then it stops the Table. It prints a line for each event, with
// its wall-clock time:
//
//	<unixnano> ready
//	<unixnano> look                                      the Table looks at the Version
//	<unixnano> state <digest>                            Tasks changed (stateDigest)
//	<unixnano> start <job> <due> <reason> <businessID>   a run started
//
// Each line is one write to a pipe.
func follower() error {
	s, db, err := helperStore(sqlstore.WithHistory(1_000_000, 1_000_000))
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
	rec := func(ctx context.Context, bid string, r schedule.Run) error {
		say("start %s %d %d %s", r.Job, r.Due.UnixNano(), r.Reason, bid)
		t := time.NewTimer(rand.N(50 * time.Millisecond))
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	node := os.Getenv(envNode)
	tb := cron.NewTable(map[string]cron.Handler{"rec": rec}, cron.WithStore(s), cron.WithLocation(time.UTC),
		cron.WithJobOptions(schedule.WithNode(node), schedule.WithGrace(followGrace),
			schedule.WithObserver(func(r schedule.Record) {
				if r.Err != "" {
					fmt.Fprintf(os.Stderr, "%s %v %v: %s\n", r.Job, r.Due.UTC().Format("15:04:05.0"), r.Status, r.Err)
				}
			})))
	src := lookingSource{Source: s.Definitions(), say: say}
	err = tb.Follow(context.Background(), src, cron.WithErrorHandler(func(err error) {
		fmt.Fprintf(os.Stderr, "%s following: %v\n", time.Now().UTC().Format("15:04:05.000"), err)
	}))
	if err != nil {
		return err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		last := ""
		tick := time.NewTicker(followReport)
		defer tick.Stop()
		for {
			if d := stateDigest(tb.Tasks()); d != last {
				say("state %s", d)
				last = d
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	say("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	close(done)
	wg.Wait()
	stop, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return tb.Stop(stop)
}

// lookingSource says "look" as each call of Version begins.
type lookingSource struct {
	cron.Source
	say func(format string, args ...any)
}

func (s lookingSource) Version(ctx context.Context) (int64, error) {
	s.say("look")
	return s.Source.Version(ctx)
}

// stateDigest describes the tasks a Table runs in one word, for a line:
// "none", or one name|spec|businessID|state a task, sorted by name, with
// the spaces of the spec as '_'. The state is "paused" once the task's job
// is paused (Paused, and no Next), "on" once it is scheduled (not Paused,
// a Next), and "-" in between: while its job starts, or is paused or
// resumed.
func stateDigest(ts []cron.TaskState) string {
	if len(ts) == 0 {
		return "none"
	}
	words := make([]string, len(ts))
	for i, s := range ts {
		state := "-"
		switch {
		case s.Task.Paused && s.Next.IsZero():
			state = "paused"
		case !s.Task.Paused && !s.Next.IsZero():
			state = "on"
		}
		words[i] = digestWord(s.Task.Name, s.Task.Spec, s.Task.BusinessID, state)
	}
	return strings.Join(words, ",")
}

func digestWord(name, spec, bid, state string) string {
	return name + "|" + strings.ReplaceAll(spec, " ", "_") + "|" + bid + "|" + state
}

// A followRun is the start of a run, as a follower printed it.
type followRun struct {
	at     time.Time
	node   string
	job    string
	due    time.Time
	reason schedule.Reason
	bid    string
}

func (r followRun) String() string {
	return fmt.Sprintf("%s at %s (%v, business id %s)", r.node, r.at.UTC().Format("15:04:05.000"), r.reason, r.bid)
}

// A followState is a follower's state line.
type followState struct {
	at     time.Time
	digest string
}

// followers are the replica processes of TestFollowDefinitions and what
// they printed.
type followers struct {
	t      *testing.T
	b      backend
	dsn    string
	mu     sync.Mutex
	states map[string][]followState // by node
	looks  map[string][]time.Time   // by node
	runs   []followRun
	procs  []*replicaProc
}

// start starts a follower named node and waits until it is ready.
func (f *followers) start(node string) {
	t := f.t
	t.Helper()
	env := []string{envDriver + "=" + f.b.driver, envDSN + "=" + f.dsn, envTable + "=" + tableFor(t)}
	p := startProc(t, "follower", node, env, patience, func(line string) bool {
		ready, err := f.parse(node, line)
		if err != nil {
			t.Errorf("%s: %v", node, err)
		}
		return ready
	})
	f.procs = append(f.procs, p)
}

// parse records a line of node's, and reports whether it says node is
// ready.
func (f *followers) parse(node, line string) (ready bool, err error) {
	w := strings.Fields(line)
	if len(w) < 2 {
		return false, fmt.Errorf("bad line %q", line)
	}
	ns, perr := strconv.ParseInt(w[0], 10, 64)
	if perr != nil {
		return false, fmt.Errorf("bad line %q", line)
	}
	at := time.Unix(0, ns)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case w[1] == "ready" && len(w) == 2:
		return true, nil
	case w[1] == "look" && len(w) == 2:
		f.looks[node] = append(f.looks[node], at)
	case w[1] == "state" && len(w) == 3:
		f.states[node] = append(f.states[node], followState{at, w[2]})
	case w[1] == "start" && len(w) == 6:
		due, err1 := strconv.ParseInt(w[3], 10, 64)
		reason, err2 := strconv.Atoi(w[4])
		if err1 != nil || err2 != nil {
			return false, fmt.Errorf("bad line %q", line)
		}
		f.runs = append(f.runs, followRun{at: at, node: node, job: w[2], due: time.Unix(0, due),
			reason: schedule.Reason(reason), bid: w[5]})
	default:
		return false, fmt.Errorf("bad line %q", line)
	}
	return false, nil
}

// applied returns, for each follower whose Tasks have reported want since
// the time since, when they first did.
func (f *followers) applied(want string, since time.Time) map[string]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := map[string]time.Time{}
	for node, ss := range f.states {
		for _, s := range ss {
			if s.digest == want && !s.at.Before(since) {
				got[node] = s.at
				break
			}
		}
	}
	return got
}

// awaitApplied waits until every follower has reported want since the
// time since, for up to patience, and returns when each did.
func (f *followers) awaitApplied(want string, since time.Time) map[string]time.Time {
	deadline := time.Now().Add(patience)
	for {
		got := f.applied(want, since)
		if len(got) == len(f.procs) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// looksBetween returns how many looks at the Version node began in [from,
// to).
func (f *followers) looksBetween(node string, from, to time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, at := range f.looks[node] {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	return n
}

// latest returns each follower's latest state.
func (f *followers) latest() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[string]string{}
	for node, ss := range f.states {
		if len(ss) > 0 {
			m[node] = ss[len(ss)-1].digest
		}
	}
	return m
}

func (f *followers) snapshot() []followRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.runs)
}

// stop closes each follower's standard input and waits for it to stop its
// Table and exit.
func (f *followers) stop() {
	t := f.t
	t.Helper()
	for _, p := range f.procs {
		p.stdin.Close()
	}
	for _, p := range f.procs {
		<-p.done
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("%s: %v: %s", p.node, err, p.err.String())
		}
		t.Cleanup(func() {
			if t.Failed() && p.err.Len() > 0 {
				t.Logf("%s's standard error:\n%s", p.node, p.err.String())
			}
		})
	}
}

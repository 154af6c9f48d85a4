package sqlstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
	"github.com/circulation-go/circulation/wheel"
)

// herdConfig is what a herd replica runs, passed as JSON in envArg.
type herdConfig struct {
	Jobs  int
	Lease time.Duration
	Due   time.Time
	Slow  time.Duration // each run lasts this long
}

// herdReplica runs the herd: Jobs jobs, "h0" to "h<Jobs-1>", each due once
// at Due, on a wheel.Wheel, started with StartAll. It prints "ready", then
// "start <job> <reason>" as each run starts and "end <job>" as it ends,
// until its standard input closes; then it stops the jobs.
func herdReplica() error {
	var c herdConfig
	if err := json.Unmarshal([]byte(os.Getenv(envArg)), &c); err != nil {
		return err
	}
	s, db, err := helperStore(sqlstore.WithLease(c.Lease))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(16)
	w := wheel.New()
	defer w.Stop()
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush() // a line at a time, whole if the process is killed
		mu.Unlock()
	}
	jobs := make([]*schedule.Job, c.Jobs)
	for i := range jobs {
		name := "h" + strconv.Itoa(i)
		jobs[i] = schedule.NewJob(name, schedule.Once(c.Due), func(ctx context.Context, r schedule.Run) error {
			say("start %s %d", name, r.Reason)
			if c.Slow > 0 {
				t := time.NewTimer(c.Slow)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}
			say("end %s", name)
			return nil
		}, schedule.WithStore(s), schedule.WithScheduler(w), schedule.WithNode(os.Getenv(envNode)))
	}
	if err := schedule.StartAll(context.Background(), jobs...); err != nil {
		return err
	}
	say("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() { _ = j.Stop(context.Background()) })
	}
	wg.Wait()
	return nil
}

// A herdProc is a running herd replica and what it printed.
type herdProc struct {
	*replicaProc
	mu  sync.Mutex
	got []string
}

func startHerd(t *testing.T, b backend, dsn, node string, c herdConfig) *herdProc {
	t.Helper()
	arg, _ := json.Marshal(c)
	p := new(herdProc)
	env := []string{envDriver + "=" + b.driver, envDSN + "=" + dsn, envTable + "=" + tableFor(t), envArg + "=" + string(arg)}
	p.replicaProc = startProc(t, "herd", node, env, patience, func(line string) bool {
		if line == "ready" {
			return true
		}
		p.mu.Lock()
		p.got = append(p.got, line)
		p.mu.Unlock()
		return false
	})
	return p
}

func (p *herdProc) lines2() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}

// startHerds starts three herd replicas of c on a new table of b, with
// Due a margin after the first was started, and returns them, with the
// table's dsn and c as they run it, once all are ready.
//
// A herd falls due on replicas that are all ready: if they were not ready
// by Due, the machine being busy, startHerds kills them and starts three
// more, on a new table, with the due time further off. And a herd's lease
// is at least herdReadyLeases times what the replicas took to start their
// jobs, unless fixedLease: a herd drains as much slower as its replicas
// start, and a claim that waits longer than its lease for its statement
// times out (a Once slot is then Skipped, never run), or one that waits
// for its finish is taken over and runs twice, as the docs say of such
// writes. On a quiet machine the lease is c's: the replicas start a herd
// of 3,000 in 2s under the race detector, on SQLite.
func startHerds(t *testing.T, b backend, c herdConfig, margin time.Duration, fixedLease bool) ([]*herdProc, string, herdConfig) {
	t.Helper()
	for {
		dsn := b.dsn(t)
		newStore(t, b, dsn)
		start := time.Now()
		c.Due = start.Add(margin)
		var ps []*herdProc
		for i := range 3 {
			ps = append(ps, startHerd(t, b, dsn, fmt.Sprint("n", i), c))
		}
		took := time.Since(start)
		if time.Now().Before(c.Due) && (fixedLease || c.Lease >= herdReadyLeases*took) {
			t.Logf("the replicas were ready in %v, %v before the due time; lease %v", took.Round(time.Millisecond),
				time.Until(c.Due).Round(time.Millisecond), c.Lease)
			return ps, dsn, c
		}
		// Again, with room for the next start to take twice as long.
		next := max(margin, 2*took).Round(time.Second)
		lease := c.Lease
		if !fixedLease {
			lease = max(lease, 2*herdReadyLeases*took).Round(time.Second)
		}
		t.Logf("the replicas were ready in %v, due %v after their start, lease %v: again, due %v after the start, lease %v",
			took.Round(time.Millisecond), margin, c.Lease, next, lease)
		for _, p := range ps {
			_ = p.cmd.Process.Kill()
			<-p.done
			_ = p.cmd.Wait()
		}
		if took >= patience {
			t.Fatalf("the replicas took %v to be ready", took)
		}
		margin, c.Lease = next, lease
	}
}

// herdReadyLeases is how many times what a herd's replicas took to start
// their jobs its lease lasts at least (startHerds).
const herdReadyLeases = 4

// herdLease is the lease of the herd tests: shorter than a herd of 10,000
// took to drain before claims were batched (6.5 s on SQLite). Under the
// race detector, a statement of a thousand records on SQLite can take
// seconds, and a loaded machine held renewals past a 2 s lease: the slots
// were taken over and ran twice, as the docs say of a write that waits
// longer than the lease.
var herdLease = map[bool]time.Duration{false: 2 * time.Second, true: 10 * time.Second}[race]

// herdSize is the herd of TestHerdExactlyOnce: 10,000 jobs (3,000 under
// the race detector, which makes SQLite several times slower: three
// batches still), or SQLSTORE_HERD_JOBS (the long checks run 100,000).
func herdSize(t *testing.T) int {
	if v := os.Getenv("SQLSTORE_HERD_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SQLSTORE_HERD_JOBS=%q: want a number of jobs", v)
		}
		return n
	}
	if race {
		return 3_000
	}
	return 10_000
}

// awaitSucceeded waits until n slots have a Succeeded record, for up to d.
func awaitSucceeded(t *testing.T, b backend, dsn string, n int, d time.Duration) {
	t.Helper()
	db := openDB(t, b.driver, dsn)
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		var k int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + tableFor(t) + " WHERE status = 1").Scan(&k); err != nil {
			t.Fatal(err)
		}
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d slots Succeeded after %v", k, n, d)
		}
	}
}

// TestHerdExactlyOnce runs a herd of jobs due at one instant in three
// replica processes on one database, with a short lease, shorter than the
// herd took to drain before claims were batched: the claims of the herd
// must not eat their leases while they wait for a statement, nor time out
// in a queue. Every slot runs exactly once, and is recorded.
func TestHerdExactlyOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		n := herdSize(t)
		lease := herdLease
		if os.Getenv("SQLSTORE_HERD_JOBS") != "" {
			lease = 30 * time.Second // the long checks: the default lease
		}
		ps, dsn, c := startHerds(t, b, herdConfig{Jobs: n, Lease: lease}, 5*time.Second+time.Duration(n/10_000)*time.Second,
			os.Getenv("SQLSTORE_HERD_JOBS") != "")
		awaitSucceeded(t, b, dsn, n, time.Until(c.Due)+max(patience, 2*c.Lease))
		took := time.Since(c.Due)
		for _, p := range ps {
			p.stdin.Close()
			<-p.done
			if err := p.cmd.Wait(); err != nil {
				t.Errorf("%s: %v: %s", p.node, err, p.err.String())
			}
		}
		starts := map[string]int{}
		for _, p := range ps {
			for _, l := range p.lines2() {
				if f := strings.Fields(l); f[0] == "start" {
					starts[f[1]]++
				}
			}
		}
		twice := 0
		for job, k := range starts {
			if k > 1 {
				twice++
				if twice < 10 {
					t.Errorf("%s ran %d times", job, k)
				}
			}
		}
		if len(starts) != n || twice > 0 {
			t.Errorf("%d of %d jobs ran, %d of them more than once", len(starts), n, twice)
		}
		t.Logf("%d jobs due at once in 3 processes, lease %v: every one recorded %v after the due time", n, c.Lease, took.Round(time.Millisecond))
	})
}

// TestHerdKillDuringBatchedClaims kills one of three herd replicas with
// SIGKILL 20ms after the herd fell due, while its claims of the herd, sent
// in batches, are in flight: a statement it had under way when it died
// claimed nothing, and the others claim those slots; the slots it had
// claimed are taken over once their leases expire, Recovered, by the others
// (whose jobs have no slot left). Every slot is recorded Succeeded, and a
// slot runs twice only if the killed replica had started it.
func TestHerdKillDuringBatchedClaims(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		n := 5000
		if race {
			n = 3000
		}
		ps, dsn, c := startHerds(t, b, herdConfig{Jobs: n, Lease: herdLease, Slow: 500 * time.Millisecond}, 6*time.Second, false)
		victim := ps[0]
		time.Sleep(time.Until(c.Due.Add(20 * time.Millisecond)))
		_ = victim.cmd.Process.Kill()
		<-victim.done
		_ = victim.cmd.Wait()
		killed := time.Now()
		awaitSucceeded(t, b, dsn, n, max(patience, 2*c.Lease))
		took := time.Since(killed)
		for _, p := range ps[1:] {
			p.stdin.Close()
			<-p.done
			if err := p.cmd.Wait(); err != nil {
				t.Errorf("%s: %v: %s", p.node, err, p.err.String())
			}
		}
		started := map[string]int{}
		byVictim := map[string]bool{}
		recovered := 0
		for _, p := range ps {
			for _, l := range p.lines2() {
				f := strings.Fields(l)
				if f[0] != "start" {
					continue
				}
				started[f[1]]++
				if p == victim {
					byVictim[f[1]] = true
				}
				if f[2] == strconv.Itoa(int(schedule.Recovered)) {
					recovered++
				}
			}
		}
		h := newStore(t, b, dsn)
		for job, k := range started {
			if k > 1 && !byVictim[job] {
				t.Errorf("%s started %d times, none of them on the killed replica", job, k)
			}
		}
		if len(started) != n {
			t.Errorf("%d of %d jobs started", len(started), n)
		}
		last, err := h.LastOf(ctx, []string{"h0", "h1"})
		if err != nil || len(last) != 2 {
			t.Errorf("LastOf: %v %v", last, err)
		}
		t.Logf("killed with %d runs started; %d slots taken over and recorded within %v of the kill",
			len(byVictim), recovered, took.Round(time.Millisecond))
	})
}

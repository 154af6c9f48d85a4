package sqlstore_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// replicaSeconds is how long TestReplicas runs: 20s, 4s with -short, or
// SQLSTORE_REPLICA_SECONDS.
func replicaSeconds(t *testing.T) time.Duration {
	if v := os.Getenv("SQLSTORE_REPLICA_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SQLSTORE_REPLICA_SECONDS=%q: want a whole number of seconds", v)
		}
		return time.Duration(n) * time.Second
	}
	if testing.Short() {
		return 4 * time.Second
	}
	return 20 * time.Second
}

// TestReplicas runs three replica processes of Every(100ms) with random
// run durations, up to 2.5 periods so that runs overlap: every slot runs
// once, none twice, none lost. On SQLite the three share one file.
func TestReplicas(t *testing.T) {
	t.Parallel() // real time, mostly waiting: beside the others of its kind
	eachBackend(t, func(t *testing.T, b backend) {
		// The lease is long and the Misfire policy RunAll: on a loaded
		// machine a write to SQLite waited up to 2s for the lock, and
		// ticks came over a second late. A lease shorter than such a
		// wait lets a slot whose Finish waits be taken over and run
		// again (DESIGN.md); a late tick reports the slots it passed
		// Missed under MisfireRunOnce. Neither is what this test is
		// about: each slot once among three processes.
		c := newCluster(t, b, replicaConfig{Every: 100 * time.Millisecond, Lease: 30 * time.Second,
			Misfire: schedule.MisfireRunAll, MaxRun: 250 * time.Millisecond})
		for i := range 3 {
			c.start(fmt.Sprint("n", i))
		}
		from := time.Now()
		time.Sleep(replicaSeconds(t))
		to := c.settled()
		c.await(from, to)
		for _, p := range c.procs {
			c.stop(p)
		}
		slots := c.slotsBetween(from, to)
		tl := tallyOf(c.snapshot())
		tl.checkNoneTwice(t)
		reasons := map[schedule.Reason]int{}
		tl.checkOnce(t, slots, func(due int64) (schedule.Reason, bool) {
			if es := tl.ends[due]; len(es) == 1 {
				reasons[es[0].reason]++
			}
			return 0, false
		})
		for r := range reasons {
			if r != schedule.Scheduled && r != schedule.CatchUp {
				t.Errorf("%d slots ran as %v", reasons[r], r)
			}
		}
		c.checkStore(slots)
		nodes := map[string]int{}
		for _, due := range slots {
			if es := tl.ends[due]; len(es) == 1 {
				nodes[es[0].node]++
			}
		}
		t.Logf("%d slots, run by node: %v, by reason: %v", len(slots), nodes, reasons)
		if len(nodes) < 2 {
			t.Errorf("one node ran every slot: %v", nodes)
		}
	})
}

// TestCrash kills a replica, the owner of the job, with SIGKILL in the
// middle of a run: another
// replica takes the slot over once the lease expired, with Reason
// Recovered and Attempt 2, and every other slot still runs once. The
// victim's runs last 400ms, so that several are in flight when it dies:
// all of them are taken over. The Misfire policy is RunAll: a tick that a
// loaded machine runs late, past the grace, catches its slots up rather
// than report them Missed (under RunOnce), and a slot is then a CatchUp.
//
// SQLSTORE_CRASH_LEASE sets the lease (1s by default), to measure the
// takeover time against it.
func TestCrash(t *testing.T) {
	lease := time.Second
	if v := os.Getenv("SQLSTORE_CRASH_LEASE"); v != "" {
		var err error
		if lease, err = time.ParseDuration(v); err != nil {
			t.Fatalf("SQLSTORE_CRASH_LEASE=%q: %v", v, err)
		}
	}
	eachBackend(t, func(t *testing.T, b backend) {
		// The victim is the job's owner, which runs its slots.
		nodes := []string{"n0", "n1", "n2"}
		owner := sqlstore.OwnerOf(replicaJob, nodes)
		c := newCluster(t, b, replicaConfig{Every: 100 * time.Millisecond, Lease: lease, Misfire: schedule.MisfireRunAll,
			MaxRun: 250 * time.Millisecond, Slow: owner, SlowRun: 400 * time.Millisecond})
		var victim *replicaProc
		for _, n := range nodes {
			if p := c.start(n); n == owner {
				victim = p
			}
		}
		from := time.Now()
		time.Sleep(time.Second)
		c.drain()
		e, ok := c.next(5*time.Second, func(e event) bool {
			return e.node == owner && e.kind == "start" && e.reason == schedule.Scheduled
		})
		if !ok {
			t.Fatal("the victim ran no slot in 5s")
		}
		c.kill(victim)
		killed := time.Now()
		r, ok := c.next(10*lease, func(r event) bool {
			return r.kind == "start" && r.due == e.due && r.reason == schedule.Recovered
		})
		if !ok {
			t.Fatalf("slot %v not taken over within %v", time.Unix(0, e.due).UTC(), 10*lease)
		}
		takeover := r.at.Sub(killed)
		t.Logf("taken over %v after the kill: %.2f leases of %v", takeover.Round(time.Millisecond), float64(takeover)/float64(lease), lease)
		time.Sleep(time.Second)
		to := c.settled()
		c.await(from, to)
		for _, p := range c.procs {
			if p != victim {
				c.stop(p)
			}
		}

		// The victim's runs whose outcome it did not record, because it
		// died before their Finish landed, were all taken over. Some of
		// them may have ended: a node that dies between the end of its
		// Func and its Finish has done the work of a slot that another
		// node will do again. Those ends are not counted.
		// The store says which: their records are another node's now.
		events := c.snapshot()
		h, err := newStore(t, b, c.dsn).History(ctx, replicaJob, 1_000_000)
		if err != nil {
			t.Fatal(err)
		}
		recorded := map[int64]bool{}
		for _, r := range h {
			if r.Node == owner {
				recorded[r.Due.UnixNano()] = true
			}
		}
		// The victim may also die after its Finish landed but before
		// its observer printed the record: the store has it.
		observed := map[int64]bool{}
		for _, e := range events {
			if e.node == owner && e.kind == "rec" {
				observed[e.due] = true
			}
		}
		for _, r := range h {
			if due := r.Due.UnixNano(); r.Node == owner && !observed[due] {
				events = append(events, event{node: owner, kind: "rec", due: due, status: r.Status, reason: r.Reason, try: r.Attempt})
			}
		}
		// Only the runs it started count: a late tick of the victim
		// also reports slots Missed that the others ran, and its
		// observer prints them, refused.
		lost := map[int64]bool{}
		for _, e := range events {
			if e.node == owner && !recorded[e.due] && e.kind == "start" {
				lost[e.due] = true
			}
		}
		kept := events[:0:0]
		for _, e := range events {
			if e.node == owner && lost[e.due] && e.kind == "end" {
				continue
			}
			kept = append(kept, e)
		}
		tl := tallyOf(kept)
		tl.checkNoneTwice(t)
		if !lost[e.due] {
			t.Errorf("the killed slot %v is not among the recovered ones", time.Unix(0, e.due).UTC())
		}
		for due := range lost {
			if n := len(tl.starts[due]); n != 2 {
				t.Errorf("killed slot %v started %d times, want 2: %v", time.Unix(0, due).UTC(), n, tl.starts[due])
			}
		}
		slots := c.slotsBetween(from, to)
		tl.checkOnce(t, slots, func(due int64) (schedule.Reason, bool) {
			if lost[due] {
				return schedule.Recovered, true
			}
			if es := tl.ends[due]; len(es) == 1 && es[0].reason != schedule.Scheduled && es[0].reason != schedule.CatchUp {
				t.Errorf("slot %v ran as %v, want Scheduled or CatchUp", time.Unix(0, due).UTC(), es[0].reason)
			}
			return 0, false
		})
		recs := c.checkStore(slots)
		for due := range lost {
			if r := recs[due]; r.Attempt != 2 || r.Node == owner || r.Reason != schedule.Recovered {
				t.Errorf("killed slot's record: %+v", r)
			}
		}
		t.Logf("%d slots; %d in flight on the killed replica, taken over", len(slots), len(lost))

		// The owner's next slots run on the others, each no later than a
		// lease and the grace period after its due time, beyond the
		// delay the machine gave the owner's own starts before the kill.
		// Until the owner's heartbeat is a lease old the others wait the
		// hand-off first; then they claim at once.
		var delay, worst time.Duration
		for due, es := range tl.starts {
			for _, e := range es {
				late := e.at.Sub(time.Unix(0, due))
				switch {
				case e.node == owner && e.at.Before(killed):
					delay = max(delay, late)
				case e.reason != schedule.Recovered && due > killed.UnixNano():
					if e.node == owner {
						t.Errorf("slot %v started on the killed owner", time.Unix(0, due).UTC())
					}
					worst = max(worst, late)
				}
			}
		}
		t.Logf("the owner's starts were up to %v late; after the kill, the others' up to %v", delay, worst)
		if bound := lease + time.Second + delay; worst > bound {
			t.Errorf("a slot after the owner's kill started %v after its due time, over %v", worst, bound)
		}
	})
}

// TestOutage stops PostgreSQL for 3s under three replicas: no run starts
// without a claim, no slot runs twice, and once the database is back the
// slots missed meanwhile run, each once, with Reason CatchUp
// (MisfireRunAll). The lease outlasts the outage: Finish retries until the
// database is back, so no claim is taken over.
func TestOutage(t *testing.T) {
	b := backends()[1]
	needPostgres(t)
	if pg.server == nil {
		t.Skip("PostgreSQL is not the tests' own (SQLSTORE_PG_DSN): cannot stop it")
	}
	c := newCluster(t, b, replicaConfig{Every: 100 * time.Millisecond, Lease: 30 * time.Second,
		Misfire: schedule.MisfireRunAll, MaxRun: 50 * time.Millisecond})
	for i := range 3 {
		c.start(fmt.Sprint("n", i))
	}
	from := time.Now()
	time.Sleep(time.Second)
	if err := pg.server.Stop(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	time.Sleep(3 * time.Second)
	up0 := time.Now()
	if err := pg.server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL down from %v to %v", down.Sub(from).Round(time.Millisecond), time.Since(from).Round(time.Millisecond))
	time.Sleep(3 * time.Second)
	to := c.settled()
	c.await(from, to)
	for _, p := range c.procs {
		c.stop(p)
	}
	tl := tallyOf(c.snapshot())
	tl.checkNoneTwice(t)
	slots := c.slotsBetween(from, to)
	catchUps := 0
	tl.checkOnce(t, slots, func(due int64) (schedule.Reason, bool) {
		d := time.Unix(0, due)
		if d.After(up0.Add(-100 * time.Millisecond)) {
			// A claim that fails is tried again for three quarters of
			// the way to the next slot: the slot before the restart may
			// have been claimed once the server was up, and run on time.
			return 0, false
		}
		if d.After(down) && d.Before(up0) {
			catchUps++
			return schedule.CatchUp, true
		}
		return 0, false
	})
	c.checkStore(slots)
	// No run started without a claim while the database was down: a slot
	// that fell due once the server had stopped was claimed once it was
	// back, and its run started after that. (A run claimed before the stop
	// may start during the outage, however late a busy machine prints it.)
	for due, es := range tl.starts {
		for _, e := range es {
			if time.Unix(0, due).After(down) && e.at.Before(up0) {
				t.Errorf("a run started while the database was down: %+v", e)
			}
		}
	}
	t.Logf("%d slots, %d of them caught up after the outage", len(slots), catchUps)
}

// TestRestart stops every replica, and starts one 5s later: the slots
// missed meanwhile are caught up from the records by MisfireRunOnce: one
// run for the latest slot, the others Missed. With a grace of 10ms, that
// run is usually late, a CatchUp; it is Scheduled if the replica started
// within 10ms of the slot.
func TestRestart(t *testing.T) {
	t.Parallel() // real time, mostly waiting: beside the others of its kind
	eachBackend(t, func(t *testing.T, b backend) {
		c := newCluster(t, b, replicaConfig{Every: 100 * time.Millisecond, Lease: 2 * time.Second,
			Misfire: schedule.MisfireRunOnce, MaxRun: 50 * time.Millisecond, Grace: 10 * time.Millisecond})
		for i := range 3 {
			c.start(fmt.Sprint("n", i))
		}
		time.Sleep(time.Second)
		for _, p := range c.procs {
			c.stop(p)
		}
		last, err := newStore(t, b, c.dsn).Last(ctx, replicaJob)
		if err != nil {
			t.Fatal(err)
		}
		before := len(c.snapshot())
		time.Sleep(5 * time.Second)
		c.start("n3")
		ready := time.Now()
		time.Sleep(time.Second)
		to := c.settled()
		c.await(ready, to)
		c.stop(c.procs[len(c.procs)-1])

		tl := tallyOf(c.snapshot()[before:])
		tl.checkNoneTwice(t)
		// A run the stops cut short was handed over (Released): the
		// replica started later takes it over, Recovered, once.
		if last.Status == schedule.Released {
			es := tl.starts[last.Due.UnixNano()]
			if len(es) != 1 || es[0].reason != schedule.Recovered {
				t.Errorf("the slot released at the stop, %v: runs %v, want one Recovered", last.Due.UTC(), es)
			}
		}
		// The first slot run after the restart, but for what was handed
		// over, is the latest that had fallen due when the replica started.
		var first int64
		for due, es := range tl.starts {
			if len(es) > 0 && es[0].reason == schedule.Recovered {
				continue
			}
			if first == 0 || due < first {
				first = due
			}
		}
		if first == 0 || time.Unix(0, first).After(ready) {
			t.Fatalf("first slot run after the restart: %v, the replica was ready at %v", time.Unix(0, first).UTC(), ready.UTC())
		}
		gap := c.slotsBetween(last.Due, time.Unix(0, first))
		if len(gap) == 0 {
			t.Fatalf("the first run after the restart, %v, is not after the last record before it, %+v",
				tl.starts[first], last)
		}
		gap = gap[:len(gap)-1]
		if len(gap) < 45 {
			t.Fatalf("%d slots missed between %v and %v, want about 50", len(gap), last.Due.UTC(), time.Unix(0, first).UTC())
		}
		for _, due := range gap {
			if rs := tl.recs[due]; len(rs) != 1 || rs[0].status != schedule.Missed {
				t.Errorf("missed slot %v: records %v, want one Missed", time.Unix(0, due).UTC(), rs)
			}
		}
		slots := c.slotsBetween(time.Unix(0, first-1), to)
		tl.checkOnce(t, slots, func(int64) (schedule.Reason, bool) { return 0, false })
		c.checkStore(slots)
		t.Logf("%d slots missed while down; the latest, %v, ran as %v", len(gap)+1,
			time.Unix(0, first).UTC().Format("15:04:05.0"), tl.starts[first][0].reason)
	})
}

// TestClaimTimeoutsUnderLoad makes claims time out, as under load, under
// three replicas with OverlapAllow and MisfireRunAll on PostgreSQL with a
// 1s lease: every second and a half, another writer holds the keys of the
// two slots after the next in an open transaction for 1.3s (those not
// claimed already, on a busy machine), so that each replica's
// claims of them wait out their lease and fail. Those slots are owed, and
// the next slots' catch-ups, several at once on each replica, claim them
// again: each runs once, none twice (a Store that adopted its own live
// claim ran such a slot twice at once on one node).
func TestClaimTimeoutsUnderLoad(t *testing.T) {
	b := backends()[1]
	needPostgres(t)
	const every = 100 * time.Millisecond
	c := newCluster(t, b, replicaConfig{Every: every, Lease: time.Second,
		Misfire: schedule.MisfireRunAll, MaxRun: 250 * time.Millisecond})
	for i := range 3 {
		c.start(fmt.Sprint("n", i))
	}
	db := openDB(t, b.driver, c.dsn)
	from := time.Now()
	blocked := 0
	for range 4 {
		time.Sleep(200 * time.Millisecond)
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Two slots from the second ahead, so that a busy machine's
		// delay before the INSERT seldom lets a replica claim them first;
		// one it did claim is not held (DO NOTHING), and not counted.
		next := schedule.Every(every).Next(time.Now().Add(2 * every))
		if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		for k := range 2 {
			res, err := conn.ExecContext(ctx, "INSERT INTO "+c.table+" (job, due, reason, status, node, err, attempt) VALUES ($1, $2, 0, 0, 'blocker', '', 1) ON CONFLICT (job, due) DO NOTHING",
				replicaJob, next.Add(time.Duration(k)*every).UnixNano())
			if err != nil {
				t.Fatal(err)
			}
			if n, err := res.RowsAffected(); err == nil && n == 1 {
				blocked++
			}
		}
		time.Sleep(1300 * time.Millisecond)
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	time.Sleep(2 * time.Second)
	to := c.settled()
	c.await(from, to)
	for _, p := range c.procs {
		c.stop(p)
	}
	tl := tallyOf(c.snapshot())
	tl.checkNoneTwice(t)
	slots := c.slotsBetween(from, to)
	timedOut := 0
	for _, es := range tl.recs {
		for _, e := range es {
			if e.status == schedule.Skipped {
				timedOut++
			}
		}
	}
	tl.checkOnce(t, slots, func(int64) (schedule.Reason, bool) { return 0, false })
	c.checkStore(slots)
	t.Logf("%d slots; %d held by another writer; %d claims timed out (Skipped) and were caught up", len(slots), blocked, timedOut)
	if timedOut == 0 {
		t.Error("no claim timed out: the test tests nothing")
	}
}

package sqlstore_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

const (
	// followMargin is how near an edit a slot may be and go either way:
	// a slot due just before an edit may be skipped by a replica that
	// applies the edit before the slot's run starts, and a run that
	// starts just after it is applied may see the old definition or the
	// new.
	followMargin = time.Second
	// followLooks is how soon every replica must apply a change to the
	// definitions: before this many looks at the Version have begun since
	// the change was saved, as Follow promises with its "within 2s" of
	// its default poll of 1s. Counted in looks, which the followers' own
	// timers time, it holds on a machine too busy to keep the seconds.
	followLooks = 2
	// stamp is how the test's messages show a time.
	stamp = "15:04:05.000"
)

// TestFollowDefinitions runs three replica processes, each a cron.Table
// following the definitions table of one database (Store.Definitions) at
// the default poll interval, 1s, with a handler that prints each run it
// starts. The test edits the definitions while they run: it creates
// tasks, most of them due every second (six fields), one never due in the
// test, then changes a spec (even seconds to odd ones) and a business id,
// pauses a task, deletes one, creates one with misfire "run-all" and
// resumes the paused one. The edits come one at a time, each 0.7 to 1.7s
// after the last was applied everywhere, so that they fall at any point
// of the followers' polls. The run-all task's write is held for 1.5s in
// the database (holdWrites): its Created is when the write began, and the
// followers see it only once it commits, so that it owes slots due
// before any of them loaded it, as a task created while no replica runs
// does.
//
// Each follower reports what its Tasks says whenever that changes, every
// 50ms; an edit is applied by a follower when its report first matches the
// definitions as edited, the task's job paused or scheduled as they say.
// Each edit is applied by every follower before its second look at the
// Version after the edit was saved has ended: before a third began (Follow
// promises 2s, two looks of its default poll; counted in looks, the bound
// holds however late a busy machine runs the followers' timers). The test
// logs the median and the maximum time from the edit's start, or the end
// of its hold.
//
// Each definition of a task is in force in an era, from the edit that
// made it (sent at began; applied by every follower at applied) to the
// next edit of the task (sent at ended; applied by the first follower at
// F). Slots near an edit may go either way: a replica that applies the
// edit just as a slot falls due may skip it, or run it with the old
// definition. So the test checks, at the end:
//
//   - no slot started twice: one start at most of each (task, due), among
//     the three processes;
//   - no slot lost: every slot of each era's spec due from applied (or,
//     for the run-all task, strictly after its Created: it owes its
//     slots from there, even those due before any follower loaded it) up
//     to F less a second (or, for the era in force at the end, up to the
//     end of the edits) started once and has a Succeeded record in the
//     store;
//   - no slot run against the definitions: a slot due from applied plus a
//     second to ended less a second (for the era in force at the end,
//     any later slot) ran only if the era's definition runs it (not
//     paused, not deleted, its spec matches) and with its business id;
//     and no slot due before the task was created ran.
//
// The runs last up to 50ms; the tasks allow overlapping runs and a grace
// of 5s, so that on a loaded machine neither a finish that waits for
// SQLite's write lock nor a late tick makes a slot Skipped or Missed: what
// the test checks is each change applied everywhere and each slot once.
func TestFollowDefinitions(t *testing.T) {
	t.Parallel() // real time, mostly waiting: beside the others of its kind
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		s := newStore(t, b, dsn) // the schema, once, and the editor's Store
		f := &followers{t: t, b: b, dsn: dsn, states: map[string][]followState{}, looks: map[string][]time.Time{}}
		for i := range 3 {
			// At random points of each other's polls, as replicas
			// started apart are.
			if i > 0 {
				time.Sleep(rand.N(time.Second))
			}
			f.start(fmt.Sprint("n", i))
		}
		ed := &editor{defs: s.Definitions(), model: map[string]*defined{}, eras: map[string][]*era{}}
		every := func(name, spec, bid string) cron.Task {
			return cron.Task{Name: name, Handler: "rec", Spec: spec, BusinessID: bid, Permanent: true, Overlap: "allow"}
		}
		catchUp := every("catchup", "* * * * * *", "c")
		catchUp.Misfire = "run-all"
		edits := []struct {
			task, what string
			hold       bool // hold the write for 1.5s after it began
			do         func() error
		}{
			{"every", "create, every second", false, func() error { return ed.create(every("every", "* * * * * *", "1")) }},
			{"pausable", "create, every second", false, func() error { return ed.create(every("pausable", "* * * * * *", "p")) }},
			{"doomed", "create, every second", false, func() error { return ed.create(every("doomed", "* * * * * *", "d")) }},
			{"alternate", "create, on even seconds", false, func() error { return ed.create(every("alternate", "*/2 * * * * *", "a")) }},
			{"daily", "create, at 09:00 (five fields)", false, func() error { return ed.create(every("daily", "0 9 * * *", "9")) }},
			{"alternate", "update its spec to odd seconds", false, func() error {
				return ed.update("alternate", func(d *cron.Task) { d.Spec = "1/2 * * * * *" })
			}},
			{"every", "update its business id", false, func() error {
				return ed.update("every", func(d *cron.Task) { d.BusinessID = "2" })
			}},
			{"pausable", "pause", false, func() error { return ed.setPaused("pausable", true) }},
			{"doomed", "delete", false, func() error { return ed.remove("doomed") }},
			{"catchup", "create, every second, misfire run-all, its write held for 1.5s", true, func() error { return ed.create(catchUp) }},
			{"pausable", "resume", false, func() error { return ed.setPaused("pausable", false) }},
		}

		var lats, alls []time.Duration // each follower's, and the last of each edit's
		prev := "none"
		for i, e := range edits {
			began := time.Now()
			sent, err := began, error(nil)
			if e.hold {
				// The definition's Created is the time its write began:
				// the followers see it 1.5s later, and owe its slots
				// since.
				release := holdWrites(t, b, dsn)
				done := make(chan error, 1)
				go func() { done <- e.do() }()
				time.Sleep(1500 * time.Millisecond)
				sent = time.Now()
				release()
				err = <-done
			} else {
				err = e.do()
			}
			if err != nil {
				t.Fatalf("edit %d, %s: %s: %v", i, e.task, e.what, err)
			}
			want := ed.digest()
			if want == prev {
				t.Fatalf("edit %d changes nothing the followers report: %s", i, want)
			}
			prev = want
			saved := time.Now()
			at := f.awaitApplied(want, sent)
			if len(at) < len(f.procs) {
				t.Fatalf("edit %d: applied by %d of %d followers after %v; they report %v, want %s",
					i, len(at), len(f.procs), patience, f.latest(), want)
			}
			for node, a := range at {
				if n := f.looksBetween(node, saved, a); n > followLooks {
					t.Errorf("edit %d, %s: %s: applied by %s after %d looks at the Version since it was saved, want %d at most",
						i, e.task, e.what, node, n, followLooks)
				}
			}
			var first, all time.Time
			var words []string
			for _, node := range slices.Sorted(maps.Keys(at)) {
				a := at[node]
				lats = append(lats, a.Sub(sent))
				words = append(words, fmt.Sprintf("%s +%v", node, a.Sub(sent).Round(time.Millisecond)))
				if first.IsZero() || a.Before(first) {
					first = a
				}
				all = later(all, a)
			}
			alls = append(alls, all.Sub(sent))
			t.Logf("edit %2d, %s: %s: applied by %s", i, e.task, e.what, strings.Join(words, ", "))
			if err := ed.begin(e.task, began, first, all); err != nil {
				t.Fatal(err)
			}
			time.Sleep(700*time.Millisecond + rand.N(time.Second))
		}
		end := time.Now()

		// Wait until the slots owed are recorded: a stop cancels the runs
		// in flight, and on a loaded machine a run may start late.
		owed := ed.owed(end)
		var recs map[string]map[int64]schedule.Record
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			recs = records(t, s, slices.Collect(maps.Keys(ed.eras)))
			if missing(owed, recs) == 0 || time.Now().After(deadline) {
				break
			}
		}
		f.stop()
		recs = records(t, s, slices.Collect(maps.Keys(ed.eras)))
		starts := map[string]map[int64][]followRun{}
		byNode := map[string]int{}
		for _, r := range f.snapshot() {
			if starts[r.job] == nil {
				starts[r.job] = map[int64][]followRun{}
			}
			starts[r.job][r.due.UnixNano()] = append(starts[r.job][r.due.UnixNano()], r)
			byNode[r.node]++
		}

		// No slot started twice.
		for job, byDue := range starts {
			for due, rs := range byDue {
				if len(rs) > 1 {
					t.Errorf("%s's slot %v started %d times: %v", job, time.Unix(0, due).UTC().Format(stamp), len(rs), rs)
				}
			}
		}
		// No slot lost.
		nOwed := 0
		for name, ds := range owed {
			for _, d := range ds {
				nOwed++
				if len(starts[name][d.UnixNano()]) == 0 {
					t.Errorf("%s's slot %v never started", name, d.UTC().Format(stamp))
				}
				switch r, ok := recs[name][d.UnixNano()]; {
				case !ok:
					t.Errorf("%s's slot %v has no record in the store", name, d.UTC().Format(stamp))
				case r.Status != schedule.Succeeded:
					t.Errorf("%s's slot %v is %v in the store, want Succeeded: %+v", name, d.UTC().Format(stamp), r.Status, r)
				}
			}
		}
		// No slot run against the definitions.
		var quiet time.Duration
		for name, es := range ed.eras {
			quiet += checkEras(t, name, es, starts[name], end)
		}

		slices.Sort(lats)
		slices.Sort(alls)
		ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
		t.Logf("%d edits, applied after they began by a follower in %v (median), %v (max), by all three in %v (median), %v (max); "+
			"%d slots owed; tasks paused or deleted for %v; runs by node %v", len(edits),
			ms(lats[len(lats)/2]), ms(lats[len(lats)-1]), ms(alls[len(alls)/2]), ms(alls[len(alls)-1]),
			nOwed, quiet.Round(time.Second), byNode)
		early := 0 // the run-all task's slots owed before every follower had loaded it
		for _, d := range owed["catchup"] {
			if d.Before(ed.eras["catchup"][0].applied) {
				early++
			}
		}
		t.Logf("the run-all task owed %d slots due before every follower had loaded it", early)
		if nOwed < 30 || quiet < 5*time.Second || early == 0 {
			t.Errorf("%d slots owed, %d of them early, tasks paused or deleted for %v: the test checks too little", nOwed, early, quiet)
		}
	})
}

// An editor edits the definitions, and keeps what they should be and the
// eras of each task.
type editor struct {
	defs  *sqlstore.Definitions
	model map[string]*defined // the definitions, as edited
	eras  map[string][]*era   // by task, oldest first
}

// A defined is a definition as the editor wrote it.
type defined struct {
	task    cron.Task
	version int64
}

// An era is a span of time in which one definition of a task was in
// force: from an edit of the task (or its creation) to the next.
type era struct {
	began    time.Time // the edit that began it was sent
	applied  time.Time // every follower had applied it
	ended    time.Time // the next edit of the task was sent; zero while in force
	lastOwed time.Time // the latest slot owed: when the first follower applied the next edit, less followMargin
	owedFrom time.Time // the first slot owed: applied, or just after Created for a run-all task
	spec     string    // "" if the task was paused or deleted: no slot of the era runs
	bid      string
	sched    schedule.Schedule // of spec
}

func (ed *editor) create(d cron.Task) error {
	v, err := ed.defs.Create(ctx, d)
	if err != nil {
		return err
	}
	got, _, err := ed.defs.Get(ctx, d.Name) // with its Created
	ed.model[d.Name] = &defined{got, v}
	return err
}

func (ed *editor) update(name string, change func(*cron.Task)) error {
	m := ed.model[name]
	d := m.task
	change(&d)
	v, err := ed.defs.Update(ctx, d, m.version)
	if err != nil {
		return err
	}
	m.task, m.version = d, v
	return nil
}

func (ed *editor) setPaused(name string, paused bool) error {
	if err := ed.defs.SetPaused(ctx, name, paused, schedule.PauseNote{}); err != nil {
		return err
	}
	m := ed.model[name]
	m.task.Paused = paused
	m.version++
	return nil
}

func (ed *editor) remove(name string) error {
	if err := ed.defs.Delete(ctx, name, ed.model[name].version); err != nil {
		return err
	}
	delete(ed.model, name)
	return nil
}

// digest returns what stateDigest says of a Table that runs the
// definitions, every task's job paused or scheduled as it says.
func (ed *editor) digest() string {
	if len(ed.model) == 0 {
		return "none"
	}
	var words []string
	for _, name := range slices.Sorted(maps.Keys(ed.model)) {
		d := ed.model[name].task
		state := "on"
		if d.Paused {
			state = "paused"
		}
		words = append(words, digestWord(name, d.Spec, d.BusinessID, state))
	}
	return strings.Join(words, ",")
}

// begin ends the era of task name in force, if any, and begins the next,
// for an edit of it sent at began, which the first follower applied at
// first and every follower by all.
func (ed *editor) begin(name string, began, first, all time.Time) error {
	es := ed.eras[name]
	if n := len(es); n > 0 {
		es[n-1].ended = began
		es[n-1].lastOwed = first.Add(-followMargin)
	}
	e := &era{began: began, applied: all, owedFrom: all}
	if m := ed.model[name]; m != nil && !m.task.Paused {
		sched, err := cron.Parse(m.task.Spec, time.UTC)
		if err != nil {
			return err
		}
		e.spec, e.bid, e.sched = m.task.Spec, m.task.BusinessID, sched
		if m.task.Misfire == "run-all" {
			e.owedFrom = m.task.Created.Add(1)
		}
	}
	ed.eras[name] = append(es, e)
	return nil
}

// owed returns the slots owed, by task, with end as the last slot owed of
// the eras in force.
func (ed *editor) owed(end time.Time) map[string][]time.Time {
	owed := map[string][]time.Time{}
	for name, es := range ed.eras {
		for _, e := range es {
			last := e.lastOwed
			if e.ended.IsZero() {
				last = end
			}
			if e.sched == nil {
				continue
			}
			for d := e.sched.Next(e.owedFrom.Add(-1)); !d.IsZero() && !d.After(last); d = e.sched.Next(d) {
				owed[name] = append(owed[name], d)
			}
		}
	}
	return owed
}

// holdWrites makes the writes of definitions wait until release: it holds
// the change marker's row (PostgreSQL), or the database's write lock
// (SQLite), in an open transaction.
func holdWrites(t *testing.T, b backend, dsn string) (release func()) {
	t.Helper()
	db := openDB(t, b.driver, dsn)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		tx, err := db.Begin()
		if err == nil {
			if _, err = tx.Exec("UPDATE " + tableFor(t) + "_tasks_version SET version = version"); err == nil {
				return func() { _ = tx.Rollback() }
			}
			_ = tx.Rollback()
		}
		if time.Now().After(deadline) {
			t.Fatalf("holding the writes of definitions: %v", err)
		}
	}
}

// records returns the records of jobs in s, by job and due time.
func records(t *testing.T, s *sqlstore.Store, jobs []string) map[string]map[int64]schedule.Record {
	t.Helper()
	m := map[string]map[int64]schedule.Record{}
	for _, job := range jobs {
		h, err := s.History(ctx, job, 1_000_000)
		if err != nil {
			t.Fatal(err)
		}
		m[job] = map[int64]schedule.Record{}
		for _, r := range h {
			m[job][r.Due.UnixNano()] = r
		}
	}
	return m
}

// missing counts the slots owed without a Succeeded record.
func missing(owed map[string][]time.Time, recs map[string]map[int64]schedule.Record) int {
	n := 0
	for name, ds := range owed {
		for _, d := range ds {
			if recs[name][d.UnixNano()].Status != schedule.Succeeded {
				n++
			}
		}
	}
	return n
}

// checkEras fails t for each run of the task name, from starts (its runs
// by due time), that its eras es forbid: a slot due before the task was
// created, or due between an era's applied plus followMargin and its end
// less followMargin, and not run by the era's definition, or run with
// another business id. It returns the time in which the eras forbade every
// slot, the task paused or deleted, up to end.
func checkEras(t *testing.T, name string, es []*era, starts map[int64][]followRun, end time.Time) time.Duration {
	t.Helper()
	for _, rs := range starts {
		if run := rs[0]; !run.due.After(es[0].began) {
			t.Errorf("%s's slot %v ran on %s, due before the task was created at %v",
				name, run.due.UTC().Format(stamp), run.node, es[0].began.UTC().Format(stamp))
		}
	}
	var quiet time.Duration
	for _, e := range es {
		from, to := e.applied.Add(followMargin), e.ended.Add(-followMargin)
		if e.ended.IsZero() {
			to = time.Unix(1<<40, 0)
		}
		for _, rs := range starts {
			run := rs[0]
			switch {
			case run.due.Before(from) || !run.due.Before(to):
			case e.sched == nil:
				t.Errorf("%s's slot %v ran on %s while the task was paused or deleted", name, run.due.UTC().Format(stamp), run.node)
			case !e.sched.Next(run.due.Add(-1)).Equal(run.due):
				t.Errorf("%s's slot %v ran on %s, not a time of its spec %q", name, run.due.UTC().Format(stamp), run.node, e.spec)
			case run.bid != e.bid:
				t.Errorf("%s's slot %v ran on %s with business id %q, want %q", name, run.due.UTC().Format(stamp), run.node, run.bid, e.bid)
			}
		}
		if q := earlier(to, end).Sub(from); e.sched == nil && q > 0 {
			quiet += q
		}
	}
	return quiet
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

const (
	// listenPoll is the poll interval of the followers in the tests of
	// listening: longer than any test lasts, so that only Changes can
	// explain an edit applied.
	listenPoll = time.Hour
	// listenWait is how long the tests wait for every follower to apply
	// an edit: far under listenPoll, so that an edit applied within it
	// was applied through Changes, and long for a loaded machine.
	listenWait = time.Minute
)

// A tracked is a cron.Table that follows the Definitions of a Store of its
// own, as a replica's does, with when it applied each version.
type tracked struct {
	s   *sqlstore.Store
	mu  sync.Mutex
	got []trackedApply // in the order applied
}

type trackedApply struct {
	version int64
	at      time.Time
}

// appliedAt returns when t first applied v or a later version.
func (t *tracked) appliedAt(v int64) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.got {
		if a.version >= v {
			return a.at, true
		}
	}
	return time.Time{}, false
}

// trackReplicas starts n Tables, each on a Store of its own on dsn, made
// with opts(i) for the i-th, following its Definitions at poll, and, on
// PostgreSQL, returns once each one's listener LISTENs. They stop, and
// their Stores close, when the test ends.
func trackReplicas(t *testing.T, b backend, dsn string, n int, poll time.Duration, opts func(i int) []sqlstore.Option) []*tracked {
	t.Helper()
	h := map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }}
	var rs []*tracked
	for i := range n {
		o := []sqlstore.Option{sqlstore.WithNode(fmt.Sprint("r", i))}
		if opts != nil {
			o = append(o, opts(i)...)
		}
		r := &tracked{s: newStore(t, b, dsn, o...)}
		tab := cron.NewTable(h, cron.WithStore(r.s), cron.WithLocation(time.UTC))
		require.NoError(t, tab.Follow(ctx, r.s.Definitions(), cron.WithPollInterval(poll),
			cron.WithApplyHandler(func(v int64, _ cron.Changes) {
				r.mu.Lock()
				r.got = append(r.got, trackedApply{v, time.Now()})
				r.mu.Unlock()
			})))
		t.Cleanup(func() { _ = tab.Stop(context.Background()) })
		rs = append(rs, r)
	}
	if b.dialect == sqlstore.PostgreSQL {
		db := openDB(t, b.driver, dsn)
		eventually(t, "every replica listens", func() bool { return len(listeners(t, db)) == n })
	}
	return rs
}

// listenChannel is the channel of the test's table.
func listenChannel(t testing.TB) string { return tableFor(t) + "_tasks_version" }

// listeners returns the backends that LISTEN on the test's channel, as
// pg_stat_activity shows them: their last statement is the LISTEN.
func listeners(t testing.TB, db *sql.DB) []int {
	t.Helper()
	rows, err := db.QueryContext(ctx, `SELECT pid FROM pg_stat_activity WHERE query = $1`, "LISTEN "+listenChannel(t))
	require.NoError(t, err)
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var pid int
		require.NoError(t, rows.Scan(&pid))
		pids = append(pids, pid)
	}
	require.NoError(t, rows.Err())
	return pids
}

// applied waits until every replica has applied version v or a later
// one, for wait at most, and returns the time each took from start; ok
// is false if one did not within wait.
func applied(rs []*tracked, v int64, start time.Time, wait time.Duration) (took []time.Duration, ok bool) {
	deadline := start.Add(wait)
	for _, r := range rs {
		for {
			at, done := r.appliedAt(v)
			if done {
				took = append(took, at.Sub(start))
				break
			}
			if time.Now().After(deadline) {
				return took, false
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return took, true
}

// An edit is a write of the definitions through a Store, as a person
// makes on the admin page.
type edit struct {
	what string
	do   func(d *sqlstore.Definitions) error
}

// someEdits are edits of every kind: tasks created, updated, paused,
// resumed and deleted, and a calendar created and named by a task.
func someEdits() []edit {
	yearly := cron.Task{Name: "yearly", Handler: "h", Spec: "0 0 1 1 *", Permanent: true}
	later := yearly
	later.Spec = "0 12 1 1 *"
	later.Calendars = []string{"off"}
	return []edit{
		{"create", func(d *sqlstore.Definitions) error { _, err := d.Create(ctx, yearly); return err }},
		{"create another", func(d *sqlstore.Definitions) error {
			t := yearly
			t.Name = "other"
			_, err := d.Create(ctx, t)
			return err
		}},
		{"create a calendar", func(d *sqlstore.Definitions) error {
			_, err := d.CreateCalendar(ctx, cron.Calendar{Name: "off", Zone: "UTC", Days: []string{"2030-01-01"}})
			return err
		}},
		{"update", func(d *sqlstore.Definitions) error { _, err := d.Update(ctx, later, 1); return err }},
		{"pause", func(d *sqlstore.Definitions) error {
			return d.SetPaused(ctx, "yearly", true, schedule.PauseNote{Note: "listen test"})
		}},
		{"resume", func(d *sqlstore.Definitions) error { return d.SetPaused(ctx, "yearly", false, schedule.PauseNote{}) }},
		{"delete", func(d *sqlstore.Definitions) error { return d.Delete(ctx, "other", 1) }},
	}
}

// followEdits makes someEdits through a Store of its own, one at a time,
// each once every replica applied the one before, and returns the first
// that a replica did not apply within wait, or "" if each was.
func followEdits(t *testing.T, b backend, dsn string, rs []*tracked, wait time.Duration) (missed string) {
	t.Helper()
	w := newStore(t, b, dsn, sqlstore.WithNode("writer")).Definitions()
	var all []time.Duration
	for _, e := range someEdits() {
		start := time.Now()
		require.NoError(t, e.do(w), e.what)
		v, err := w.Version(ctx)
		require.NoError(t, err)
		took, ok := applied(rs, v, start, wait)
		if !ok {
			return e.what
		}
		all = append(all, slices.Max(took))
	}
	t.Logf("%d edits, each applied by all %d replicas within %v (median %v)", len(all), len(rs), slices.Max(all), median(all))
	return ""
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// TestFollowersHearEdits starts three replicas, each a cron.Table
// following the Definitions of a Store of its own on one database, and
// edits the definitions through a fourth Store: every edit is applied by
// the three within listenWait. On PostgreSQL they poll once an hour, so
// only the notification of each write can explain it; on SQLite, which
// has none, they poll every 200ms.
//
// Without the notifications (a mutant), an edit is not applied within
// 2s on PostgreSQL.
func TestFollowersHearEdits(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		poll := listenPoll
		if b.dialect == sqlstore.SQLite {
			poll = 200 * time.Millisecond
		}
		dsn := b.dsn(t)
		rs := trackReplicas(t, b, dsn, 3, poll, nil)
		if missed := followEdits(t, b, dsn, rs, listenWait); missed != "" {
			t.Fatalf("edit %q not applied by every replica within %v", missed, listenWait)
		}
	})
	t.Run("mutant", func(t *testing.T) {
		needPostgres(t)
		t.Cleanup(sqlstore.SetMutant(sqlstore.Mutants["writes notify no one"])) // after the Stores close
		b := backends()[1]
		dsn := b.dsn(t)
		rs := trackReplicas(t, b, dsn, 3, listenPoll, nil)
		missed := followEdits(t, b, dsn, rs, 2*time.Second)
		t.Logf("without notifications, edit %q was not applied within 2s", missed)
		if missed == "" {
			t.Error("without notifications, every edit was applied within 2s: the test proves nothing")
		}
	})
}

// TestListenerLost kills the connection of every replica's listener
// (pg_terminate_backend), then edits the definitions at once, while the
// listeners connect again, over and over: every edit is applied by every
// replica within listenWait, though they poll once an hour. It goes on
// until 5 edits have committed while no replica listened (the first
// delay before a listener connects again is 50 to 100ms), and fails if
// that takes more than 50 rounds. Each Store logs each loss of its
// listener, and each connection made again.
//
// With listeners that do not read the version when they connect again (a
// mutant), an edit made while they were down is not applied within 2s.
func TestListenerLost(t *testing.T) {
	needPostgres(t)
	b := backends()[1]
	t.Run("replicas", func(t *testing.T) {
		logs, down, missed := killListeners(t, b, listenWait)
		if missed != 0 {
			t.Fatalf("edit %d not applied by every replica within %v", missed, listenWait)
		}
		t.Logf("%d edits committed while no replica listened", down)
		for i, h := range logs {
			var msgs []string
			for _, l := range h.got() {
				if m := l["msg"].(string); strings.Contains(m, "listening") {
					msgs = append(msgs, m)
					assert.Equal(t, fmt.Sprint("r", i), l["node"])
				}
			}
			require.GreaterOrEqual(t, len(msgs), 2, "replica %d logs the loss of its listener", i)
			for k, m := range msgs {
				want := []string{"sqlstore: not listening", "sqlstore: listening again"}[k%2]
				assert.Equal(t, want, m, "replica %d, line %d: one as each outage begins, one as it ends", i, k)
			}
		}
	})
	t.Run("mutant", func(t *testing.T) {
		t.Cleanup(sqlstore.SetMutant(sqlstore.Mutants["listeners do not catch up"]))
		_, _, missed := killListeners(t, b, 2*time.Second)
		t.Logf("without reading the version on connecting again, edit %d was not applied within 2s", missed)
		if missed == 0 {
			t.Error("without reading the version on connecting again, every edit was applied: the test proves nothing")
		}
	})
}

// killListeners is TestListenerLost: it returns the logs of the three
// replicas, the edits made while none listened, and the first edit (from
// 1) that a replica did not apply within wait, or 0.
func killListeners(t *testing.T, b backend, wait time.Duration) (logs []*logRecorder, down, missed int) {
	dsn := b.dsn(t)
	logs = []*logRecorder{{}, {}, {}}
	rs := trackReplicas(t, b, dsn, 3, listenPoll, func(i int) []sqlstore.Option {
		return []sqlstore.Option{sqlstore.WithLogger(slog.New(logs[i]))}
	})
	db := openDB(t, b.driver, dsn)
	w := newStore(t, b, dsn, sqlstore.WithNode("writer")).Definitions()
	task := cron.Task{Name: "yearly", Handler: "h", Spec: "0 0 1 1 *", Permanent: true}
	version := int64(0)
	for round := 1; down < 5; round++ {
		require.LessOrEqual(t, round, 50, "5 edits committed while no replica listened within 50 rounds")
		pids := listeners(t, db)
		for _, pid := range pids {
			_, err := db.ExecContext(ctx, `SELECT pg_terminate_backend($1)`, pid)
			require.NoError(t, err)
		}
		eventually(t, "the listeners' backends are gone", func() bool {
			var n int
			require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, pids).Scan(&n))
			return n == 0
		})
		start := time.Now()
		var err error
		if version == 0 {
			version, err = w.Create(ctx, task)
		} else {
			task.Spec = fmt.Sprintf("0 %d 1 1 *", round%24)
			version, err = w.Update(ctx, task, version)
		}
		require.NoError(t, err)
		if len(listeners(t, db)) == 0 {
			down++
		}
		v, err := w.Version(ctx)
		require.NoError(t, err)
		if _, ok := applied(rs, v, start, wait); !ok {
			return logs, down, round
		}
	}
	return logs, down, 0
}

// The Stores notify on the channel named as the change marker,
// {t}_tasks_version, with the version of the set as the payload, once a
// write commits: a write refused, or one that changes nothing, notifies
// nothing, and a Store on another table another channel. Close ends the
// listener, and a write through the Store still signals Changes.
func TestListenChannel(t *testing.T) {
	needPostgres(t)
	b := backends()[1]
	dsn := b.dsn(t)
	s := newStore(t, b, dsn)
	other := tableFor(t) + "_other"
	pdb := openDB(t, b.driver, dsn)
	require.NoError(t, sqlstore.Drop(ctx, pdb, sqlstore.PostgreSQL, other))
	o, err := sqlstore.New(ctx, pdb, sqlstore.PostgreSQL, sqlstore.WithTable(other))
	require.NoError(t, err)
	t.Cleanup(func() { _ = o.Close() })

	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "LISTEN "+listenChannel(t))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "SELECT 1") // not shown as a listener
	require.NoError(t, err)

	defs := s.Definitions()
	_, err = defs.Create(ctx, task("a"))
	require.NoError(t, err)
	_, err = defs.Create(ctx, task("a"))
	require.ErrorIs(t, err, sqlstore.ErrTaskExists)
	require.ErrorIs(t, defs.SetPaused(ctx, "b", true, schedule.PauseNote{}), cron.ErrUnknownTask)
	require.NoError(t, defs.SetPaused(ctx, "a", false, schedule.PauseNote{}), "resumed already: nothing written")
	_, err = o.Definitions().Create(ctx, task("o"))
	require.NoError(t, err)
	_, err = defs.Update(ctx, task("a"), 1)
	require.NoError(t, err)
	_, err = defs.Create(ctx, task("z"))
	require.NoError(t, err)

	wait, cancel := context.WithTimeout(ctx, listenWait)
	defer cancel()
	for _, want := range []string{"1", "2", "3"} {
		n, err := conn.WaitForNotification(wait)
		require.NoError(t, err)
		assert.Equal(t, listenChannel(t), n.Channel)
		assert.Equal(t, want, n.Payload)
	}

	ch := defs.Changes()
	changed(ch)
	eventually(t, "the Store listens", func() bool { return len(listeners(t, pdb)) == 1 })
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "twice")
	eventually(t, "the listener's connection is closed", func() bool { return len(listeners(t, pdb)) == 0 })
	_, err = defs.Create(ctx, task("c"))
	require.NoError(t, err)
	assert.True(t, changed(ch), "a write through the Store still signals")
}

// TestFollowLatency measures how soon an edit is applied by three
// replicas, each a cron.Table following the Definitions of a Store of its
// own at the default poll (1s), from the start of the write through a
// fourth Store to each replica's Apply of it: it makes
// SQLSTORE_FOLLOW_EDITS updates of a task's spec, one at a time, each 0
// to 50ms (on SQLite, which polls, 0 to 1s: a random point of the polls)
// after every replica applied the one before, and logs the median and the
// 99th percentile, for a replica and for all three. It runs only when
// SQLSTORE_FOLLOW_EDITS is set (200 for the figure of DESIGN.md):
//
//	cd schedule/sqlstore && SQLSTORE_FOLLOW_EDITS=200 go test -count=1 -run 'TestFollowLatency/PostgreSQL' -v . | grep 'follow latency'
func TestFollowLatency(t *testing.T) {
	edits, err := strconv.Atoi(os.Getenv("SQLSTORE_FOLLOW_EDITS"))
	if err != nil || edits < 1 {
		t.Skip("set SQLSTORE_FOLLOW_EDITS to the number of edits to time (200)")
	}
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		rs := trackReplicas(t, b, dsn, 3, 0, nil) // the default poll
		w := newStore(t, b, dsn, sqlstore.WithNode("writer")).Definitions()
		task := cron.Task{Name: "yearly", Handler: "h", Spec: "0 0 1 1 *", Permanent: true}
		version, err := w.Create(ctx, task)
		require.NoError(t, err)
		v, err := w.Version(ctx)
		require.NoError(t, err)
		_, ok := applied(rs, v, time.Now(), listenWait)
		require.True(t, ok, "the task created is applied by every replica within %v", listenWait)
		pause := 50 * time.Millisecond
		if b.dialect == sqlstore.SQLite {
			pause = time.Second
		}
		var one, all []time.Duration
		for i := range edits {
			time.Sleep(rand.N(pause))
			task.Spec = fmt.Sprintf("0 %d 1 1 *", i%24)
			start := time.Now()
			version, err = w.Update(ctx, task, version)
			require.NoError(t, err)
			v, err := w.Version(ctx)
			require.NoError(t, err)
			took, ok := applied(rs, v, start, listenWait)
			require.True(t, ok, "edit %d applied by every replica within %v", i, listenWait)
			one = append(one, took...)
			all = append(all, slices.Max(took))
		}
		t.Logf("follow latency on 3 replicas, %s, %d edits: all three p50 %v, p99 %v; a replica p50 %v, p99 %v",
			b.name, edits, quantile(all, 0.5), quantile(all, 0.99), quantile(one, 0.5), quantile(one, 0.99))
	})
}

// quantile returns the q-quantile of ds, the smallest of ds that is not
// less than a fraction q of them.
func quantile(ds []time.Duration, q float64) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(i, 0)].Round(100 * time.Microsecond)
}

// A listener that hears nothing checks its connection every while (LISTEN
// again, here every 50ms), and keeps it: after several checks, it still
// listens on the same backend, hears an edit, and has logged nothing.
func TestListenerIdle(t *testing.T) {
	needPostgres(t)
	const idle = 50 * time.Millisecond
	t.Cleanup(sqlstore.SetListenIdle(idle)) // after the Stores close
	b := backends()[1]
	dsn := b.dsn(t)
	var h logRecorder
	rs := trackReplicas(t, b, dsn, 1, listenPoll, func(int) []sqlstore.Option {
		return []sqlstore.Option{sqlstore.WithLogger(slog.New(&h))}
	})
	db := openDB(t, b.driver, dsn)
	pid := listeners(t, db)[0]
	var first time.Time
	require.NoError(t, db.QueryRowContext(ctx, `SELECT query_start FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&first))
	eventually(t, "the listener checked its connection 5 times", func() bool {
		var last time.Time
		require.NoError(t, db.QueryRowContext(ctx, `SELECT query_start FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&last))
		return last.Sub(first) >= 5*idle
	})
	assert.Equal(t, []int{pid}, listeners(t, db), "on the same backend")
	if missed := followEdits(t, b, dsn, rs, listenWait); missed != "" {
		t.Fatalf("edit %q not applied within %v", missed, listenWait)
	}
	assert.Empty(t, h.got(), "nothing logged")
}

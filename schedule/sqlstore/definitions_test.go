package sqlstore_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// task returns a valid definition named name.
func task(name string) cron.Task {
	return cron.Task{Name: name, Handler: "h", Spec: "*/5 * * * *", Permanent: true}
}

// fullTask returns a definition with every field set.
func fullTask(name string) cron.Task {
	paris := time.FixedZone("CET", 3600)
	return cron.Task{
		Name: name, Handler: "mail", BusinessID: "b-1", Spec: "0 9 * * 1-5", Zone: "Europe/Paris",
		Start: time.Date(2030, 1, 2, 3, 4, 5, 123456789, paris), End: time.Date(2031, 6, 7, 8, 9, 10, 999, paris),
		Once: true, Overlap: "buffer-one", Misfire: "run-all",
		Timeout:       cron.Duration(90 * time.Second),
		Retry:         cron.Retry{Attempts: 3, Backoff: cron.Duration(1500 * time.Millisecond)},
		CatchUpWindow: cron.Duration(2 * time.Hour),
		Created:       time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC), // the store sets it
	}
}

// changed reports whether a change is signalled on c, and consumes it.
func changed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestDefinitions(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		s := newStore(t, b, dsn)
		defs := s.Definitions()
		assert.Same(t, defs, s.Definitions(), "one Definitions a Store")
		v, err := defs.Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(0), v)
		tasks, v, err := defs.Tasks(ctx)
		require.NoError(t, err)
		assert.Empty(t, tasks)
		assert.Equal(t, int64(0), v)
		assert.False(t, changed(defs.Changes()))

		full := fullTask("report 名前")
		before := time.Now().Truncate(time.Microsecond)
		v, err = defs.Create(ctx, full)
		after := time.Now()
		require.NoError(t, err)
		assert.Equal(t, int64(1), v)
		assert.True(t, changed(defs.Changes()), "a write is signalled")
		assert.False(t, changed(defs.Changes()), "once")

		got, v, err := defs.Get(ctx, full.Name)
		require.NoError(t, err)
		assert.Equal(t, int64(1), v)
		assert.False(t, got.Created.Before(before) || got.Created.After(after), "Created %v is the time of Create", got.Created)
		want := full
		want.Start = full.Start.UTC().Truncate(time.Microsecond)
		want.End = full.End.UTC().Truncate(time.Microsecond)
		want.Created = got.Created
		assert.Equal(t, want, got, "read back in UTC, to the microsecond")
		created := got.Created

		_, err = defs.Create(ctx, task(full.Name))
		require.ErrorIs(t, err, sqlstore.ErrTaskExists)
		assert.ErrorContains(t, err, full.Name)
		assert.False(t, changed(defs.Changes()), "a refused write is not signalled")

		upd := full
		upd.Spec, upd.Retry, upd.Created = "@every 1m", cron.Retry{}, time.Time{}
		_, err = defs.Update(ctx, upd, 0)
		require.ErrorIs(t, err, sqlstore.ErrStale)
		assert.ErrorContains(t, err, "at version 1, not 0")
		v, err = defs.Update(ctx, upd, 1)
		require.NoError(t, err)
		assert.Equal(t, int64(2), v)
		assert.True(t, changed(defs.Changes()))
		got, v, err = defs.Get(ctx, full.Name)
		require.NoError(t, err)
		assert.Equal(t, int64(2), v)
		assert.Equal(t, "@every 1m", got.Spec)
		assert.Equal(t, cron.Retry{}, got.Retry)
		assert.Equal(t, created, got.Created, "Update keeps Created")
		_, err = defs.Update(ctx, upd, 1)
		require.ErrorIs(t, err, sqlstore.ErrStale, "the same version twice")
		_, err = defs.Update(ctx, task("nobody"), 1)
		require.ErrorIs(t, err, cron.ErrUnknownTask)

		require.NoError(t, defs.SetPaused(ctx, full.Name, true, schedule.PauseNote{}))
		got, v, err = defs.Get(ctx, full.Name)
		require.NoError(t, err)
		assert.True(t, got.Paused)
		assert.Equal(t, int64(3), v, "pausing raises the version")
		assert.True(t, changed(defs.Changes()))
		require.NoError(t, defs.SetPaused(ctx, full.Name, true, schedule.PauseNote{}), "paused again")
		_, v, err = defs.Get(ctx, full.Name)
		require.NoError(t, err)
		assert.Equal(t, int64(3), v, "nothing changed, nothing written")
		assert.False(t, changed(defs.Changes()))
		until := time.Date(2031, 1, 2, 3, 4, 5, 6000, time.UTC)
		require.NoError(t, defs.SetPaused(ctx, full.Name, true, schedule.PauseNote{Note: "db migration <ana>", Until: until}))
		got, v, err = defs.Get(ctx, full.Name)
		require.NoError(t, err)
		assert.True(t, got.Paused)
		assert.Equal(t, "db migration <ana>", got.PauseNote)
		assert.True(t, until.Equal(got.PausedUntil), "%v", got.PausedUntil)
		assert.Equal(t, int64(4), v, "a new note is a change")
		require.NoError(t, defs.SetPaused(ctx, full.Name, true, schedule.PauseNote{Note: "db migration <ana>", Until: until}))
		_, v, err = defs.Get(ctx, full.Name)
		require.NoError(t, err)
		assert.Equal(t, int64(4), v, "the same note: nothing written")
		var refused *cron.TaskError
		require.ErrorAs(t, defs.SetPaused(ctx, full.Name, true, schedule.PauseNote{Note: strings.Repeat("x", cron.MaxPauseNoteLen+1)}), &refused)
		assert.Equal(t, "pauseNote", refused.Field)
		require.NoError(t, defs.SetPaused(ctx, full.Name, false, schedule.PauseNote{Note: "ignored"}))
		got, _, err = defs.Get(ctx, full.Name)
		require.NoError(t, err)
		assert.False(t, got.Paused)
		assert.Empty(t, got.PauseNote, "a Resume drops the note")
		assert.True(t, got.PausedUntil.IsZero())

		paused := full
		paused.Name, paused.Paused, paused.PauseNote, paused.PausedUntil, paused.PauseOnFailures = "paused first", true, "not yet", until, 5
		_, err = defs.Create(ctx, paused)
		require.NoError(t, err)
		got, _, err = defs.Get(ctx, paused.Name)
		require.NoError(t, err)
		assert.Equal(t, "not yet", got.PauseNote)
		assert.True(t, until.Equal(got.PausedUntil))
		assert.Equal(t, 5, got.PauseOnFailures)
		require.NoError(t, defs.Delete(ctx, paused.Name, 1))

		err = defs.SetPaused(ctx, "nobody", true, schedule.PauseNote{})
		require.ErrorIs(t, err, cron.ErrUnknownTask)
		assert.ErrorContains(t, err, "nobody")

		_, err = defs.Create(ctx, task("a first"))
		require.NoError(t, err)
		list, err := defs.List(ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
		assert.Equal(t, "a first", list[0].Task.Name, "sorted by name")
		assert.Equal(t, int64(1), list[0].Version)
		assert.Equal(t, full.Name, list[1].Task.Name)
		assert.Equal(t, int64(5), list[1].Version)
		assert.False(t, list[1].Updated.Before(list[1].Task.Created))

		tasks, v, err = defs.Tasks(ctx)
		require.NoError(t, err)
		require.Len(t, tasks, 2)
		assert.Equal(t, list[0].Task, tasks[0])
		assert.Equal(t, list[1].Task, tasks[1])
		// Writes: 3 Creates, a Delete, an Update, 3 SetPaused that changed
		// something.
		assert.Equal(t, int64(8), v)
		vv, err := defs.Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, v, vv)

		require.ErrorIs(t, defs.Delete(ctx, full.Name, 4), sqlstore.ErrStale)
		require.NoError(t, defs.Delete(ctx, full.Name, 5))
		_, _, err = defs.Get(ctx, full.Name)
		require.ErrorIs(t, err, cron.ErrUnknownTask)
		require.ErrorIs(t, defs.Delete(ctx, full.Name, 5), cron.ErrUnknownTask)
		v, err = defs.Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(9), v)

		// Another Store on the database sees the definitions.
		other := newStore(t, b, dsn).Definitions()
		tasks, v, err = other.Tasks(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(9), v)
		require.Len(t, tasks, 1)
		assert.Equal(t, "a first", tasks[0].Name)
	})
}

func TestDefinitionsNotMadeByNew(t *testing.T) {
	assert.PanicsWithValue(t, "sqlstore: Store not made by New", func() { (&sqlstore.Store{}).Definitions() })
	var d sqlstore.Definitions
	assert.PanicsWithValue(t, "sqlstore: Store not made by New", func() { _, _ = d.Version(ctx) })
}

// TestDefinitionsValidate saves definitions that cannot run, or that the
// store cannot hold: each gets a *cron.TaskError naming the field, and
// nothing is written.
func TestDefinitionsValidate(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		defs := newStore(t, b, b.dsn(t)).Definitions()
		_, err := defs.Create(ctx, task("ok"))
		require.NoError(t, err)
		with := func(f func(*cron.Task)) cron.Task {
			tk := task("ok")
			f(&tk)
			return tk
		}
		for _, c := range []struct {
			name  string
			task  cron.Task
			field string
		}{
			{"empty name", with(func(t *cron.Task) { t.Name = "" }), "name"},
			{"long name", with(func(t *cron.Task) { t.Name = string(make([]byte, cron.MaxNameLen+1)) }), "name"},
			{"NUL in name", with(func(t *cron.Task) { t.Name = "o\x00k" }), "name"},
			{"invalid UTF-8 in name", with(func(t *cron.Task) { t.Name = "ok\xff" }), "name"},
			{"no handler", with(func(t *cron.Task) { t.Handler = "" }), "handler"},
			{"invalid UTF-8 in handler", with(func(t *cron.Task) { t.Handler = "h\xff" }), "handler"},
			{"NUL in business ID", with(func(t *cron.Task) { t.BusinessID = "\x00" }), "businessId"},
			{"bad spec", with(func(t *cron.Task) { t.Spec = "every day" }), "spec"},
			{"unknown zone", with(func(t *cron.Task) { t.Zone = "Mars/Olympus" }), "zone"},
			{"no end", with(func(t *cron.Task) { t.Permanent = false }), "end"},
			{"end before start", with(func(t *cron.Task) {
				t.Permanent, t.Start, t.End = false, time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			}), "end"},
			// A start in year 10000 is refused by Validate first: its spec
			// has no time in the next 100 years.
			{"start in year 0", with(func(t *cron.Task) { t.Start = time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC) }), "start"},
			{"unknown overlap", with(func(t *cron.Task) { t.Overlap = "sometimes" }), "overlap"},
			{"unknown misfire", with(func(t *cron.Task) { t.Misfire = "never" }), "misfire"},
		} {
			t.Run(c.name, func(t *testing.T) {
				var te *cron.TaskError
				created := c.task
				if created.Name == "ok" {
					created.Name = "new"
				}
				_, err := defs.Create(ctx, created)
				require.ErrorAs(t, err, &te)
				assert.Equal(t, c.field, te.Field, "%v", err)
				if c.task.Name == "ok" {
					_, err = defs.Update(ctx, c.task, 1)
					require.ErrorAs(t, err, &te)
					assert.Equal(t, c.field, te.Field, "%v", err)
				}
			})
		}
		list, err := defs.List(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1, "nothing refused was saved")
		assert.Equal(t, task("ok").Spec, list[0].Task.Spec)
		assert.Equal(t, int64(1), list[0].Version)
		v, err := defs.Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), v)
	})
}

// TestDefinitionsStaleWrites has writers on their own pools, as replicas,
// update one definition at the version they all read: exactly one wins,
// the others get ErrStale, each round; then they delete it at once: one
// deletes it, the others find it gone.
func TestDefinitionsStaleWrites(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const n = 6
		dsn := b.dsn(t)
		ws := make([]*sqlstore.Definitions, n)
		for i := range ws {
			ws[i] = newStore(t, b, dsn).Definitions()
		}
		v, err := ws[0].Create(ctx, task("t"))
		require.NoError(t, err)
		for round := range 5 {
			var (
				wg     sync.WaitGroup
				wins   atomic.Int32
				mu     sync.Mutex
				winner string
				won    int64
			)
			start := make(chan struct{})
			for i, w := range ws {
				wg.Go(func() {
					tk := task("t")
					tk.BusinessID = fmt.Sprintf("%d-%d", round, i)
					<-start
					nv, err := w.Update(ctx, tk, v)
					if err != nil {
						assert.ErrorIs(t, err, sqlstore.ErrStale)
						return
					}
					wins.Add(1)
					mu.Lock()
					winner, won = tk.BusinessID, nv
					mu.Unlock()
				})
			}
			close(start)
			wg.Wait()
			require.Equal(t, int32(1), wins.Load(), "round %d: one write wins", round)
			got, gv, err := ws[0].Get(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, winner, got.BusinessID, "round %d: the winner's definition", round)
			assert.Equal(t, v+1, gv)
			assert.Equal(t, won, gv)
			v = gv
		}

		var wg sync.WaitGroup
		var wins atomic.Int32
		for _, w := range ws {
			wg.Go(func() {
				switch err := w.Delete(ctx, "t", v); {
				case err == nil:
					wins.Add(1)
				default:
					assert.ErrorIs(t, err, cron.ErrUnknownTask)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int32(1), wins.Load(), "one Delete deletes")
	})
}

// TestDefinitionsVersionNeverMissesAChange has writers on their own pools
// edit definitions at once while a follower polls Version, and reads Tasks
// only when it changed, as a cron.Table following the Definitions does.
// Once the writers are done, the follower's last look must hold every
// change, and the version must count every write: a marker read and then
// written (two writers reading N and both writing N+1), or a maximum of
// the definitions' update times (a write committed after another that
// began later), loses changes.
func TestDefinitionsVersionNeverMissesAChange(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const writers, writes = 4, 30
		dsn := b.dsn(t)
		follower := newStore(t, b, dsn).Definitions()
		ws := make([]*sqlstore.Definitions, writers)
		for i := range ws {
			ws[i] = newStore(t, b, dsn).Definitions()
			_, err := ws[i].Create(ctx, task(fmt.Sprint("w", i)))
			require.NoError(t, err)
		}

		var (
			held    map[string]string // BusinessID by name, as the follower last read them
			heldV   int64             = -1
			looks   int
			stopped atomic.Bool
		)
		look := func() error {
			v, err := follower.Version(ctx)
			if err != nil || v == heldV {
				return err
			}
			tasks, tv, err := follower.Tasks(ctx)
			if err != nil {
				return err
			}
			held = map[string]string{}
			for _, tk := range tasks {
				held[tk.Name] = tk.BusinessID
			}
			heldV = tv
			looks++
			return nil
		}
		var fwg sync.WaitGroup
		fwg.Go(func() {
			for !stopped.Load() {
				if err := look(); err != nil {
					t.Error(err)
					return
				}
			}
		})

		var wg sync.WaitGroup
		for i, w := range ws {
			wg.Go(func() {
				name := fmt.Sprint("w", i)
				v := int64(1)
				for k := range writes {
					tk := task(name)
					tk.BusinessID = fmt.Sprint(k)
					var err error
					if v, err = w.Update(ctx, tk, v); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		stopped.Store(true)
		fwg.Wait()
		require.NoError(t, look(), "the look after the writes")

		v, err := follower.Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(writers*(1+writes)), v, "every write counted once")
		list, err := follower.List(ctx)
		require.NoError(t, err)
		want := map[string]string{}
		for _, d := range list {
			want[d.Task.Name] = d.Task.BusinessID
		}
		assert.Equal(t, want, held, "the follower holds every change (it looked %d times)", looks)
	})
}

// TestDefinitionsVersionWithASlowWriter makes, on PostgreSQL, a write
// that began first commit after one that began later: a transaction holds
// the row of definition a while a write of a waits for it, and a write of
// b comes. A follower that looks in between, then finds the same version
// after both committed, must already hold both changes; and the version
// counts both. A maximum of the update times misses a's change (its time
// is the earlier); a marker read then written counts one write of two.
// (SQLite runs one writer at a time: no write can overtake another.)
func TestDefinitionsVersionWithASlowWriter(t *testing.T) {
	b := backends()[1]
	dsn := b.dsn(t)
	defs := newStore(t, b, dsn).Definitions()
	other := newStore(t, b, dsn).Definitions()
	for _, name := range []string{"a", "b"} {
		_, err := defs.Create(ctx, task(name))
		require.NoError(t, err)
	}
	tb := tableFor(t)
	db := openDB(t, b.driver, dsn)
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	_, err = tx.Exec("SELECT 1 FROM " + tb + "_tasks WHERE name = 'a' FOR UPDATE")
	require.NoError(t, err)

	update := func(d *sqlstore.Definitions, name string) <-chan error {
		done := make(chan error, 1)
		go func() {
			tk := task(name)
			tk.BusinessID = "changed"
			_, err := d.Update(ctx, tk, 1)
			done <- err
		}()
		return done
	}
	aDone := update(defs, "a")
	waitForLock(t, db, "UPDATE "+tb+"_tasks SET")
	bDone := update(other, "b")
	// b's write either waits for a's, or commits first.
	var bErr error
	bReturned := false
	for deadline := time.Now().Add(10 * time.Second); !bReturned; {
		select {
		case bErr = <-bDone:
			bReturned = true
			continue
		default:
		}
		var waiting int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND starts_with(query, 'UPDATE "+tb+"_tasks_version')").Scan(&waiting))
		if waiting > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "b's write neither waits nor returns")
		time.Sleep(5 * time.Millisecond)
	}

	tasks, v, err := defs.Tasks(ctx)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.NoError(t, <-aDone)
	if !bReturned {
		bErr = <-bDone
	}
	require.NoError(t, bErr)

	after, err := defs.Version(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(4), after, "two creates and two updates")
	if after == v {
		for _, tk := range tasks {
			assert.Equal(t, "changed", tk.BusinessID, "the version did not change after the follower's look, which lacks the change of %s", tk.Name)
		}
	}
}

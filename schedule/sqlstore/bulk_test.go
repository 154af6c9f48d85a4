package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// manyTasks returns n valid definitions, "<prefix>00000" and on, with a
// few specs and zones.
func manyTasks(prefix string, n int) []cron.Task {
	specs := []string{"*/5 * * * *", "0 9 * * 1-5", "30 2 * * *", "@every 90m", "0 0 1 * *"}
	zones := []string{"", "UTC", "Europe/Paris", "America/New_York"}
	ts := make([]cron.Task, n)
	for i := range ts {
		ts[i] = cron.Task{Name: fmt.Sprintf("%s%05d", prefix, i), Handler: "h", BusinessID: fmt.Sprint("b-", i%7),
			Spec: specs[i%len(specs)], Zone: zones[i%len(zones)], Permanent: true}
	}
	return ts
}

// bulkError returns the *BulkError in err, failing t if there is none.
func bulkError(t *testing.T, err error) *sqlstore.BulkError {
	t.Helper()
	var be *sqlstore.BulkError
	require.ErrorAs(t, err, &be)
	return be
}

// nothingWritten checks that defs holds the definitions want and is at
// version v, and that no write was signalled.
func nothingWritten(t *testing.T, defs *sqlstore.Definitions, v int64, want int) {
	t.Helper()
	got, err := defs.Version(ctx)
	require.NoError(t, err)
	assert.Equal(t, v, got, "the version did not move")
	list, err := defs.List(ctx)
	require.NoError(t, err)
	assert.Len(t, list, want)
	assert.False(t, changed(defs.Changes()), "no write signalled")
}

func TestCreateMany(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t))
		defs := s.Definitions()
		require.NoError(t, defs.CreateMany(ctx, nil), "none")
		nothingWritten(t, defs, 0, 0)

		// One bad definition among 10,000 refuses them all, naming it.
		tasks := manyTasks("task-", 10_000)
		tasks[6123].Spec = "61 * * * *"
		err := defs.CreateMany(ctx, tasks)
		be := bulkError(t, err)
		assert.Equal(t, 6123, be.Index)
		assert.Equal(t, "task-06123", be.Name)
		var te *cron.TaskError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "spec", te.Field)
		assert.ErrorContains(t, err, `sqlstore: task "task-06123" at index 6123: spec: `)
		nothingWritten(t, defs, 0, 0)

		// Fixed, they are created, in one write and a statement a thousand.
		tasks[6123].Spec = "1 * * * *"
		before := s.Stats().Statements
		start := time.Now().Truncate(time.Microsecond)
		require.NoError(t, defs.CreateMany(ctx, tasks))
		sent := s.Stats().Statements - before
		assert.LessOrEqual(t, sent, uint64(10+4), "a statement a thousand definitions: begin, bump, 10 inserts, commit")
		assert.True(t, changed(defs.Changes()), "signalled")
		v, err := defs.Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), v, "one write")
		list, err := defs.List(ctx)
		require.NoError(t, err)
		require.Len(t, list, len(tasks))
		for i, def := range list {
			want := tasks[i]
			want.Created = def.Task.Created
			require.Equal(t, want, def.Task)
			require.Equal(t, int64(1), def.Version)
			require.False(t, def.Task.Created.Before(start), "Created is the time of the write")
		}

		// A name defined already refuses the lot, naming it.
		more := manyTasks("more-", 2500)
		more[1700] = tasks[42]
		err = defs.CreateMany(ctx, more)
		be = bulkError(t, err)
		assert.Equal(t, 1700, be.Index)
		assert.Equal(t, "task-00042", be.Name)
		require.ErrorIs(t, err, sqlstore.ErrTaskExists)
		assert.EqualError(t, err, `sqlstore: task "task-00042" at index 1700: sqlstore: task already defined`)
		nothingWritten(t, defs, 1, len(tasks))
		_, _, err = defs.Get(ctx, "more-00000")
		require.ErrorIs(t, err, cron.ErrUnknownTask, "the first thousand, inserted before, rolled back")
	})
}

func TestCreateManyRefusals(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t), sqlstore.WithHandlers("h"))
		defs := s.Definitions()
		_, err := defs.CreateCalendar(ctx, cron.Calendar{Name: "holidays", Zone: "UTC", Days: []string{"2030-12-25"}})
		require.NoError(t, err)
		changed(defs.Changes())

		tasks := manyTasks("t", 20)
		tasks[3].Name = tasks[1].Name
		err = defs.CreateMany(ctx, tasks)
		be := bulkError(t, err)
		assert.Equal(t, 3, be.Index, "the second of the two")
		require.ErrorIs(t, err, sqlstore.ErrTaskExists)
		assert.ErrorContains(t, err, `task "t00001" at index 3: sqlstore: task already defined, at index 1`)

		// Several refusals: each named, in index order, the first found
		// by errors.As.
		tasks = manyTasks("t", 20)
		tasks[2].Handler = "other"
		tasks[5].End = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		tasks[5].Permanent = false
		tasks[9].Name = "bad\x00name"
		err = defs.CreateMany(ctx, tasks)
		be = bulkError(t, err)
		assert.Equal(t, 2, be.Index)
		lines := strings.Split(err.Error(), "\n")
		require.Len(t, lines, 3, err.Error())
		assert.Equal(t, `sqlstore: task "t00002" at index 2: handler: no handler "other"`, lines[0])
		assert.Contains(t, lines[1], `task "t00005" at index 5: end: `)
		assert.Contains(t, lines[2], `at index 9: name: `)

		// At most MaxBulkErrors.
		tasks = manyTasks("t", 50)
		for i := range tasks {
			tasks[i].Spec = "nope"
		}
		err = defs.CreateMany(ctx, tasks)
		assert.Len(t, strings.Split(err.Error(), "\n"), sqlstore.MaxBulkErrors)

		// A calendar that is not defined.
		tasks = manyTasks("t", 20)
		tasks[4].Calendars = []string{"holidays"}
		tasks[7].Calendars = []string{"holidays", "strikes"}
		err = defs.CreateMany(ctx, tasks)
		be = bulkError(t, err)
		assert.Equal(t, 7, be.Index)
		require.ErrorIs(t, err, cron.ErrUnknownCalendar)
		assert.EqualError(t, err, `sqlstore: task "t00007" at index 7: calendars: cron: unknown calendar "strikes"`)
		nothingWritten(t, defs, 1, 0)

		tasks[7].Calendars = tasks[4].Calendars
		require.NoError(t, defs.CreateMany(ctx, tasks))
		got, _, err := defs.Get(ctx, "t00007")
		require.NoError(t, err)
		assert.Equal(t, []string{"holidays"}, got.Calendars)
		err = defs.DeleteCalendar(ctx, "holidays", 1)
		require.ErrorIs(t, err, sqlstore.ErrCalendarInUse, "named by tasks created in bulk")
	})
}

func TestImport(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t))
		defs := s.Definitions()
		for _, tk := range manyTasks("t", 5) {
			_, err := defs.Create(ctx, tk)
			require.NoError(t, err)
		}
		_, err := defs.Update(ctx, manyTasks("t", 5)[4], 1) // t00004 at version 2
		require.NoError(t, err)
		require.NoError(t, defs.SetPaused(ctx, "t00003", true, schedule.PauseNote{Note: "by hand"}))
		_, err = s.Since(ctx, "t00000", time.Unix(1e9, 0))
		require.NoError(t, err)
		old, err := defs.List(ctx)
		require.NoError(t, err)
		v0, err := defs.Version(ctx)
		require.NoError(t, err)
		changed(defs.Changes())

		// The file: t00001 and t00004 edited, t00002 as it is, t00003
		// not paused, two new; t00000 not in it.
		file := manyTasks("t", 7)[1:]
		file[0].Spec = "0 12 * * *"
		file[3].Timeout = cron.Duration(time.Minute)
		res, err := defs.Import(ctx, file)
		require.NoError(t, err)
		assert.Equal(t, sqlstore.ImportResult{Created: 2, Replaced: 3, Unchanged: 1}, counts(res))
		assert.Equal(t, []string{"t00005", "t00006"}, res.CreatedNames)
		assert.Equal(t, []string{"t00001", "t00003", "t00004"}, res.ReplacedNames)
		assert.True(t, changed(defs.Changes()))
		v, err := defs.Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, v0+1, v, "one write")
		list, err := defs.List(ctx)
		require.NoError(t, err)
		require.Len(t, list, 7, "t00000 kept")
		wantVersion := map[string]int64{"t00000": 1, "t00001": 2, "t00002": 1, "t00003": 3, "t00004": 3, "t00005": 1, "t00006": 1}
		for i, def := range list {
			assert.Equal(t, wantVersion[def.Task.Name], def.Version, def.Task.Name)
			if i < 5 {
				assert.Equal(t, old[i].Task.Created, def.Task.Created, "%s keeps its Created", def.Task.Name)
			}
			if i > 0 {
				want := file[i-1]
				want.Created = def.Task.Created
				assert.Equal(t, want, def.Task)
			}
		}
		assert.Equal(t, old[2].Updated, list[2].Updated, "unchanged, not written")

		// The same again writes nothing.
		res, err = defs.Import(ctx, file)
		require.NoError(t, err)
		assert.Equal(t, sqlstore.ImportResult{Unchanged: 6}, counts(res))
		nothingWritten(t, defs, v, 7)

		// A bad definition refuses the lot; a name defined already does not.
		bad := append(manyTasks("n", 3), file...)
		bad[8].Zone = "Mars/Olympus"
		res, err = defs.Import(ctx, bad)
		be := bulkError(t, err)
		assert.Equal(t, 8, be.Index)
		var te *cron.TaskError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, "zone", te.Field)
		assert.Equal(t, sqlstore.ImportResult{}, counts(res))
		nothingWritten(t, defs, v, 7)

		// DeleteOthers: t00000 goes, with since when it was scheduled.
		res, err = defs.Import(ctx, file, sqlstore.DeleteOthers())
		require.NoError(t, err)
		assert.Equal(t, sqlstore.ImportResult{Unchanged: 6, Deleted: 1}, counts(res))
		assert.Equal(t, []string{"t00000"}, res.DeletedNames)
		_, _, err = defs.Get(ctx, "t00000")
		require.ErrorIs(t, err, cron.ErrUnknownTask)
		since, err := s.Since(ctx, "t00000", time.Unix(2e9, 0))
		require.NoError(t, err)
		assert.Equal(t, time.Unix(2e9, 0), since, "since when it was scheduled deleted with the task")
		v, err = defs.Version(ctx)
		require.NoError(t, err)

		// 3,000 with DeleteOthers: more than a statement of each kind.
		res, err = defs.Import(ctx, manyTasks("x", 3000), sqlstore.DeleteOthers())
		require.NoError(t, err)
		assert.Equal(t, sqlstore.ImportResult{Created: 3000, Deleted: 6}, counts(res))
		nv, err := defs.Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, v+1, nv)
		big := manyTasks("x", 3000)
		for i := range big {
			big[i].BusinessID = "edited"
		}
		res, err = defs.Import(ctx, big[:2500])
		require.NoError(t, err)
		assert.Equal(t, sqlstore.ImportResult{Replaced: 2500}, counts(res))
		list, err = defs.List(ctx)
		require.NoError(t, err)
		require.Len(t, list, 3000)
		assert.Equal(t, "edited", list[2499].Task.BusinessID)
		assert.Equal(t, int64(2), list[2499].Version)
		assert.Equal(t, "b-1", list[2500].Task.BusinessID, "not in the file, kept")

		res, err = defs.Import(ctx, nil, sqlstore.DeleteOthers())
		require.NoError(t, err)
		assert.Equal(t, sqlstore.ImportResult{Deleted: 3000}, counts(res), "an empty file deletes them all")
	})
}

// TestBulkFollowed checks that the Tables following the definitions load
// what CreateMany and Import write: one on the Store that wrote
// (Changes), one on another Store (Version).
func TestBulkFollowed(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		stores := []*sqlstore.Store{newStore(t, b, dsn), newStore(t, b, dsn)}
		h := func(context.Context, string, schedule.Run) error { return nil }
		var tabs []*cron.Table
		for i, s := range stores {
			poll := time.Hour // the writer's Table hears Changes
			if i == 1 {
				poll = 200 * time.Millisecond
			}
			tab := cron.NewTable(map[string]cron.Handler{"h": h}, cron.WithStore(s), cron.WithLocation(time.UTC))
			require.NoError(t, tab.Follow(ctx, s.Definitions(), cron.WithPollInterval(poll)))
			t.Cleanup(func() { _ = tab.Stop(context.Background()) })
			tabs = append(tabs, tab)
		}
		waitTasks := func(what string, ok func([]cron.TaskState) bool) {
			t.Helper()
			deadline := time.Now().Add(15 * time.Second)
			for _, tab := range tabs {
				for !ok(tab.Tasks()) {
					if time.Now().After(deadline) {
						t.Fatalf("%s: not seen by a Table", what)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
		defs := stores[0].Definitions()
		tasks := manyTasks("t", 1500)
		require.NoError(t, defs.CreateMany(ctx, tasks))
		waitTasks("created", func(ts []cron.TaskState) bool { return len(ts) == 1500 })

		tasks[1400].Spec = "0 12 * * *"
		res, err := defs.Import(ctx, tasks[1000:], sqlstore.DeleteOthers())
		require.NoError(t, err)
		assert.Equal(t, sqlstore.ImportResult{Replaced: 1, Unchanged: 499, Deleted: 1000}, counts(res))
		waitTasks("imported", func(ts []cron.TaskState) bool {
			return len(ts) == 500 && ts[400].Task.Name == "t01400" && ts[400].Task.Spec == "0 12 * * *"
		})
	})
}

func TestBulkErrorMessage(t *testing.T) {
	te := &cron.TaskError{Task: "report", Field: "spec", Err: errors.New("bad")}
	err := error(&sqlstore.BulkError{Index: 3, Name: "report", Err: te})
	assert.EqualError(t, err, `sqlstore: task "report" at index 3: spec: bad`)
	assert.ErrorIs(t, err, te.Err)
	long := strings.Repeat("é", 100)
	err = &sqlstore.BulkError{Index: 0, Name: long, Err: sqlstore.ErrTaskExists}
	assert.Equal(t, `sqlstore: task "`+strings.Repeat("é", 32)+`..." at index 0: sqlstore: task already defined`, err.Error())
}

// BenchmarkCreateMany measures the creation of definitions, one at a time
// by Create (the baseline) and in bulk by CreateMany, on SQLite and
// PostgreSQL: ns/task is the time a definition, whose ratio between the
// two is what bulk saves. Each op creates n definitions in a table that
// holds none; the deletion between ops is not timed.
func BenchmarkCreateMany(b *testing.B) {
	for _, be := range backends() {
		for _, c := range []struct {
			name string
			n    int
			bulk bool
		}{{"Create/n=1000", 1000, false}, {"CreateMany/n=1000", 1000, true}, {"CreateMany/n=100000", 100_000, true}} {
			b.Run(be.name+"/"+c.name, func(b *testing.B) {
				defs := newStore(b, be, be.dsn(b)).Definitions()
				tasks := manyTasks("t", c.n)
				b.ReportAllocs()
				for b.Loop() {
					if c.bulk {
						if err := defs.CreateMany(ctx, tasks); err != nil {
							b.Fatal(err)
						}
					} else {
						for _, tk := range tasks {
							if _, err := defs.Create(ctx, tk); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.StopTimer()
					if _, err := defs.Import(ctx, nil, sqlstore.DeleteOthers()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*c.n), "ns/task")
			})
		}
	}
}

// counts is res without the names, which the tests that count check
// apart.
func counts(res sqlstore.ImportResult) sqlstore.ImportResult {
	res.CreatedNames, res.ReplacedNames, res.DeletedNames = nil, nil, nil
	return res
}

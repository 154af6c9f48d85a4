package cron_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// A memDefs holds task definitions in memory, as a definitions table
// does: every replica's memSource reads the same.
type memDefs struct {
	mu       sync.Mutex
	tasks    map[string]cron.Task
	version  int64
	reads    int   // calls of Tasks
	looks    int   // calls of Version
	fail     error // of Version and Tasks, if set
	replicas []*memSource
	gate     chan struct{} // if set, Tasks takes its answer, then waits to receive from it
}

// A memSource is a replica's view of a memDefs: a cron.Source whose
// Changes receives when this replica changed a definition.
type memSource struct {
	*memDefs
	changes chan struct{}
}

func newMemDefs(ts ...cron.Task) *memDefs {
	d := &memDefs{tasks: map[string]cron.Task{}}
	for _, t := range ts {
		d.put(t)
	}
	return d
}

// source returns a new replica's Source.
func (d *memDefs) source() *memSource {
	s := &memSource{memDefs: d, changes: make(chan struct{}, 1)}
	d.mu.Lock()
	d.replicas = append(d.replicas, s)
	d.mu.Unlock()
	return s
}

// put saves t, made now unless it has a Created, as another process does:
// no replica's Changes receives.
func (d *memDefs) put(t cron.Task) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.tasks[t.Name]; ok && t.Created.IsZero() {
		t.Created = old.Created
	}
	if t.Created.IsZero() {
		t.Created = time.Now().UTC()
	}
	d.tasks[t.Name] = t
	d.version++
}

// set replaces the definitions with ts, keeping the Created of those
// that were there.
func (d *memDefs) set(ts []cron.Task) {
	d.mu.Lock()
	old := d.tasks
	d.tasks = map[string]cron.Task{}
	for _, t := range ts {
		t.Created = old[t.Name].Created
		if t.Created.IsZero() {
			t.Created = time.Now().UTC()
		}
		d.tasks[t.Name] = t
	}
	d.version++
	d.mu.Unlock()
}

func (d *memDefs) remove(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.tasks, name)
	d.version++
}

func (d *memDefs) setFail(err error) {
	d.mu.Lock()
	d.fail = err
	d.mu.Unlock()
}

func (d *memDefs) counts() (reads, looks int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reads, d.looks
}

func (d *memDefs) Tasks(ctx context.Context) ([]cron.Task, int64, error) {
	d.mu.Lock()
	d.reads++
	if d.fail != nil {
		d.mu.Unlock()
		return nil, 0, d.fail
	}
	var ts []cron.Task
	for _, t := range d.tasks {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b cron.Task) int { return strings.Compare(a.Name, b.Name) })
	v, gate := d.version, d.gate
	d.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	return ts, v, nil
}

func (d *memDefs) Version(ctx context.Context) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.looks++
	return d.version, d.fail
}

func (s *memSource) SetPaused(ctx context.Context, name string, paused bool, note schedule.PauseNote) error {
	s.mu.Lock()
	t, ok := s.tasks[name]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("memsource: %w %q", cron.ErrUnknownTask, name)
	}
	if !paused {
		note = schedule.PauseNote{}
	}
	t.Paused, t.PauseNote, t.PausedUntil = paused, note.Note, note.Until
	s.tasks[name] = t
	s.version++
	s.mu.Unlock()
	select {
	case s.changes <- struct{}{}:
	default:
	}
	return nil
}

func (s *memSource) Changes() <-chan struct{} { return s.changes }

// definition returns the definition of name that tab runs.
func definition(t *testing.T, tab *cron.Table, name string) cron.Task {
	t.Helper()
	for _, s := range tab.Tasks() {
		if s.Task.Name == name {
			return s.Task
		}
	}
	t.Fatalf("%s is not loaded", name)
	return cron.Task{}
}

// Tables following one Source run its tasks from Follow on, and apply
// each change within 2s by default, reading the definitions only when
// they changed; Pause and Resume on one replica change the definition,
// which every replica follows, and which that replica applies at once.
// The replicas share a Store: each slot runs once between them while
// definitions change.
func TestTableFollow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defs := newMemDefs(task("a", "h", "* * * * * *"), task("b", "h", "*/2 * * * * *"))
		store := schedule.NewMemoryStore(1000)
		var mu sync.Mutex
		ran := map[string]map[time.Time]int{}
		h := func(ctx context.Context, _ string, r schedule.Run) error {
			mu.Lock()
			if ran[r.Job] == nil {
				ran[r.Job] = map[time.Time]int{}
			}
			ran[r.Job][r.Due]++
			mu.Unlock()
			return nil
		}
		ctx := context.Background()
		var tabs []*cron.Table
		for range 3 {
			tab := cron.NewTable(map[string]cron.Handler{"h": h}, cron.WithLocation(time.UTC), cron.WithStore(store))
			require.NoError(t, tab.Follow(ctx, defs.source()))
			assert.Len(t, tab.Tasks(), 2, "applied at once")
			tabs = append(tabs, tab)
		}
		time.Sleep(2001 * time.Millisecond) // the replicas look at 1s, 2s, 3s...

		// A change by another process: applied within 2s, by each.
		c := task("c", "h", "* * * * * *")
		defs.put(c)
		changed := time.Now()
		for _, tab := range tabs {
			for len(tab.Tasks()) != 3 {
				time.Sleep(10 * time.Millisecond)
			}
		}
		took := time.Since(changed)
		t.Logf("a change applied by 3 replicas after %v", took)
		assert.LessOrEqual(t, took, 2*time.Second)

		// No change: the definitions are not read again.
		reads, looks := defs.counts()
		time.Sleep(10 * time.Second)
		reads2, looks2 := defs.counts()
		assert.Equal(t, reads, reads2, "read while nothing changed")
		assert.GreaterOrEqual(t, looks2-looks, 3*9, "each replica looks at the version every second")

		// Pause on one replica: at once there, within 2s elsewhere.
		require.NoError(t, tabs[0].Pause("a"))
		assert.True(t, definition(t, tabs[0], "a").Paused, "at once on the replica that paused it")
		defs.mu.Lock()
		assert.True(t, defs.tasks["a"].Paused, "in the Source")
		defs.mu.Unlock()
		time.Sleep(2 * time.Second)
		for _, tab := range tabs {
			assert.True(t, definition(t, tab, "a").Paused)
		}
		mu.Lock()
		pausedRuns := len(ran["a"])
		mu.Unlock()
		time.Sleep(5 * time.Second)
		mu.Lock()
		assert.Equal(t, pausedRuns, len(ran["a"]), "a paused task runs on no replica")
		mu.Unlock()
		require.NoError(t, tabs[1].Resume("a"))
		time.Sleep(2 * time.Second)
		for _, tab := range tabs {
			assert.False(t, definition(t, tab, "a").Paused)
		}
		err := tabs[2].Pause("nobody")
		assert.ErrorIs(t, err, cron.ErrUnknownTask)

		// Edits while they run: a removed, b's spec changed, c's policy.
		defs.remove("a")
		b := task("b", "h", "*/3 * * * * *")
		defs.put(b)
		c.Misfire = "run-all"
		defs.put(c)
		time.Sleep(5 * time.Second)
		for _, tab := range tabs {
			assert.Len(t, tab.Tasks(), 2)
			assert.Equal(t, "*/3 * * * * *", definition(t, tab, "b").Spec)
		}
		for _, tab := range tabs {
			require.NoError(t, tab.Stop(ctx))
		}
		mu.Lock()
		defer mu.Unlock()
		for job, dues := range ran {
			for due, n := range dues {
				assert.Equal(t, 1, n, "%s at %v ran %d times", job, due, n)
			}
		}
		assert.NotEmpty(t, ran["c"])
	})
}

// A local change that the Source signals on Changes is applied at once,
// not at the next look.
func TestTableFollowChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defs := newMemDefs(task("a", "h", "@hourly"))
		src := defs.source()
		tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }})
		require.NoError(t, tab.Follow(context.Background(), src, cron.WithPollInterval(time.Hour)))
		defs.put(task("b", "h", "@hourly"))
		src.changes <- struct{}{}
		synctest.Wait()
		assert.Len(t, tab.Tasks(), 2)
		require.NoError(t, tab.Stop(context.Background()))
	})
}

// A definition the Table refuses does not make Follow fail: it follows,
// the error goes to the error handler, the first Apply's as the later
// ones', once for each version, and Tasks reports the task refused. A
// Source that cannot be read is looked at again.
func TestTableFollowErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := task("bad", "h", "0 0 30 2 *")
		defs := newMemDefs(task("a", "h", "* * * * * *"), bad)
		var mu sync.Mutex
		var errs []error
		onErr := func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }})
		require.NoError(t, tab.Follow(context.Background(), defs.source(), cron.WithErrorHandler(onErr)))
		var te *cron.TaskError
		mu.Lock()
		require.Len(t, errs, 1, "the first Apply's")
		require.True(t, errors.As(errs[0], &te), "%v", errs[0])
		assert.Equal(t, "bad", te.Task)
		mu.Unlock()
		ts := tab.Tasks()
		require.Len(t, ts, 2)
		assert.Equal(t, "bad", ts[1].Task.Name)
		assert.True(t, errors.As(ts[1].Refused, &te), "Tasks reports the refusal: %v", ts[1].Refused)
		assert.Equal(t, "spec", te.Field)
		assert.Zero(t, ts[1].Next)
		assert.Nil(t, ts[0].Refused)

		defs.put(task("b", "h", "* * * * * *"))
		time.Sleep(5500 * time.Millisecond)
		assert.Len(t, tab.Tasks(), 3)
		mu.Lock()
		require.Len(t, errs, 2, "once for each version, not at each look")
		assert.True(t, errors.As(errs[1], &te))
		mu.Unlock()

		down := errors.New("database down")
		defs.setFail(down)
		time.Sleep(3 * time.Second)
		mu.Lock()
		require.Len(t, errs, 5)
		assert.ErrorIs(t, errs[4], down)
		assert.EqualError(t, errs[4], "cron: following the source: reading its version: database down")
		mu.Unlock()
		defs.setFail(nil)
		defs.remove("bad")
		time.Sleep(time.Second)
		assert.Len(t, tab.Tasks(), 2, "still following; the refusal is gone with the definition")
		require.NoError(t, tab.Stop(context.Background()))
	})
}

// A Source that cannot be read at Follow is not followed: Pause acts on
// the Table alone, and Follow may be called again. A Table follows one
// Source at most, and none after Stop, which ends the following: the
// Source is not looked at again.
func TestTableFollowOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defs := newMemDefs(task("a", "h", "* * * * * *"))
		tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }})
		ctx := context.Background()
		_, err := tab.Apply(ctx, []cron.Task{task("local", "h", "@hourly")})
		require.NoError(t, err)
		defs.setFail(errors.New("database down"))
		err = tab.Follow(ctx, defs.source())
		assert.EqualError(t, err, "cron: Follow: reading the source: database down")
		require.NoError(t, tab.Pause("local"), "acts on the Table: it follows no Source")
		defs.setFail(nil)

		require.NoError(t, tab.Follow(ctx, defs.source()))
		assert.Equal(t, "a", tab.Tasks()[0].Task.Name, "the Source's tasks replace the Table's")
		assert.Len(t, tab.Tasks(), 1)
		assert.ErrorIs(t, tab.Follow(ctx, defs.source()), cron.ErrFollowing)
		assert.ErrorIs(t, tab.Pause("local"), cron.ErrUnknownTask, "the Source decides")

		time.Sleep(3 * time.Second)
		require.NoError(t, tab.Stop(ctx))
		_, looks := defs.counts()
		time.Sleep(time.Minute)
		_, looks2 := defs.counts()
		assert.Equal(t, looks, looks2, "looked at after Stop")
		assert.ErrorIs(t, tab.Follow(ctx, defs.source()), cron.ErrTableStopped)
	})
}

// With a Source, a task is paused as its definition says: a replica that
// paused a task, but missed the change (its look failed), and then finds
// the task resumed by another replica, resumes it, though its own
// definition in force did not change.
func TestTableFollowPausedAsTheSourceSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defs := newMemDefs(task("a", "h", "* * * * * *"))
		h := func(context.Context, string, schedule.Run) error { return nil }
		ctx := context.Background()
		a := cron.NewTable(map[string]cron.Handler{"h": h})
		b := cron.NewTable(map[string]cron.Handler{"h": h})
		require.NoError(t, a.Follow(ctx, defs.source()))
		require.NoError(t, b.Follow(ctx, defs.source()))
		defs.setFail(errors.New("database down"))
		require.NoError(t, a.Pause("a")) // the Source takes it; a's look after it fails
		assert.True(t, definition(t, a, "a").Paused)
		synctest.Wait()
		defs.setFail(nil)
		require.NoError(t, b.Resume("a"))
		time.Sleep(2 * time.Second)
		for _, tab := range []*cron.Table{a, b} {
			assert.False(t, definition(t, tab, "a").Paused)
			next, _ := tab.Next("a")
			assert.NotZero(t, next)
			require.NoError(t, tab.Stop(ctx))
		}
	})
}

// A look at the Source that read it before a Pause, and applies after,
// does not undo the Pause: the task stays paused, and the next look, which
// Pause makes at once, reads the Source as Pause left it.
func TestTableFollowStaleReadKeepsThePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defs := newMemDefs(task("a", "h", "* * * * * *"), task("b", "h", "* * * * * *"))
		src := defs.source()
		tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }})
		ctx := context.Background()
		require.NoError(t, tab.Follow(ctx, src, cron.WithPollInterval(time.Hour)))
		gate := make(chan struct{})
		defs.mu.Lock()
		defs.gate = gate
		defs.mu.Unlock()
		defs.put(task("b", "h", "*/2 * * * * *")) // a change, for the look to read
		src.changes <- struct{}{}
		synctest.Wait() // the look waits in Tasks, with the definitions before the Pause
		require.NoError(t, tab.Pause("a"))
		gate <- struct{}{} // the stale look applies
		synctest.Wait()    // the look Pause asked for waits in Tasks
		assert.Equal(t, "*/2 * * * * *", definition(t, tab, "b").Spec, "the stale look applied")
		assert.True(t, definition(t, tab, "a").Paused, "the stale look resumed a")
		next, _ := tab.Next("a")
		assert.Zero(t, next)
		close(gate)
		synctest.Wait()
		assert.True(t, definition(t, tab, "a").Paused)
		require.NoError(t, tab.Stop(ctx))
	})
}

// The apply handler gets what each Apply of the Source changed, the first
// included, with the version applied; a look that finds the version
// unchanged applies nothing and reports nothing.
func TestTableFollowApplyHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defs := newMemDefs(task("a", "h", "@hourly"))
		src := defs.source()
		tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }})
		var got []string
		require.NoError(t, tab.Follow(context.Background(), src, cron.WithApplyHandler(func(v int64, ch cron.Changes) {
			got = append(got, fmt.Sprintf("%d +%v ~%v -%v", v, ch.Added, ch.Changed, ch.Removed))
		})))
		time.Sleep(3500 * time.Millisecond) // three looks, nothing changed
		b := task("b", "h", "@hourly")
		defs.put(b)
		time.Sleep(time.Second)
		b.Spec = "@daily"
		defs.put(b)
		time.Sleep(time.Second)
		synctest.Wait()
		require.NoError(t, tab.Stop(context.Background()))
		assert.Equal(t, []string{"1 +[a] ~[] -[]", "2 +[b] ~[] -[]", "3 +[] ~[b] -[]"}, got)
	})
}

// get returns the definition of name.
func (d *memDefs) get(name string) cron.Task {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tasks[name]
}

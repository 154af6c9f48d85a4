package cron_test

import (
	"context"
	"errors"
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

// stateOf returns the TaskState of name in tab.
func stateOf(t *testing.T, tab *cron.Table, name string) cron.TaskState {
	t.Helper()
	for _, s := range tab.Tasks() {
		if s.Task.Name == name {
			return s
		}
	}
	t.Fatalf("%s is not loaded", name)
	return cron.TaskState{}
}

// A definition paused with a note and an end: Tasks reports them, no slot
// runs meanwhile, and the task resumes by itself at the end; a new note
// of a paused definition replaces the job's.
func TestTaskPauseNoteAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ledger
		tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 100*time.Millisecond)}, cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		ctx := context.Background()
		t0 := time.Now().UTC()
		a := task("a", "h", "* * * * * *")
		a.Paused, a.PauseNote, a.PausedUntil = true, "backup <b>", t0.Add(5500*time.Millisecond)
		_, err := tab.Apply(ctx, []cron.Task{a})
		require.NoError(t, err)
		s := stateOf(t, tab, "a")
		assert.True(t, s.Task.Paused)
		assert.Equal(t, "backup <b>", s.Task.PauseNote)
		assert.True(t, a.PausedUntil.Equal(s.Task.PausedUntil))

		time.Sleep(2 * time.Second)
		a.PauseNote = "backup, longer"
		ch, err := tab.Apply(ctx, []cron.Task{a})
		require.NoError(t, err)
		assert.Equal(t, cron.Changes{Changed: []string{"a"}}, ch)
		assert.Equal(t, "backup, longer", stateOf(t, tab, "a").Task.PauseNote)

		time.Sleep(4 * time.Second) // 6s
		s = stateOf(t, tab, "a")
		assert.False(t, s.Task.Paused, "its end has come")
		assert.Empty(t, s.Task.PauseNote)
		time.Sleep(2500 * time.Millisecond)
		assert.Equal(t, []time.Time{t0.Add(6 * time.Second), t0.Add(7 * time.Second), t0.Add(8 * time.Second)}, dues(l.of("a")))
	})
}

// Table.Pause with a note and an end, on Tables following one Source: the
// note is written into the definition, and every Table reports it and
// runs nothing until the end; Resume drops it.
func TestTablePauseWithANoteOnReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defs := newMemDefs(task("a", "h", "* * * * * *"))
		store := schedule.NewMemoryStore(1000)
		var l ledger
		ctx := context.Background()
		var tabs []*cron.Table
		for range 2 {
			tab := cron.NewTable(map[string]cron.Handler{"h": l.handler("h", 100*time.Millisecond)},
				cron.WithLocation(time.UTC), cron.WithStore(store))
			require.NoError(t, tab.Follow(ctx, defs.source()))
			defer tab.Stop(ctx)
			tabs = append(tabs, tab)
		}
		t0 := time.Now().UTC()
		time.Sleep(1500 * time.Millisecond)
		end := t0.Add(10500 * time.Millisecond)
		require.NoError(t, tabs[0].Pause("a", schedule.Because("maintenance (ana)"), schedule.ResumeAt(end)))
		time.Sleep(3 * time.Second) // every Table has looked at the Source
		ran := len(l.of("a"))
		for _, tab := range tabs {
			s := stateOf(t, tab, "a")
			assert.True(t, s.Task.Paused)
			assert.Equal(t, "maintenance (ana)", s.Task.PauseNote)
			assert.True(t, end.Equal(s.Task.PausedUntil))
		}
		require.NoError(t, tabs[1].Pause("a", schedule.Because("maintenance (bo)")))
		time.Sleep(2 * time.Second)
		for _, tab := range tabs {
			s := stateOf(t, tab, "a")
			assert.Equal(t, "maintenance (bo)", s.Task.PauseNote, "a note changed, the end kept")
			assert.True(t, end.Equal(s.Task.PausedUntil))
		}
		time.Sleep(5 * time.Second) // 11.5s
		assert.Equal(t, ran, len(l.of("a"))-1, "nothing ran from 4.5s until the end, then 11s")
		for _, tab := range tabs {
			assert.False(t, stateOf(t, tab, "a").Task.Paused)
		}
		require.NoError(t, tabs[0].Resume("a"))
		time.Sleep(2 * time.Second)
		for _, tab := range tabs {
			s := stateOf(t, tab, "a")
			assert.False(t, s.Task.Paused)
			assert.Empty(t, s.Task.PauseNote)
		}
		seen := map[time.Time]int{}
		for _, r := range l.of("a") {
			seen[r.due]++
		}
		for d, n := range seen {
			assert.Equal(t, 1, n, "slot %v", d)
		}
	})
}

// A task that pauses on failures: once its slots have failed three times
// in a row, on either of two Tables sharing its store, its definition is
// paused with a note naming the last, and every Table stops running it
// once it has looked at the Source.
func TestTaskPauseOnFailuresOnReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := task("a", "h", "* * * * * *")
		a.PauseOnFailures = 3
		defs := newMemDefs(a)
		store := schedule.NewMemoryStore(1000)
		var mu sync.Mutex
		runs := 0
		h := func(context.Context, string, schedule.Run) error {
			mu.Lock()
			runs++
			mu.Unlock()
			return errors.New("no route to host")
		}
		ctx := context.Background()
		var tabs []*cron.Table
		for _, node := range []string{"n1", "n2"} {
			tab := cron.NewTable(map[string]cron.Handler{"h": h}, cron.WithLocation(time.UTC), cron.WithStore(store),
				cron.WithJobOptions(schedule.WithNode(node)))
			require.NoError(t, tab.Follow(ctx, defs.source()))
			defer tab.Stop(ctx)
			tabs = append(tabs, tab)
		}
		time.Sleep(6 * time.Second)
		mu.Lock()
		// The other Table learns of the pause at its next look at the
		// Source, a second at most, and may fail a slot meanwhile.
		assert.Contains(t, []int{3, 4}, runs, "three slots failed, then the task paused")
		mu.Unlock()
		got := defs.get("a")
		assert.True(t, got.Paused)
		// The note of the replica that paused it last: after the third
		// failure, or the fourth, on the one that had not looked yet.
		assert.True(t, strings.HasPrefix(got.PauseNote, "paused after 3 failed slots in a row; the last, due 2000-01-01T00:00:03Z on n") ||
			strings.HasPrefix(got.PauseNote, "paused after 4 failed slots in a row; the last, due 2000-01-01T00:00:04Z on n"), got.PauseNote)
		assert.True(t, strings.HasSuffix(got.PauseNote, ": no route to host"), got.PauseNote)
		for _, tab := range tabs {
			s := stateOf(t, tab, "a")
			assert.True(t, s.Task.Paused)
			assert.Equal(t, got.PauseNote, s.Task.PauseNote)
		}
	})
}

package admin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// memDefs is an in-memory store of definitions, as the page sees
// *sqlstore.Definitions: versions, a stale write refused, and a
// cron.Source that a Table follows.
type memDefs struct {
	mu      sync.Mutex
	defs    map[string]memDef
	version int64 // of the set, raised by each write
	cals    map[string]memCal
	changes chan struct{}
}

type memDef struct {
	task    cron.Task
	version int64
}

var (
	_ admin.Definitions = (*memDefs)(nil)
	_ cron.Source       = (*memDefs)(nil)

	errExists = errors.New("memdefs: task already defined")
	errStale  = errors.New("memdefs: stale version")
)

func newMemDefs(tasks ...cron.Task) *memDefs {
	d := &memDefs{defs: map[string]memDef{}, changes: make(chan struct{}, 1)}
	for _, t := range tasks {
		if _, err := d.Create(context.Background(), t); err != nil {
			panic(err)
		}
	}
	return d
}

// wrote says that the set changed. The caller holds d.mu.
func (d *memDefs) wroteLocked() {
	d.version++
	select {
	case d.changes <- struct{}{}:
	default:
	}
}

func (d *memDefs) Create(_ context.Context, t cron.Task) (int64, error) {
	if err := t.Validate(); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.defs[t.Name]; ok {
		return 0, fmt.Errorf("%w: %q", errExists, t.Name)
	}
	t.Created = time.Now().UTC()
	d.defs[t.Name] = memDef{t, 1}
	d.wroteLocked()
	return 1, nil
}

func (d *memDefs) Update(_ context.Context, t cron.Task, version int64) (int64, error) {
	if err := t.Validate(); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok := d.defs[t.Name]
	switch {
	case !ok:
		return 0, fmt.Errorf("memdefs: %q: %w", t.Name, cron.ErrUnknownTask)
	case cur.version != version:
		return 0, fmt.Errorf("%w: %q is at version %d, not %d", errStale, t.Name, cur.version, version)
	}
	t.Created = cur.task.Created
	d.defs[t.Name] = memDef{t, version + 1}
	d.wroteLocked()
	return version + 1, nil
}

func (d *memDefs) Delete(_ context.Context, name string, version int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok := d.defs[name]
	switch {
	case !ok:
		return fmt.Errorf("memdefs: %q: %w", name, cron.ErrUnknownTask)
	case cur.version != version:
		return fmt.Errorf("%w: %q is at version %d, not %d", errStale, name, cur.version, version)
	}
	delete(d.defs, name)
	d.wroteLocked()
	return nil
}

func (d *memDefs) Get(_ context.Context, name string) (cron.Task, int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok := d.defs[name]
	if !ok {
		return cron.Task{}, 0, fmt.Errorf("memdefs: %q: %w", name, cron.ErrUnknownTask)
	}
	return cur.task, cur.version, nil
}

func (d *memDefs) Tasks(context.Context) ([]cron.Task, int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ts := make([]cron.Task, 0, len(d.defs))
	for _, def := range d.defs {
		ts = append(ts, def.task)
	}
	slices.SortFunc(ts, func(a, b cron.Task) int { return strings.Compare(a.Name, b.Name) })
	return ts, d.version, nil
}

func (d *memDefs) Version(context.Context) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.version, nil
}

func (d *memDefs) SetPaused(_ context.Context, name string, paused bool, note schedule.PauseNote) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok := d.defs[name]
	if !ok {
		return fmt.Errorf("memdefs: %q: %w", name, cron.ErrUnknownTask)
	}
	if !paused {
		note = schedule.PauseNote{}
	}
	if cur.task.Paused == paused && cur.task.PauseNote == note.Note && cur.task.PausedUntil.Equal(note.Until) {
		return nil
	}
	cur.task.Paused, cur.task.PauseNote, cur.task.PausedUntil = paused, note.Note, note.Until
	cur.version++
	d.defs[name] = cur
	d.wroteLocked()
	return nil
}

func (d *memDefs) Changes() <-chan struct{} { return d.changes }

// set overwrites the definition of t.Name, as another user's edit does.
func (d *memDefs) set(t cron.Task) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur := d.defs[t.Name]
	t.Created = cur.task.Created
	d.defs[t.Name] = memDef{t, cur.version + 1}
	d.wroteLocked()
}

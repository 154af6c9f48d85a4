package admin_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/circulation-go/circulation/admin"
	"github.com/circulation-go/circulation/cron"
)

// The calendars of a memDefs, as *sqlstore.Definitions keeps them: a
// version each, a stale write refused, and a calendar that a task names
// not deleted.

var (
	_ admin.Calendars     = (*memDefs)(nil)
	_ cron.CalendarSource = (*memDefs)(nil)
)

type memCal struct {
	cal     cron.Calendar
	version int64
}

func (d *memDefs) Calendars(context.Context) ([]cron.Calendar, int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cals := make([]cron.Calendar, 0, len(d.cals))
	for _, c := range d.cals {
		cals = append(cals, c.cal)
	}
	slices.SortFunc(cals, func(a, b cron.Calendar) int { return strings.Compare(a.Name, b.Name) })
	return cals, d.version, nil
}

func (d *memDefs) GetCalendar(_ context.Context, name string) (cron.Calendar, int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.cals[name]
	if !ok {
		return cron.Calendar{}, 0, fmt.Errorf("memdefs: %q: %w", name, cron.ErrUnknownCalendar)
	}
	return c.cal, c.version, nil
}

func (d *memDefs) CreateCalendar(_ context.Context, c cron.Calendar) (int64, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.cals[c.Name]; ok {
		return 0, fmt.Errorf("%w: calendar %q", errExists, c.Name)
	}
	if d.cals == nil {
		d.cals = map[string]memCal{}
	}
	d.cals[c.Name] = memCal{c, 1}
	d.wroteLocked()
	return 1, nil
}

func (d *memDefs) UpdateCalendar(_ context.Context, c cron.Calendar, version int64) (int64, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok := d.cals[c.Name]
	switch {
	case !ok:
		return 0, fmt.Errorf("memdefs: %q: %w", c.Name, cron.ErrUnknownCalendar)
	case cur.version != version:
		return 0, fmt.Errorf("%w: calendar %q is at version %d, not %d", errStale, c.Name, cur.version, version)
	}
	d.cals[c.Name] = memCal{c, version + 1}
	d.wroteLocked()
	return version + 1, nil
}

func (d *memDefs) DeleteCalendar(_ context.Context, name string, version int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok := d.cals[name]
	switch {
	case !ok:
		return fmt.Errorf("memdefs: %q: %w", name, cron.ErrUnknownCalendar)
	case cur.version != version:
		return fmt.Errorf("%w: calendar %q is at version %d, not %d", errStale, name, cur.version, version)
	}
	for _, def := range d.defs {
		if slices.Contains(def.task.Calendars, name) {
			return fmt.Errorf("memdefs: calendar %q is named by the task %q", name, def.task.Name)
		}
	}
	delete(d.cals, name)
	d.wroteLocked()
	return nil
}

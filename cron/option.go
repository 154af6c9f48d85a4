package cron

import (
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// A TableOption configures a Table in NewTable.
type TableOption interface {
	apply(*Table)
}

type tableOption func(*Table)

func (f tableOption) apply(t *Table) { f(t) }

// WithLocation sets the zone in which the specs of tasks without a Zone
// are read (default time.Local).
func WithLocation(loc *time.Location) TableOption {
	return tableOption(func(t *Table) {
		if loc != nil {
			t.loc = loc
		}
	})
}

// WithStore sets the Store of the tasks' records (default a
// schedule.MemoryStore keeping 100 records per task). Tables of several
// replicas sharing a Store run each slot once between them.
func WithStore(s schedule.Store) TableOption {
	return tableOption(func(t *Table) {
		if s != nil {
			t.store = s
		}
	})
}

// WithJobOptions adds options to every task's schedule.Job, such as
// schedule.WithScheduler (one wheel for all tasks), schedule.WithObserver
// or schedule.WithTimeout. The Table sets WithStore, WithOverlap and
// WithMisfire itself, and WithTimeout and WithRetry for a task whose
// Timeout or Retry is set: such options here are overridden.
func WithJobOptions(opts ...schedule.Option) TableOption {
	return tableOption(func(t *Table) { t.jobOpts = append(t.jobOpts, opts...) })
}

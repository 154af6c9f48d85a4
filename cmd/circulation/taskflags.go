package main

import (
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/circulation-go/circulation/cron"
)

// The flags of a definition, for tasks create and edit: one a field of
// cron.Task, named as in its JSON, applied in the order given.

// defFlags records the fields the flags set, to apply them to a task.
type defFlags struct {
	set []func(*cron.Task)
}

// apply sets the fields the flags named in t.
func (f *defFlags) apply(t *cron.Task) {
	for _, s := range f.set {
		s(t)
	}
}

// given reports whether a flag named a field.
func (f *defFlags) given() bool { return len(f.set) > 0 }

// addDefFlags adds the flags of a definition to fs.
func addDefFlags(fs *flag.FlagSet) *defFlags {
	f := &defFlags{}
	str := func(name, usage string, field func(*cron.Task) *string) {
		fs.Func(name, usage, func(v string) error {
			f.set = append(f.set, func(t *cron.Task) { *field(t) = v })
			return nil
		})
	}
	boolean := func(name, usage string, field func(*cron.Task) *bool) {
		fs.BoolFunc(name, usage, func(v string) error {
			b, err := strconv.ParseBool(v)
			f.set = append(f.set, func(t *cron.Task) { *field(t) = b })
			return err
		})
	}
	integer := func(name, usage string, field func(*cron.Task) *int) {
		fs.Func(name, usage, func(v string) error {
			n, err := strconv.Atoi(v)
			f.set = append(f.set, func(t *cron.Task) { *field(t) = n })
			return err
		})
	}
	moment := func(name, usage string, field func(*cron.Task) *time.Time) {
		fs.Func(name, usage+", an RFC 3339 time such as 2030-01-02T09:00:00Z; empty for none", func(v string) error {
			tm, err := parseTime(v)
			f.set = append(f.set, func(t *cron.Task) { *field(t) = tm })
			return err
		})
	}
	duration := func(name, usage string, field func(*cron.Task) *cron.Duration) {
		fs.Func(name, usage+", a duration such as 90s", func(v string) error {
			var d cron.Duration
			err := d.UnmarshalText([]byte(v))
			f.set = append(f.set, func(t *cron.Task) { *field(t) = d })
			return err
		})
	}
	str("handler", "the handler that runs the task", func(t *cron.Task) *string { return &t.Handler })
	str("business-id", "the id passed to the handler (businessId)", func(t *cron.Task) *string { return &t.BusinessID })
	str("spec", "the cron spec", func(t *cron.Task) *string { return &t.Spec })
	str("zone", "the IANA zone of the spec", func(t *cron.Task) *string { return &t.Zone })
	moment("start", "the first time the task may run", func(t *cron.Task) *time.Time { return &t.Start })
	moment("end", "the last time the task may run", func(t *cron.Task) *time.Time { return &t.End })
	boolean("permanent", "the task has no end", func(t *cron.Task) *bool { return &t.Permanent })
	boolean("once", "the task runs once", func(t *cron.Task) *bool { return &t.Once })
	integer("max-runs", "the task's first slots only, that many (maxRuns)", func(t *cron.Task) *int { return &t.MaxRuns })
	fs.Func("calendars", "the calendars whose days the task passes over, comma-separated", func(v string) error {
		var names []string
		if v != "" {
			names = strings.Split(v, ",")
		}
		f.set = append(f.set, func(t *cron.Task) { t.Calendars = names })
		return nil
	})
	boolean("paused", "the task is paused", func(t *cron.Task) *bool { return &t.Paused })
	str("pause-note", "why the task is paused (pauseNote)", func(t *cron.Task) *string { return &t.PauseNote })
	moment("paused-until", "when the pause ends (pausedUntil)", func(t *cron.Task) *time.Time { return &t.PausedUntil })
	integer("pause-on-failures", "pause after that many failed slots in a row (pauseOnFailures)", func(t *cron.Task) *int { return &t.PauseOnFailures })
	str("overlap", "skip, buffer-one, buffer-all, replace or allow", func(t *cron.Task) *string { return &t.Overlap })
	str("misfire", "run-once, skip or run-all", func(t *cron.Task) *string { return &t.Misfire })
	duration("timeout", "the bound of each run", func(t *cron.Task) *cron.Duration { return &t.Timeout })
	integer("retry-attempts", "runs of a failed slot in all (retry.attempts)", func(t *cron.Task) *int { return &t.Retry.Attempts })
	duration("retry-backoff", "the pause before the first retry (retry.backoff)", func(t *cron.Task) *cron.Duration { return &t.Retry.Backoff })
	duration("catch-up-window", "how old a missed slot may be and still run (catchUpWindow)", func(t *cron.Task) *cron.Duration { return &t.CatchUpWindow })
	duration("jitter", "the most a slot's start is spread", func(t *cron.Task) *cron.Duration { return &t.Jitter })
	return f
}

// parseTime reads an RFC 3339 time; empty is the zero time.
func parseTime(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, v)
}

package cron

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// WithLogger makes the Table log what an operator needs to know to l, and
// its tasks' jobs too (schedule.WithLogger, which lists their lines); by
// default, to slog.Default() at the time of each line. Nothing is logged
// while all goes well: every line is a Warn or an Error. The messages are
// constant, the facts are attributes; docs/logging.md lists them:
//
//   - "cron: definition refused" (Error): an Apply, or a Follow's, refused
//     the definition of a task, with task, field (of a *TaskError: the
//     field at fault, or "start" if its job could not start) and err.
//     Logged once per refusal: an Apply that refuses the definition again
//     for the same reason does not log it again.
//   - "cron: source unreachable" (Warn): a look of Follow at its Source
//     failed, with err; logged when the failures start, not at each look.
//   - "cron: source reachable again" (Warn): the first look that read the
//     Source after them, with failed (the looks that failed) and took
//     (since the first of them). As with a store, failures that start
//     within a minute of the previous "source unreachable" line are
//     counted but not logged.
//   - "cron: pause not written" (Warn): a task paused itself after its
//     failures (Task.PauseOnFailures), and its pause could not be written to
//     the Source followed, with task and err.
//
// A nil l means the default. It applies to the jobs before the options of
// WithJobOptions given after it, which may set their own.
func WithLogger(l *slog.Logger) TableOption {
	return tableOption(func(t *Table) {
		t.log = l
		t.jobOpts = append(t.jobOpts, schedule.WithLogger(l))
	})
}

// The messages the Table logs, one constant each: see WithLogger.
const (
	msgRefused      = "cron: definition refused"
	msgSourceDown   = "cron: source unreachable"
	msgSourceUp     = "cron: source reachable again"
	msgPauseNotKept = "cron: pause not written"
)

// logger returns the Table's logger: WithLogger's, or slog.Default().
func (t *Table) logger() *slog.Logger {
	if t.log != nil {
		return t.log
	}
	return slog.Default()
}

// logRefused logs each refusal of rs.
func (t *Table) logRefused(rs []refusal) {
	l := t.logger()
	ctx := context.Background()
	if len(rs) == 0 || !l.Enabled(ctx, slog.LevelError) {
		return
	}
	for _, r := range rs {
		attrs := []slog.Attr{slog.String("task", r.task.Name)}
		if te := (*TaskError)(nil); errors.As(r.err, &te) {
			attrs = append(attrs, slog.String("field", te.Field))
		}
		attrs = append(attrs, slog.String("err", r.err.Error()))
		l.LogAttrs(ctx, slog.LevelError, msgRefused, attrs...)
	}
}

// freshRefusals returns the refusals of refused that t.refused does not
// hold already, for the same reason. The caller holds t.mu.
func (t *Table) freshRefusalsLocked(refused map[string]refusal) []refusal {
	var fresh []refusal
	for name, r := range refused {
		if old, ok := t.refused[name]; ok && old.err.Error() == r.err.Error() {
			continue
		}
		fresh = append(fresh, r)
	}
	return fresh
}

// sourceQuiet is the least time between two "source unreachable" lines of
// a follower.
const sourceQuiet = time.Minute

// A sourceOutage follows the failures of a follower's looks at its Source,
// so that they make two lines, not one per look. Only the follower's
// looks, one at a time, use it.
type sourceOutage struct {
	down   bool
	quiet  bool      // its start was not logged, nor will its end be
	since  time.Time // the first failure
	failed int       // the failures since the latest "reachable again" line
	logged time.Time // the latest "unreachable" line
}

// failed counts a look at the Source that failed with err, and logs it if
// it starts an outage.
func (f *follower) failed(err error) {
	o := &f.outage
	o.failed++
	now := time.Now()
	switch {
	case !o.down:
		o.down, o.since = true, now
		o.quiet = !o.logged.IsZero() && now.Sub(o.logged) < sourceQuiet
	case o.quiet && now.Sub(o.logged) >= sourceQuiet:
		// An outage that began too soon after the last one logged, and
		// lasts: it is logged now, and so will its end be.
		o.quiet = false
	default:
		return
	}
	if o.quiet {
		return
	}
	o.logged = now
	l := f.t.logger()
	if ctx := context.Background(); l.Enabled(ctx, slog.LevelWarn) {
		l.LogAttrs(ctx, slog.LevelWarn, msgSourceDown, slog.String("err", err.Error()))
	}
}

// answered ends the Source's outage, if one is under way, and logs its
// end, unless its start was not logged.
func (f *follower) answered() {
	o := &f.outage
	if !o.down {
		return
	}
	o.down = false
	if o.quiet {
		return
	}
	failed, took := o.failed, time.Since(o.since)
	o.failed = 0
	l := f.t.logger()
	if ctx := context.Background(); l.Enabled(ctx, slog.LevelWarn) {
		l.LogAttrs(ctx, slog.LevelWarn, msgSourceUp, slog.Int("failed", failed), slog.Duration("took", took))
	}
}

// logPauseNotKept logs that the pause of the task name could not be
// written to the Source.
func (t *Table) logPauseNotKept(name string, err error) {
	l := t.logger()
	if ctx := context.Background(); l.Enabled(ctx, slog.LevelWarn) {
		l.LogAttrs(ctx, slog.LevelWarn, msgPauseNotKept, slog.String("task", name), slog.String("err", err.Error()))
	}
}

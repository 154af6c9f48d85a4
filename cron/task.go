package cron

import (
	"errors"
	"strconv"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// A Task is the definition of a user-defined scheduled task, as a service
// keeps it in a table and loads it into a [Table]. Its JSON form uses the
// names in the tags.
type Task struct {
	// Name identifies the task in the Table, its Job and its records.
	Name string `json:"name"`
	// Handler names the Handler that runs the task, registered with the
	// Table; many tasks may share one.
	Handler string `json:"handler"`
	// BusinessID is passed to the Handler: it tells the tasks of one
	// Handler apart.
	BusinessID string `json:"businessId,omitempty"`
	// Spec is the cron spec, as Parse reads it.
	Spec string `json:"spec"`
	// Zone is the IANA zone in which Spec is read; empty means the Table's
	// (WithLocation). A CRON_TZ= prefix of Spec overrides it.
	Zone string `json:"zone,omitempty"`
	// Start and End bound the task's runs to [Start, End]. A zero Start
	// leaves the start open. End is required unless Permanent, and then
	// must be zero.
	Start     time.Time `json:"start,omitzero"`
	End       time.Time `json:"end,omitzero"`
	Permanent bool      `json:"permanent,omitempty"`
	// Once makes the task run once: at the first time of Spec at or after
	// Start, or, without a Start, after the Table first loaded the task.
	Once bool `json:"once,omitempty"`
	// Enabled must be set for the task to run: a disabled task is as if
	// absent.
	Enabled bool `json:"enabled"`
	// Overlap lets a run start while the previous one is still running
	// (schedule.OverlapAllow); by default such a run is skipped
	// (schedule.OverlapSkip).
	Overlap bool `json:"overlap,omitempty"`
	// Misfire is the missed-run policy: "run-once" (the default,
	// schedule.MisfireRunOnce), "skip" (schedule.MisfireSkip) or "run-all"
	// (schedule.MisfireRunAll).
	Misfire string `json:"misfire,omitempty"`
}

// A TaskError reports a task definition that a Table cannot load: the
// task, its field at fault (named as in JSON), and why. Its message quotes
// at most 64 bytes of each text of the definition.
type TaskError struct {
	Task  string
	Field string
	Err   error
}

func (e *TaskError) Error() string {
	return "cron: task " + strconv.Quote(clip(e.Task)) + ": " + e.Field + ": " + e.Err.Error()
}

func (e *TaskError) Unwrap() error { return e.Err }

// MaxNameLen is the length, in bytes, of the longest Task.Name.
const MaxNameLen = 200

var misfires = map[string]schedule.Misfire{
	"":         schedule.MisfireRunOnce,
	"run-once": schedule.MisfireRunOnce,
	"skip":     schedule.MisfireSkip,
	"run-all":  schedule.MisfireRunAll,
}

// compiled is a validated task: its definition, its Schedule (before Once
// and the window are applied) and its policies.
type compiled struct {
	def     Task
	spec    schedule.Schedule
	misfire schedule.Misfire
	overlap schedule.Overlap
}

// compile validates t against the handlers, reading its spec in loc unless
// it names a zone.
func compile(t Task, handlers map[string]Handler, loc *time.Location) (*compiled, error) {
	fail := func(field string, err error) (*compiled, error) {
		return nil, &TaskError{Task: t.Name, Field: field, Err: err}
	}
	switch {
	case t.Name == "":
		return fail("name", errors.New("empty"))
	case len(t.Name) > MaxNameLen:
		return fail("name", errors.New("longer than "+strconv.Itoa(MaxNameLen)+" bytes"))
	case t.Handler == "":
		return fail("handler", errors.New("empty"))
	case handlers[t.Handler] == nil:
		return fail("handler", errors.New("no handler "+strconv.Quote(clip(t.Handler))))
	}
	if t.Zone != "" {
		l, err := time.LoadLocation(t.Zone)
		if err != nil {
			return fail("zone", errors.New("unknown zone "+strconv.Quote(clip(t.Zone))))
		}
		loc = l
	}
	s, err := Parse(t.Spec, loc)
	if err != nil {
		return fail("spec", err)
	}
	switch {
	case !t.Permanent && t.End.IsZero():
		return fail("end", errors.New("required unless permanent"))
	case t.Permanent && !t.End.IsZero():
		return fail("end", errors.New("set on a permanent task"))
	case !t.End.IsZero() && !t.Start.IsZero() && t.End.Before(t.Start):
		return fail("end", errors.New("before start"))
	}
	m, ok := misfires[t.Misfire]
	if !ok {
		return fail("misfire", errors.New("unknown policy "+strconv.Quote(clip(t.Misfire))+"; want run-once, skip or run-all"))
	}
	c := &compiled{def: t, spec: s, misfire: m, overlap: schedule.OverlapSkip}
	if t.Overlap {
		c.overlap = schedule.OverlapAllow
	}
	return c, nil
}

// schedule returns the task's Schedule; a Once task without a Start runs
// at the first time of its spec after seen.
func (c *compiled) schedule(seen time.Time) schedule.Schedule {
	s := c.spec
	if c.def.Once {
		from := seen
		if !c.def.Start.IsZero() {
			from = c.def.Start.Add(-1)
		}
		if at := s.Next(from); !at.IsZero() {
			s = schedule.Once(at)
		} else {
			s = schedule.At()
		}
	}
	return schedule.Between(s, c.def.Start, c.def.End)
}

// sameSchedule reports whether a and b have the same times.
func sameSchedule(a, b Task) bool {
	return a.Spec == b.Spec && a.Zone == b.Zone && a.Start.Equal(b.Start) && a.End.Equal(b.End) &&
		a.Permanent == b.Permanent && a.Once == b.Once
}

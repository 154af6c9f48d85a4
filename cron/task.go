package cron

import (
	"strconv"
	"time"
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

package cron

import (
	"context"
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
	// Paused keeps the task loaded, in the Table's inventory, but runs
	// none of its slots until it is resumed: they are Missed.
	Paused bool `json:"paused,omitempty"`
	// Overlap says what happens when a slot falls due while a run of the
	// task is in flight: "skip" (the default, schedule.OverlapSkip),
	// "buffer-one" (schedule.OverlapBufferOne), "replace"
	// (schedule.OverlapReplace) or "allow" (schedule.OverlapAllow).
	Overlap string `json:"overlap,omitempty"`
	// Misfire is the missed-run policy: "run-once" (the default,
	// schedule.MisfireRunOnce), "skip" (schedule.MisfireSkip) or "run-all"
	// (schedule.MisfireRunAll).
	Misfire string `json:"misfire,omitempty"`
	// Timeout bounds each run: its context is cancelled after it
	// (schedule.WithTimeout). Zero means no bound.
	Timeout Duration `json:"timeout,omitzero"`
	// Retry runs a failed slot again (schedule.WithRetry).
	Retry Retry `json:"retry,omitzero"`
	// Created is when the task was first defined: a task that has no
	// record owes the slots due from then on, by its Misfire policy
	// (schedule.WithSince). Zero means when the Table first loaded it. A
	// Source sets it.
	Created time.Time `json:"created,omitzero"`
}

// Retry is a task's retry policy: up to Attempts runs of a slot in all,
// the first retry Backoff after a failure, each next one after twice the
// pause before it. Attempts below 2 means no retry.
type Retry struct {
	Attempts int      `json:"attempts,omitempty"`
	Backoff  Duration `json:"backoff,omitzero"`
}

// A Duration is a time.Duration whose JSON form is its String, such as
// "1m30s".
type Duration time.Duration

// A Source holds task definitions that a Table follows (Table.Follow),
// such as the definitions table of schedule/sqlstore: every replica's Table
// following one Source runs the same tasks.
type Source interface {
	// Tasks returns every definition, and the version of the set they
	// form.
	Tasks(ctx context.Context) ([]Task, int64, error)
	// Version returns the version of the set of definitions: a number that
	// changes whenever a definition does. It is called often, and should
	// be cheap.
	Version(ctx context.Context) (int64, error)
	// SetPaused pauses or resumes the task name, for every Table that
	// follows the Source. It returns an error wrapping ErrUnknownTask if
	// the Source has no such task.
	SetPaused(ctx context.Context, name string, paused bool) error
	// Changes returns a channel that receives when this process changed a
	// definition, or the Source learnt of a change, so that a Table
	// applies it before its next look at Version; nil if there is none.
	Changes() <-chan struct{}
}

// TaskState is a task a Table runs, as Table.Tasks reports it.
type TaskState struct {
	Task    Task            // the definition in force
	Next    time.Time       // zero if no run is left
	Last    schedule.Record // the latest record in the store; zero if none
	Running int             // runs in flight
}

// ErrUnknownTask is returned by RunNow, Pause and Resume for a name the
// Table does not run.
var ErrUnknownTask = errors.New("cron: unknown task")

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

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText returns d as time.Duration's String: "1m30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a duration as time.ParseDuration does ("90s",
// "1h30m"), and refuses a negative one.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return errors.New("cron: duration " + strconv.Quote(clip(string(b))) + ": want a duration such as \"90s\" or \"1h30m\"")
	}
	if v < 0 {
		return errors.New("cron: duration " + strconv.Quote(clip(string(b))) + " is negative")
	}
	*d = Duration(v)
	return nil
}

// Validate checks t as a Table's Apply does, but for its Handler, which
// only needs a name here: a store of definitions calls it before it saves
// one. Its error is a *TaskError naming the field.
func (t Task) Validate() error {
	_, err := compile(t, map[string]Handler{t.Handler: anyHandler}, time.UTC, Parse)
	return err
}

func anyHandler(context.Context, string, schedule.Run) error { return nil }

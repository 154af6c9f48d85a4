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
// names in the tags; DecodeTasks reads a list of them. The zero value of
// each field but Name, Handler, Spec and End (or Permanent) is the usual
// default: a task runs unless Paused, skips a slot that falls due while
// it runs, catches up its latest missed slot, and has no timeout and no
// retry.
//
// A definition that cannot run is refused, by Validate and by
// Table.Apply, with a *TaskError naming the field at fault: see Validate.
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
	// leaves the start open. End is required unless Permanent (and then
	// must be zero) or Once.
	Start     time.Time `json:"start,omitzero"`
	End       time.Time `json:"end,omitzero"`
	Permanent bool      `json:"permanent,omitempty"`
	// Once makes the task run once: at the first time of Spec at or after
	// Start, or, without a Start, after Created, or else after the Table
	// first loaded the task: a Once task with neither, loaded by two
	// replicas or again after a restart, may run once for each (a Source
	// sets Created).
	Once bool `json:"once,omitempty"`
	// MaxRuns limits the task to its first MaxRuns slots: the times of
	// Spec within [Start, End] at or after Start, or, without a Start,
	// after Created, as Once counts its one (schedule.First). Each slot
	// uses its turn whether it ran or not: one skipped by the Overlap
	// policy, or missed, counts; a RunNow does not, being no slot (Quartz
	// counts slots so; gocron's limited runs count every run). After the
	// last, the task has no run left, as one past its End. Every replica
	// and every restart derive the same slots from the definition, with
	// nothing else kept: a Table refuses a task with MaxRuns but neither
	// Start nor Created (a Source sets Created). A task with MaxRuns needs
	// no End. Zero means no limit; it must not be negative nor more than
	// MaxMaxRuns, and a Once task's is 0 or 1. Quartz's repeatCount,
	// Temporal's limited actions.
	MaxRuns int `json:"maxRuns,omitempty"`
	// Calendars names the calendars whose days the task passes over: a
	// slot on one of their days is not a slot (see Calendar). A Table
	// refuses a definition naming a calendar it does not know, as one
	// naming a handler it does not have, so that the task never runs on a
	// day meant to be excluded; Validate checks the names only. At most
	// MaxCalendars, each once.
	Calendars []string `json:"calendars,omitempty"`
	// Paused keeps the task loaded, in the Table's inventory, with its
	// job, but runs none of its slots until it is resumed: they pass
	// without a run, and are not caught up after (schedule.Job.Pause).
	Paused bool `json:"paused,omitempty"`
	// PauseNote says why the task is paused, and by whom: free text that
	// the Table gives its job's pause (schedule.Because), at most
	// MaxPauseNoteLen bytes. It is ignored, and dropped, on a task that
	// is not paused.
	PauseNote string `json:"pauseNote,omitempty"`
	// PausedUntil is when a paused task resumes by itself
	// (schedule.ResumeAt); zero for a pause that only Resume, or a
	// definition not paused, ends. A task whose PausedUntil has passed is
	// not paused, whatever Paused says. It is ignored, and dropped, on a
	// task that is not paused.
	PausedUntil time.Time `json:"pausedUntil,omitzero"`
	// PauseOnFailures pauses the task once that many of its slots in a row
	// have Failed, counted in the Store's records of every replica
	// (schedule.WithPauseOnFailures): its definition in the Source is
	// then paused, with a PauseNote that names the last failure, so that
	// every replica and the page see it. Zero means never; at most
	// schedule.MaxPauseOnFailures.
	PauseOnFailures int `json:"pauseOnFailures,omitempty"`
	// Overlap says what happens when a slot falls due while a run of the
	// task is in flight: "skip" (the default, schedule.OverlapSkip),
	// "buffer-one" (schedule.OverlapBufferOne), "buffer-all"
	// (schedule.OverlapBufferAll), "replace" (schedule.OverlapReplace) or
	// "allow" (schedule.OverlapAllow).
	Overlap string `json:"overlap,omitempty"`
	// Misfire is the missed-run policy: "run-once" (the default,
	// schedule.MisfireRunOnce), "skip" (schedule.MisfireSkip) or "run-all"
	// (schedule.MisfireRunAll).
	Misfire string `json:"misfire,omitempty"`
	// Timeout bounds each run: its context is cancelled after it, and
	// the run is Failed (schedule.WithTimeout). Zero means no bound, or
	// the Table's (WithJobOptions); it must not be negative.
	Timeout Duration `json:"timeout,omitzero"`
	// Retry runs a failed slot again within its slot (schedule.WithRetry).
	// The zero Retry means no retry, or the Table's (WithJobOptions).
	Retry Retry `json:"retry,omitzero"`
	// CatchUpWindow is how old a missed slot may be and still run, by
	// the Misfire policy; an older one is Missed
	// (schedule.WithCatchUpWindow). Zero means no window, or the Table's
	// (WithJobOptions); it must be a whole number of seconds, from 0 to
	// 100 years.
	CatchUpWindow Duration `json:"catchUpWindow,omitzero"`
	// Jitter spreads the task's scheduled runs: each slot starts up to
	// Jitter after its due time, by a delay that the task's name and the
	// slot decide, the same on every replica, and within the first half
	// of the time to the next slot (schedule.WithJitter). Zero means no
	// jitter, or the Table's (WithJobOptions); it must be a whole number
	// of seconds, from 0 to 100 years.
	Jitter Duration `json:"jitter,omitzero"`
	// Created is when the task was first defined: a task that has no
	// record in the store owes the slots due after then, by its Misfire
	// policy, as schedule.WithSince says, so that a task defined while no
	// process ran it does not lose its first slots. It is also the anchor
	// of a Once task without Start. Zero means when the Table first loaded
	// the task, in this process. A Source sets it.
	Created time.Time `json:"created,omitzero"`
}

// Retry is a task's retry policy: up to Attempts runs of a slot in all,
// the first retry Backoff after a failure, each next one after twice the
// pause before it (schedule.WithRetry). Attempts below 2 means no retry;
// neither may be negative. Its JSON form is {"attempts": 3, "backoff":
// "10s"}.
type Retry struct {
	Attempts int      `json:"attempts,omitempty"`
	Backoff  Duration `json:"backoff,omitzero"`
}

// A Duration is a time.Duration whose JSON form is its String, such as
// "1m30s".
type Duration time.Duration

// A Source holds task definitions that a Table follows (Table.Follow),
// such as the definitions table of schedule/sqlstore: every replica's Table
// following one Source runs the same tasks. Its methods must be safe for
// concurrent use.
type Source interface {
	// Tasks returns every definition, with its Created set to when it
	// was first saved, and the version of the set they form.
	Tasks(ctx context.Context) ([]Task, int64, error)
	// Version returns the version of the set of definitions: a number that
	// changes whenever a definition does. It is called often, and should
	// be cheap.
	Version(ctx context.Context) (int64, error)
	// SetPaused pauses or resumes the task name, for every Table that
	// follows the Source: a pause with note's Note and Until as the
	// task's PauseNote and PausedUntil; a Resume with none. It returns an
	// error wrapping ErrUnknownTask if the Source has no such task.
	SetPaused(ctx context.Context, name string, paused bool, note schedule.PauseNote) error
	// Changes returns a channel that receives when this process changed a
	// definition, or the Source learnt of a change, so that a Table
	// applies it before its next look at Version; nil if there is none.
	Changes() <-chan struct{}
}

// TaskState is a task a Table runs, as Table.Tasks reports it.
type TaskState struct {
	// Task is the definition in force, with its defaults spelled out:
	// its policies by name, its times in UTC, Created as the time the
	// Table took for it. Its Paused says whether the task is paused, by
	// its definition or by Table.Pause.
	Task Task
	// Next is the due time of the task's next slot (with a jitter, it
	// starts later); zero if the task is paused, has no run left, or its
	// job waits for the job it replaces to stop (see Table.Apply).
	Next time.Time
	// Last is the record with the latest Due in the Table's Store: the
	// latest slot's outcome, or a run in flight (Running); zero if none,
	// which Last.Due.IsZero() tells (the zero Status is Running).
	Last schedule.Record
	// Running counts the task's runs in flight: the calls of its Handler
	// that have not returned.
	Running int
	// Remaining is what is left of the task's MaxRuns: MaxRuns less the
	// slots counted at or before the call, whether they ran or not
	// (Temporal's remaining actions); zero once the last has fallen due,
	// and zero for a task without MaxRuns.
	Remaining int
	// Backfill is the state of the task's latest backfill
	// (Table.Backfill), or nil if it has had none.
	Backfill *BackfillState
	// Refused is why the latest Apply refused the task's definition (a
	// *TaskError naming the field: a handler this Table does not have, a
	// zone it cannot load), or nil. The definition in force before it, if
	// any, is Task and goes on running; a task with none is Task as
	// defined, and does not run.
	Refused error
}

// ErrUnknownTask is wrapped by the errors of RunNow, Pause and Resume for
// a name the Table does not run, and of Source.SetPaused for a name the
// Source does not hold.
var ErrUnknownTask = errors.New("cron: unknown task")

// A TaskError reports a task definition that a Table cannot load: the
// task, its field at fault (named as in JSON: "spec", "retry.attempts"),
// and why. Its message quotes at most 64 bytes of each text of the
// definition; for DecodeTasks, it gives the definition's index in the
// array too.
type TaskError struct {
	Task  string
	Field string
	Err   error

	index int // DecodeTasks': the definition's index in its array, plus one; 0 for none
}

func (e *TaskError) Error() string {
	s := "cron: task " + strconv.Quote(clip(e.Task))
	if e.index > 0 {
		s += " at index " + strconv.Itoa(e.index-1)
	}
	return s + ": " + e.Field + ": " + e.Err.Error()
}

func (e *TaskError) Unwrap() error { return e.Err }

// MaxNameLen is the length, in bytes, of the longest Task.Name.
const MaxNameLen = 200

// MaxPauseNoteLen is the length, in bytes, of the longest Task.PauseNote.
const MaxPauseNoteLen = 1000

// MaxMaxRuns is the largest Task.MaxRuns. A task's job counts its slots
// by walking them, from its anchor up to now, at each start and each
// change of its times, holding the job's lock (schedule.First): up to
// MaxRuns calls of its Schedule's Next: about 10 ms for 100,000 slots of
// a spec of every second.
const MaxMaxRuns = 100_000

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText returns d as time.Duration's String: "1m30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a duration as time.ParseDuration does ("90s",
// "1h30m"), and refuses a negative one.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return errors.New("cron: duration " + err.Error())
	}
	*d = v
	return nil
}

// parseDuration reads s as time.ParseDuration does, and refuses a negative
// duration, with an error that quotes s.
func parseDuration(s string) (Duration, error) {
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, errors.New(strconv.Quote(clip(s)) + ": want a duration such as \"90s\" or \"1h30m\"")
	case v < 0:
		return 0, errors.New(strconv.Quote(clip(s)) + " is negative")
	}
	return Duration(v), nil
}

// Validate reports whether t is a definition that a Table can run,
// without a Table: a store of definitions calls it before it saves one.
// It returns a *TaskError naming the first field at fault, or nil. A Table
// checks the same in Apply, and also that the Handler is one of its own,
// that its Store can hold the Name, and that a task with MaxRuns has a
// Start or a Created (a store of definitions sets Created as it saves).
//
// A definition cannot run, and is refused, if:
//
//   - Name is empty, or longer than MaxNameLen; Handler is empty;
//   - Zone is not an IANA zone; Spec does not parse with ParseStrict (the
//     error wraps the *ParseError): a step such as "*/70" in the minutes,
//     which Parse reads as ISC cron does, as every hour, is refused;
//   - End is missing and neither Permanent, Once nor MaxRuns is set, or
//     End is set on a permanent task, or is before Start, or has passed;
//   - MaxRuns is negative, more than MaxMaxRuns, or above 1 on a Once
//     task; PauseOnFailures is negative or above
//     schedule.MaxPauseOnFailures;
//   - PauseNote is longer than MaxPauseNoteLen or not UTF-8;
//   - Overlap or Misfire is not one of the names in their docs;
//   - Timeout, Retry.Attempts or Retry.Backoff is negative; Created is
//     outside the years 1678 to 2262; CatchUpWindow or Jitter is
//     negative, not a whole number of seconds, or longer than 100 years;
//   - Start is more than 100 years ahead;
//   - Calendars has more than MaxCalendars names, one twice, or one that
//     cannot name a calendar (see Calendar.Name);
//   - Spec has no time to run at ("spec"): no time in the next 100 years
//     after now (such as "0 0 30 2 *", February 30), or none within
//     [Start, End]. For a Once task, the one time it runs at (see Once)
//     must exist, within 100 years of its anchor, and not after End; it
//     may have passed already: a job with no record owes it by its Misfire
//     policy (run-once and run-all run it at once, skip records it
//     Missed), so a Once task loaded after its time still runs once,
//     unless its CatchUpWindow has passed. So must the first of the
//     slots of a task with MaxRuns, counted from the same anchor; those
//     that have passed are owed as a Once task's.
//
// A Table loads a spec with Parse, not ParseStrict, so that a definition
// saved before it was refused runs as it did.
//
// A spec without a Zone or CRON_TZ is read in UTC here, and in the Table's
// location by a Table: whether it has a time to run at does not depend on
// the zone. A definition valid now may be refused later, once its End has
// passed.
func (t Task) Validate() error {
	_, err := compile(t, nil, time.UTC, ParseStrict, time.Now(), 0)
	return err
}

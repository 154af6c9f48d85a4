package cron_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// refused are definitions that cannot run, each with the field its error
// names, at 2000-01-01 00:00:00 UTC (a synctest bubble's start).
func refused(now time.Time) map[string]struct {
	field string
	task  cron.Task
} {
	base := func(mod func(*cron.Task)) cron.Task {
		d := task("t", "h", "0 * * * *")
		mod(&d)
		return d
	}
	return map[string]struct {
		field string
		task  cron.Task
	}{
		"no name":           {"name", base(func(d *cron.Task) { d.Name = "" })},
		"long name":         {"name", base(func(d *cron.Task) { d.Name = strings.Repeat("n", cron.MaxNameLen+1) })},
		"no handler":        {"handler", base(func(d *cron.Task) { d.Handler = "" })},
		"unknown zone":      {"zone", base(func(d *cron.Task) { d.Zone = "Nowhere/Town" })},
		"bad spec":          {"spec", base(func(d *cron.Task) { d.Spec = "61 * * * *" })},
		"no end":            {"end", base(func(d *cron.Task) { d.Permanent = false })},
		"end if permanent":  {"end", base(func(d *cron.Task) { d.End = now.Add(time.Hour) })},
		"end before start":  {"end", base(func(d *cron.Task) { d.Permanent, d.Start, d.End = false, now.Add(2*time.Hour), now.Add(time.Hour) })},
		"end passed":        {"end", base(func(d *cron.Task) { d.Permanent, d.End = false, now.Add(-time.Second) })},
		"end passed, once":  {"end", base(func(d *cron.Task) { d.Permanent, d.Once, d.End = false, true, now.Add(-time.Second) })},
		"misfire":           {"misfire", base(func(d *cron.Task) { d.Misfire = "sometimes" })},
		"overlap":           {"overlap", base(func(d *cron.Task) { d.Overlap = "true" })},
		"timeout":           {"timeout", base(func(d *cron.Task) { d.Timeout = -1 })},
		"attempts":          {"retry.attempts", base(func(d *cron.Task) { d.Retry.Attempts = -1 })},
		"backoff":           {"retry.backoff", base(func(d *cron.Task) { d.Retry = cron.Retry{Attempts: 3, Backoff: cron.Duration(-time.Second)} })},
		"created":           {"created", base(func(d *cron.Task) { d.Created = time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC) })},
		"window negative":   {"catchUpWindow", base(func(d *cron.Task) { d.CatchUpWindow = cron.Duration(-time.Second) })},
		"window fraction":   {"catchUpWindow", base(func(d *cron.Task) { d.CatchUpWindow = cron.Duration(1500 * time.Millisecond) })},
		"window too long":   {"catchUpWindow", base(func(d *cron.Task) { d.CatchUpWindow = cron.Duration(101 * 365 * 24 * time.Hour) })},
		"long note":         {"pauseNote", base(func(d *cron.Task) { d.Paused, d.PauseNote = true, strings.Repeat("n", cron.MaxPauseNoteLen+1) })},
		"note not UTF-8":    {"pauseNote", base(func(d *cron.Task) { d.Paused, d.PauseNote = true, "\xff" })},
		"failures negative": {"pauseOnFailures", base(func(d *cron.Task) { d.PauseOnFailures = -1 })},
		"failures too many": {"pauseOnFailures", base(func(d *cron.Task) { d.PauseOnFailures = schedule.MaxPauseOnFailures + 1 })},
		// Specs that have no time to run at.
		"february 30":    {"spec", base(func(d *cron.Task) { d.Spec = "0 0 30 2 *" })},
		"february 30 tz": {"spec", base(func(d *cron.Task) { d.Spec, d.Zone = "0 0 30 2 *", "Europe/Paris" })},
		"april 31, once": {"spec", base(func(d *cron.Task) { d.Spec, d.Once = "0 0 31 4 *", true })},
		"none in window": {"spec", base(func(d *cron.Task) {
			d.Spec, d.Permanent, d.Start, d.End = "0 12 * * *", false, now.Add(13*time.Hour), now.Add(14*time.Hour)
		})},
		"none before end": {"spec", base(func(d *cron.Task) { d.Spec, d.Permanent, d.End = "0 12 * * *", false, now.Add(11*time.Hour) })},
		"once after end": {"spec", base(func(d *cron.Task) {
			d.Spec, d.Once, d.Permanent, d.End = "0 12 * * *", true, false, now.Add(11*time.Hour)
		})},
		"in 150 years": {"start", base(func(d *cron.Task) { d.Start = now.AddDate(150, 0, 0) })},
		"maxRuns":      {"maxRuns", base(func(d *cron.Task) { d.MaxRuns = -1 })},
		"maxRuns once": {"maxRuns", base(func(d *cron.Task) { d.Once, d.Permanent, d.MaxRuns = true, false, 2 })},
		"maxRuns too many": {"maxRuns", base(func(d *cron.Task) {
			d.Permanent, d.MaxRuns, d.Created = false, cron.MaxMaxRuns+1, now
		})},
		"maxRuns, none": {"spec", base(func(d *cron.Task) {
			d.Spec, d.Permanent, d.MaxRuns = "0 0 30 2 *", false, 3
		})},
		"maxRuns after end": {"spec", base(func(d *cron.Task) {
			d.Spec, d.Permanent, d.MaxRuns, d.End = "0 12 * * *", false, 3, now.Add(11*time.Hour)
		})},
		"jitter":          {"jitter", base(func(d *cron.Task) { d.Jitter = -1 })},
		"jitter fraction": {"jitter", base(func(d *cron.Task) { d.Jitter = cron.Duration(1500 * time.Millisecond) })},
		"jitter too long": {"jitter", base(func(d *cron.Task) { d.Jitter = cron.Duration(101 * 36525 * 24 * 36 * time.Second) })},
	}
}

// valid are definitions that can run, though some look odd, at the same
// time.
func valid(now time.Time) map[string]cron.Task {
	base := func(mod func(*cron.Task)) cron.Task {
		d := task("t", "h", "0 * * * *")
		mod(&d)
		return d
	}
	return map[string]cron.Task{
		"plain": base(func(*cron.Task) {}),
		"all set": base(func(d *cron.Task) {
			d.Overlap, d.Misfire, d.Timeout, d.Retry = "buffer-one", "run-all", 90e9, cron.Retry{Attempts: 3, Backoff: 10e9}
		}),
		// A Once task whose one time has passed: its job owes it.
		"once, passed":         base(func(d *cron.Task) { d.Once, d.Start = true, now.Add(-30*time.Minute) }),
		"once, created before": base(func(d *cron.Task) { d.Once, d.Created = true, now.Add(-30*time.Minute) }),
		"february 29":          base(func(d *cron.Task) { d.Spec = "0 0 29 2 *" }),
		"february 30 or a mon": base(func(d *cron.Task) { d.Spec = "0 0 30 2 mon" }),
		"window ahead":         base(func(d *cron.Task) { d.Permanent, d.Start, d.End = false, now.AddDate(50, 0, 0), now.AddDate(51, 0, 0) }),
		"retry of one":         base(func(d *cron.Task) { d.Retry.Attempts = 1 }),
		"buffer-all":           base(func(d *cron.Task) { d.Overlap = "buffer-all" }),
		"catch-up window":      base(func(d *cron.Task) { d.CatchUpWindow = cron.Duration(100 * 36525 * 24 * 36 * time.Second) }),
		"created in future":    base(func(d *cron.Task) { d.Created = now.Add(time.Hour) }),
		"every":                base(func(d *cron.Task) { d.Spec = "@every 90m" }),
		"once, no end":         base(func(d *cron.Task) { d.Once, d.Permanent = true, false }),
		"maxRuns, no end":      base(func(d *cron.Task) { d.MaxRuns, d.Permanent, d.Created = 3, false, now }),
		"maxRuns, permanent":   base(func(d *cron.Task) { d.MaxRuns, d.Created = 3, now }),
		"maxRuns largest":      base(func(d *cron.Task) { d.MaxRuns, d.Permanent, d.Created = cron.MaxMaxRuns, false, now }),
		"maxRuns, once":        base(func(d *cron.Task) { d.MaxRuns, d.Once, d.Created = 1, true, now }),
		"maxRuns, passed":      base(func(d *cron.Task) { d.MaxRuns, d.Start, d.Permanent = 2, now.Add(-5*time.Hour), false }),
		"jitter":               base(func(d *cron.Task) { d.Jitter = cron.Duration(time.Minute) }),
	}
}

// Validate refuses each definition that cannot run with a *TaskError
// naming its field, and accepts the others; Apply refuses the same.
func TestTaskValidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }},
			cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		for name, c := range refused(now) {
			err := c.task.Validate()
			var te *cron.TaskError
			require.True(t, errors.As(err, &te), "%s: %v", name, err)
			assert.Equal(t, c.field, te.Field, "%s: %v", name, err)
			assert.Equal(t, c.task.Name, te.Task, name)

			_, err = tab.Apply(context.Background(), []cron.Task{c.task})
			require.True(t, errors.As(err, &te), "%s: Apply: %v", name, err)
			assert.Equal(t, c.field, te.Field, "%s: Apply: %v", name, err)
		}
		for _, ts := range tab.Tasks() {
			assert.Error(t, ts.Refused, "a refused task is reported, and does not run: %+v", ts)
			assert.Zero(t, ts.Next)
		}
		for name, d := range valid(now) {
			assert.NoError(t, d.Validate(), name)
			d.Name = name
			_, err := tab.Apply(context.Background(), []cron.Task{d})
			assert.NoError(t, err, name)
		}
	})
}

// Validate reads a spec as ParseStrict does: a step that only its first
// value would match is refused, naming the field; a Table still loads the
// same definition, saved before, as Parse reads it: every hour.
func TestTaskValidateIsStrict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ran := 0
		tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { ran++; return nil }},
			cron.WithLocation(time.UTC))
		defer tab.Stop(context.Background())
		d := task("t", "h", "*/70 * * * *")
		err := d.Validate()
		var te *cron.TaskError
		require.True(t, errors.As(err, &te), "%v", err)
		assert.Equal(t, "spec", te.Field)
		assert.EqualError(t, err, `cron: task "t": spec: cron: minute "*/70": step 70 is longer than the 60 values of 0-59 it steps through: only 0 would match`)
		var pe *cron.ParseError
		assert.True(t, errors.As(err, &pe), "wraps the *ParseError")

		_, err = tab.Apply(context.Background(), []cron.Task{d})
		require.NoError(t, err)
		time.Sleep(3*time.Hour + time.Minute)
		synctest.Wait()
		assert.Equal(t, 3, ran, "every hour, at minute 0")
	})
}

// The errors name what is wrong, in words a user can act on.
func TestTaskValidateMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		for name, want := range map[string]string{
			"february 30":     `cron: task "t": spec: no time in the next 100 years`,
			"none in window":  `cron: task "t": spec: no time between its start and end, 2000-01-01T13:00:00Z and 2000-01-01T14:00:00Z`,
			"none before end": `cron: task "t": spec: no time before its end, 2000-01-01T11:00:00Z`,
			"once after end":  `cron: task "t": spec: its one time, 2000-01-01T12:00:00Z, is after its end, 2000-01-01T11:00:00Z`,
			"end passed":      `cron: task "t": end: 1999-12-31T23:59:59Z has passed`,
			"backoff":         `cron: task "t": retry.backoff: negative: -1s`,
			"timeout":         `cron: task "t": timeout: negative: -1ns`,
			"maxRuns":         `cron: task "t": maxRuns: negative: -1`,
			"maxRuns once":    `cron: task "t": maxRuns: 2 on a once task, which runs once`,
			"maxRuns, none":   `cron: task "t": spec: no time in the 100 years after 2000-01-01T00:00:00Z`,
			"jitter fraction": `cron: task "t": jitter: 1.5s is not a whole number of seconds`,
			"no end":          `cron: task "t": end: required unless permanent, once or maxRuns`,
		} {
			assert.EqualError(t, refused(now)[name].task.Validate(), want, name)
		}
		// A spec that does not parse: the error wraps its *ParseError.
		var pe *cron.ParseError
		assert.True(t, errors.As(refused(now)["bad spec"].task.Validate(), &pe))
	})
}

// A Table whose handlers lack a task's Handler refuses it; Validate, which
// knows no handlers, does not.
func TestTaskValidateKnowsNoHandlers(t *testing.T) {
	d := task("t", "unknown", "@hourly")
	require.NoError(t, d.Validate())
	tab := cron.NewTable(map[string]cron.Handler{"h": func(context.Context, string, schedule.Run) error { return nil }})
	defer tab.Stop(context.Background())
	_, err := tab.Apply(context.Background(), []cron.Task{d})
	assert.EqualError(t, err, `cron: task "t": handler: no handler "unknown"`)
}

// DecodeTasks reads what json.Marshal writes of a list of Tasks.
func TestDecodeTasksRoundTrip(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	want := []cron.Task{
		{Name: "a", Handler: "h", BusinessID: "b", Spec: "0 9 * * *", Zone: "Europe/Paris", Start: at, End: at.AddDate(1, 0, 0),
			Once: true, Paused: true, Overlap: "replace", Misfire: "run-all", Timeout: cron.Duration(90 * time.Second),
			Retry: cron.Retry{Attempts: 3, Backoff: cron.Duration(10 * time.Second)}, Created: at.Add(-time.Hour),
			MaxRuns: 1, Jitter: cron.Duration(time.Minute), CatchUpWindow: cron.Duration(time.Hour)},
		{Name: "b", Handler: "h", Spec: "@hourly", Permanent: true},
	}
	b, err := json.Marshal(want)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"timeout":"1m30s","retry":{"attempts":3,"backoff":"10s"}`)
	assert.Contains(t, string(b), `"maxRuns":1,`)
	assert.Contains(t, string(b), `"jitter":"1m0s"`)
	assert.NotContains(t, string(b), `"retry":{}`, "a zero Retry is left out")
	got, err := cron.DecodeTasks(bytes.NewReader(b))
	require.NoError(t, err)
	assert.Equal(t, want, got)

	got, err = cron.DecodeTasks(strings.NewReader(" [ ] \n"))
	require.NoError(t, err)
	assert.Empty(t, got)
}

// DecodeTasks refuses what encoding/json would let pass silently: a field
// that Task does not have, at the top or in "retry", a field given twice,
// a definition without a name, and data after the array; its errors name
// the task, its index and the field.
func TestDecodeTasksRefuses(t *testing.T) {
	for in, want := range map[string]string{
		`[{"name": "a", "handler": "h", "enabled": true}]`:          `cron: task "a" at index 0: enabled: unknown field`,
		`[{"name": "a"}, {"name": "b", "overlap": true}]`:           `cron: task "b" at index 1: overlap: want a JSON string`,
		`[{"name": "a", "retry": {"attempts": 3, "backof": "1s"}}]`: `cron: task "a" at index 0: retry.backof: unknown field`,
		`[{"name": "a", "retry": 3}]`:                               `cron: task "a" at index 0: retry: want a JSON object`,
		`[{"name": "a", "Spec": "@daily", "spec": "@hourly"}]`:      `cron: task "a" at index 0: spec: given twice`,
		`[{"name": "a"}, {"handler": "h", "spec": "@daily"}]`:       `cron: task "" at index 1: name: missing`,
		`[{"name": ""}]`:                     `cron: task "" at index 0: name: empty`,
		`[{"name": 7}]`:                      `cron: task "" at index 0: name: want a string`,
		`[{"name": "a", "timeout": "soon"}]`: `cron: task "a" at index 0: timeout: "soon": want a duration such as "90s" or "1h30m"`,
		`[{"name": "a", "timeout": 90}]`:     `cron: task "a" at index 0: timeout: want a duration such as "90s" or "1h30m"`,
		`[{"name": "a", "timeout": "-1s"}]`:  `cron: task "a" at index 0: timeout: "-1s" is negative`,
		`[{"name": "a", "end": "tomorrow"}]`: `cron: task "a" at index 0: end: want a time in RFC 3339, such as "2026-01-02T15:04:05Z"`,
		`["a"]`:                              `cron: task "" at index 0: definition: want a JSON object`,
		`[{"name": "a"}] [{"name": "b"}]`:    `cron: tasks: data after the array`,
		`[{"name": "a"}] x`:                  `cron: tasks: data after the array`,
		`{"name": "a"}`:                      `cron: tasks: want a JSON array of task definitions`,
		`[{"name": "a",}]`:                   `cron: tasks: definition at index 0: invalid character '}' looking for beginning of object key string`,
		`[{"name": "a"}`:                     `cron: tasks: unexpected end of JSON input`,
		``:                                   `cron: tasks: unexpected end of JSON input`,
		`[{"name": "a", "` + strings.Repeat("x", 100) + `": 1}]`: `cron: task "a" at index 0: ` + strings.Repeat("x", 64) + `...: unknown field`,
	} {
		ts, err := cron.DecodeTasks(strings.NewReader(in))
		assert.EqualError(t, err, want, in)
		assert.Nil(t, ts, in)
	}
	_, err := cron.DecodeTasks(strings.NewReader(`[{"name": "a", "enabled": true}]`))
	var te *cron.TaskError
	require.True(t, errors.As(err, &te))
	assert.Equal(t, cron.TaskError{Task: "a", Field: "enabled", Err: te.Err}, cron.TaskError{Task: te.Task, Field: te.Field, Err: te.Err})
}

// Names match Task's tags regardless of case, as encoding/json matches
// them, and null leaves a field at its default.
func TestDecodeTasksAsEncodingJSON(t *testing.T) {
	in := `[{"Name": "a", "HANDLER": "h", "spec": "@daily", "permanent": true, "zone": null, "retry": null}]`
	got, err := cron.DecodeTasks(strings.NewReader(in))
	require.NoError(t, err)
	var want []cron.Task
	require.NoError(t, json.Unmarshal([]byte(in), &want))
	assert.Equal(t, want, got)
	assert.Equal(t, "h", got[0].Handler)
}

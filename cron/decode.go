package cron

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// DecodeTasks reads a JSON array of task definitions, such as a service
// keeps in a file, in the form of Task's JSON tags:
//
//	[{"name": "shop-1 daily", "handler": "report", "spec": "0 9 * * *",
//	  "permanent": true, "timeout": "90s", "retry": {"attempts": 3, "backoff": "10s"}}]
//
// It is stricter than encoding/json, so that a typo is an error rather
// than a field silently left at its default: a field that Task does not
// have, a field given twice, a definition without a "name" (or with an
// empty one) and data after the array are refused. Field names match
// Task's tags regardless of case, as encoding/json matches them. The
// error of a definition is a *TaskError naming the task, if it has a
// name, its index in the array and the field, such as
//
//	cron: task "shop-1 daily" at index 0: enabled: unknown field
//
// DecodeTasks reads definitions, and does not validate them: Apply and
// Task.Validate do.
func DecodeTasks(r io.Reader) ([]Task, error) {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonError("cron: tasks: ", err)
	}
	if tok != json.Delim('[') {
		return nil, errors.New("cron: tasks: want a JSON array of task definitions")
	}
	ts := []Task{}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, jsonError("cron: tasks: definition at index "+strconv.Itoa(i)+": ", err)
		}
		t, err := decodeTask(raw, i)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	if _, err := dec.Token(); err != nil { // the closing ]
		return nil, jsonError("cron: tasks: ", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("cron: tasks: data after the array")
	}
	return ts, nil
}

// A member is a member of a JSON object, in the order it came.
type member struct {
	key string
	val json.RawMessage
}

// members returns the members of raw, a JSON object, or an error saying
// what it is instead.
func members(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("want a JSON object")
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err // raw is valid JSON: this cannot happen
		}
		var m member
		m.key, _ = tok.(string) // an object's keys are strings
		if err := dec.Decode(&m.val); err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// taskFields are the JSON names of Task's fields, lower case, and their
// indexes; retryFields, Retry's.
var taskFields, retryFields = jsonFields(reflect.TypeFor[Task]()), jsonFields(reflect.TypeFor[Retry]())

func jsonFields(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[strings.ToLower(name)] = i
	}
	return m
}

var (
	durationType = reflect.TypeFor[Duration]()
	timeType     = reflect.TypeFor[time.Time]()
	retryType    = reflect.TypeFor[Retry]()
)

// decodeTask decodes raw, the definition at index i.
func decodeTask(raw json.RawMessage, i int) (Task, error) {
	var t Task
	fail := func(field string, err error) (Task, error) {
		return Task{}, &TaskError{Task: t.Name, Field: field, Err: err, index: i + 1}
	}
	ms, err := members(raw)
	if err != nil {
		return fail("definition", err)
	}
	named := false
	for _, m := range ms {
		if strings.EqualFold(m.key, "name") {
			if err := json.Unmarshal(m.val, &t.Name); err != nil {
				return fail("name", errors.New("want a string"))
			}
			named = true
		}
	}
	switch {
	case !named:
		return fail("name", errors.New("missing"))
	case t.Name == "":
		return fail("name", errors.New("empty"))
	}
	if field, err := decodeFields(reflect.ValueOf(&t).Elem(), taskFields, ms, ""); err != nil {
		return fail(field, err)
	}
	return t, nil
}

// decodeFields sets the fields of v, a struct whose JSON names fields
// holds, from the members ms, and returns the field at fault, its name
// after prefix, if it cannot.
func decodeFields(v reflect.Value, fields map[string]int, ms []member, prefix string) (string, error) {
	given := map[int]bool{}
	for _, m := range ms {
		key := prefix + clip(m.key)
		i, ok := fields[strings.ToLower(m.key)]
		if !ok {
			return key, errors.New("unknown field")
		}
		if given[i] {
			return key, errors.New("given twice")
		}
		given[i] = true
		f := v.Field(i)
		if bytes.Equal(m.val, []byte("null")) {
			continue // the zero value, as encoding/json leaves it
		}
		switch f.Type() {
		case durationType:
			var s string
			if err := json.Unmarshal(m.val, &s); err != nil {
				return key, errors.New("want a duration such as \"90s\" or \"1h30m\"")
			}
			d, err := parseDuration(s)
			if err != nil {
				return key, err
			}
			f.Set(reflect.ValueOf(d))
		case timeType:
			if err := json.Unmarshal(m.val, f.Addr().Interface()); err != nil {
				return key, errors.New("want a time in RFC 3339, such as \"2026-01-02T15:04:05Z\"")
			}
		case retryType:
			sub, err := members(m.val)
			if err != nil {
				return key, err
			}
			if field, err := decodeFields(f, retryFields, sub, key+"."); err != nil {
				return field, err
			}
		default:
			if err := json.Unmarshal(m.val, f.Addr().Interface()); err != nil {
				return key, errors.New("want a JSON " + map[reflect.Kind]string{reflect.String: "string", reflect.Bool: "boolean", reflect.Int: "integer", reflect.Slice: "array of strings"}[f.Kind()])
			}
		}
	}
	return "", nil
}

// jsonError returns err, an error of reading JSON, after prefix.
func jsonError(prefix string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New(prefix + "unexpected end of JSON input")
	}
	return fmt.Errorf("%s%w", prefix, err)
}

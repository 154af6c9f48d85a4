package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// A file of definitions: a JSON array of cron.Task objects, as
// cron.DecodeTasks reads it (a single object is read as an array of one),
// and the line where each begins, so that an error names it.

// A taskFile is a file of definitions read.
type taskFile struct {
	name  string      // its path, or "stdin"
	tasks []cron.Task // its definitions
	lines []int       // the line of each, from 1
}

// readTasks reads the file of definitions at path, "-" for standard
// input. An error names the file, and the line, index, task and field of
// the definition at fault.
func (c *cli) readTasks(path string) (*taskFile, error) {
	f := &taskFile{name: path}
	var data []byte
	var err error
	if path == "-" {
		f.name = "stdin"
		data, err = io.ReadAll(c.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		data = append(append([]byte("["), data...), ']')
	}
	spans := elementSpans(data)
	f.lines = make([]int, len(spans))
	for i, sp := range spans {
		f.lines[i] = 1 + bytes.Count(data[:sp[0]], []byte("\n"))
	}
	f.tasks, err = cron.DecodeTasks(bytes.NewReader(data))
	if err == nil {
		return f, nil
	}
	var te *cron.TaskError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		// DecodeTasks stopped at the first definition it refused: the
		// first that it refuses alone.
		for i, sp := range spans {
			raw := data[sp[0]:sp[1]]
			if _, e := cron.DecodeTasks(io.MultiReader(strings.NewReader("["), bytes.NewReader(raw), strings.NewReader("]"))); e != nil {
				return nil, fmt.Errorf("%s:%d: %s", f.name, f.lines[i], strings.TrimPrefix(err.Error(), "cron: "))
			}
		}
	case errors.As(err, &se):
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return nil, fmt.Errorf("%s:%d: %w", f.name, line, err)
	}
	return nil, fmt.Errorf("%s: %w", f.name, err)
}

// elementSpans returns the offsets of the start and end of each element
// of the JSON array in data, up to the first that does not read.
func elementSpans(data []byte) [][2]int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil
	}
	var spans [][2]int
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			break
		}
		end := int(dec.InputOffset())
		spans = append(spans, [2]int{end - len(raw), end})
	}
	return spans
}

// error names the file, and the line of each definition refused, in err,
// an error of writing f's definitions; f may be nil, for definitions
// given by flags.
func (f *taskFile) error(err error) error {
	if f == nil || err == nil {
		return err
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var lines []string
	for _, e := range errs {
		var be *sqlstore.BulkError
		if !errors.As(e, &be) || be.Index >= len(f.lines) {
			lines = append(lines, f.name+": "+e.Error())
			continue
		}
		lines = append(lines, f.name+":"+strconv.Itoa(f.lines[be.Index])+": "+strings.TrimPrefix(be.Error(), "sqlstore: "))
	}
	return &fileError{msg: strings.Join(lines, "\n"), err: err}
}

// A fileError is an error of writing a file's definitions, its message
// naming the file and lines.
type fileError struct {
	msg string
	err error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.err }

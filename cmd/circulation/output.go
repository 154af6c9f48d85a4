package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// Output: tables for people, JSON for scripts.

// writeJSON writes v to standard output as indented JSON.
func (c *cli) writeJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// A table writes rows of cells in aligned columns, each cell's text made
// safe for a terminal.
type table struct{ w *tabwriter.Writer }

func (c *cli) newTable(header ...string) *table {
	t := &table{w: tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, s := range cells {
		if i > 0 {
			fmt.Fprint(t.w, "\t")
		}
		fmt.Fprint(t.w, cell(s))
	}
	fmt.Fprint(t.w, "\n")
}

func (t *table) flush() error { return t.w.Flush() }

// cell returns s with its control characters escaped, so that a name
// cannot break a table's columns or the terminal; "-" for empty.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	q := fmt.Sprintf("%+q", s)
	return q[1 : len(q)-1]
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// A record is a schedule.Record in JSON.
type record struct {
	Job      string     `json:"job"`
	Due      time.Time  `json:"due"`
	Status   string     `json:"status"`
	Reason   string     `json:"reason"`
	Attempt  int        `json:"attempt"`
	Node     string     `json:"node"`
	Start    *time.Time `json:"start,omitempty"`
	End      *time.Time `json:"end,omitempty"`
	Planned  *time.Time `json:"planned,omitempty"`
	Duration string     `json:"duration,omitempty"`
	Error    string     `json:"error,omitempty"`
}

func toRecord(r schedule.Record) *record {
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	return &record{Job: r.Job, Due: r.Due.UTC(), Status: r.Status.String(), Reason: r.Reason.String(),
		Attempt: r.Attempt, Node: r.Node, Start: opt(r.Start), End: opt(r.End), Planned: opt(r.Planned),
		Duration: duration(r), Error: r.Err}
}

// duration is how long r's run took, or "" if it has not ended.
func duration(r schedule.Record) string {
	if r.Start.IsZero() || r.End.IsZero() {
		return ""
	}
	d := r.End.Sub(r.Start)
	if d >= time.Second {
		d = d.Round(time.Millisecond)
	}
	return d.String()
}

// timeLayout is how a time reads in a table: to the second, with its
// zone's abbreviation.
const timeLayout = "2006-01-02 15:04:05 MST"

// when formats t in loc for a table, "-" for the zero time.
func when(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format(timeLayout)
}

// firstLine returns the first line of s, with "..." if more followed.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + "..."
	}
	return s
}

package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

const historyUsage = "circulation history TASK [-n 20] [-zone Z]"

// history writes the latest records of a task or job, newest first.
func (c *cli) history(args []string) error {
	fs := c.flags("history")
	n := fs.Int("n", 20, "how many records, newest first")
	zone := fs.String("zone", "", "the IANA zone of the times shown (default: this machine's)")
	rest, err := c.parse(fs, historyUsage, args, 1, 1)
	if err != nil {
		return err
	}
	if *n < 0 {
		return usagef(historyUsage+flagList(fs), "history: -n %d is negative", *n)
	}
	loc, err := loadZone(*zone)
	if err != nil {
		return err
	}
	s, done, err := c.store()
	if err != nil {
		return err
	}
	defer done()
	recs, err := s.History(c.ctx, rest[0], *n)
	if err != nil {
		return err
	}
	if c.json {
		out := make([]*record, len(recs))
		for i, r := range recs {
			out[i] = toRecord(r)
		}
		return c.writeJSON(out)
	}
	if len(recs) == 0 {
		_, err := fmt.Fprintf(c.stdout, "no runs recorded for %s\n", cell(rest[0]))
		return err
	}
	return c.records(recs, loc)
}

// records writes recs as a table, their times in loc.
func (c *cli) records(recs []schedule.Record, loc *time.Location) error {
	t := c.newTable("DUE", "STATUS", "REASON", "ATTEMPT", "NODE", "DURATION", "ERROR")
	for _, r := range recs {
		t.row(when(r.Due, loc), r.Status.String(), r.Reason.String(), strconv.Itoa(r.Attempt), r.Node, duration(r), firstLine(r.Err))
	}
	return t.flush()
}

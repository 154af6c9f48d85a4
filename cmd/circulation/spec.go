package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/circulation-go/circulation/cron"
)

const describeUsage = "circulation describe SPEC"

// describe writes a cron spec in words (cron.Describe).
func (c *cli) describe(args []string) error {
	fs := c.flags("describe")
	rest, err := c.parse(fs, describeUsage, args, 1, 1)
	if err != nil {
		return err
	}
	d, err := cron.Describe(rest[0])
	if err != nil {
		return err
	}
	if c.json {
		return c.writeJSON(struct {
			Spec        string `json:"spec"`
			Description string `json:"description"`
		}{rest[0], d})
	}
	fmt.Fprintln(c.stdout, d)
	return nil
}

const nextUsage = "circulation next SPEC [-n 10] [-zone Z] [-from TIME]"

// next writes the next times of a cron spec, as a Table runs it (cron.Parse).
func (c *cli) next(args []string) error {
	fs := c.flags("next")
	n := fs.Int("n", 10, "how many times")
	zone := fs.String("zone", "", "the IANA zone the spec is read in (default: this machine's)")
	from := fs.String("from", "", "the time after which to list, an RFC 3339 time (default: now)")
	rest, err := c.parse(fs, nextUsage, args, 1, 1)
	if err != nil {
		return err
	}
	if *n < 1 {
		return usagef(nextUsage+flagList(fs), "next: -n %d: want 1 or more", *n)
	}
	loc, err := loadZone(*zone)
	if err != nil {
		return err
	}
	at := time.Now()
	if *from != "" {
		if at, err = time.Parse(time.RFC3339, *from); err != nil {
			return usagef(nextUsage+flagList(fs), "next: -from: %v", err)
		}
	}
	s, err := cron.Parse(rest[0], loc)
	if err != nil {
		return err
	}
	var pe *cron.ParseError
	if _, err := cron.ParseStrict(rest[0], loc); errors.As(err, &pe) {
		fmt.Fprintf(c.stderr, "circulation: warning: a definition with this spec is refused: %v\n", err)
	}
	var times []time.Time
	for t := s.Next(at); !t.IsZero() && len(times) < *n; t = s.Next(t) {
		times = append(times, t)
	}
	if c.json {
		if times == nil {
			times = []time.Time{}
		}
		return c.writeJSON(times)
	}
	if len(times) == 0 {
		fmt.Fprintln(c.stdout, "no time to run at")
		return nil
	}
	for _, t := range times {
		fmt.Fprintln(c.stdout, t.Format("Mon "+timeLayout))
	}
	return nil
}

// loadZone loads the zone name: this machine's if empty.
func loadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("zone %q: %w", name, err)
	}
	return loc, nil
}

package admin

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// The chart of the overview: the records of the last 24 hours, by the hour
// of their Due and by outcome, drawn by the server as an SVG of stacked
// bars, each outcome with a pattern of its own as well as a colour, so
// that it reads in grey; and the same numbers as a table.
const (
	chartHours = 24
	// maxHistory bounds the records of one job that the chart reads
	// from a Store that is not a RunCounter: a job due more often than
	// every 21 s counts its latest 4,096 records only.
	maxHistory = 4096
)

// The outcomes the chart tells apart, in the order of its stacks, bottom
// up.
var outcomes = []struct {
	key   string // its class and its pattern's id, after "o-"
	label string
}{
	{"succeeded", "Succeeded"},
	{"failed", "Failed"},
	{"skipped", "Skipped or missed"},
	{"other", "Running, cancelled or handed over"},
}

// outcomeOf returns the index in outcomes of a record of status s.
func outcomeOf(s schedule.Status) int {
	switch s {
	case schedule.Succeeded:
		return 0
	case schedule.Failed:
		return 1
	case schedule.Skipped, schedule.Missed:
		return 2
	}
	return 3
}

// A chart is the runs per hour, as a page draws them and api/overview
// returns them.
type chart struct {
	From     time.Time `json:"from"` // the first hour's start, in the page's zone
	Step     string    `json:"step"`
	Outcomes []string  `json:"outcomes"`
	Hours    []hour    `json:"hours"`
	Totals   []int     `json:"totals"` // by outcome, over the 24 hours
	// What the SVG draws.
	Max    int      `json:"-"` // the top of the scale
	Ticks  []tick   `json:"-"`
	Labels []tick   `json:"-"` // of the hours, every 3
	Legend []legend `json:"-"`
}

// An hour of the chart: its counts by outcome, and its bar.
type hour struct {
	Start  time.Time `json:"start"`
	Counts []int     `json:"counts"` // by outcome
	Total  int       `json:"-"`
	Text   string    `json:"-"` // "14:00–15:00: 12 succeeded, ..."
	Label  string    `json:"-"` // "14:00"
	X, W   float64   `json:"-"`
	Segs   []seg     `json:"-"`
}

// A seg is one outcome's part of an hour's bar.
type seg struct {
	Key  string
	Y, H float64
}

// A legend is an outcome's key and its name.
type legend struct{ Key, Label string }

// A tick is a line of the scale, or the label of an hour.
type tick struct {
	Pos  float64
	Text string
}

// The SVG's geometry, in its own units: assets/overview.html draws it in
// a viewBox of 720 by 220, the scale's labels left of plotL, the hours'
// under plotB.
const (
	plotL, plotR = 44.0, 712.0
	plotT, plotB = 10.0, 190.0
	barFill      = 0.72 // of an hour's width
)

// readChart counts the records of names due in the last 24 hours, by hour:
// in one call of a Store that is a RunCounter, and from the History of
// each of names otherwise.
func (h *handler) readChart(ctx context.Context, names []string, now time.Time) (*chart, error) {
	from := now.Truncate(time.Hour).Add(-(chartHours - 1) * time.Hour)
	counts := make([][]int, chartHours)
	for i := range counts {
		counts[i] = make([]int, len(outcomes))
	}
	add := func(due time.Time, s schedule.Status, n int) {
		if due.Before(from) {
			return
		}
		if i := int(due.Sub(from) / time.Hour); i < chartHours {
			counts[i][outcomeOf(s)] += n
		}
	}
	var err error
	if rc, ok := h.o.Store.(RunCounter); ok {
		var byHour []map[schedule.Status]int
		byHour, err = rc.CountRuns(ctx, from, time.Hour, chartHours)
		for i, m := range byHour {
			for s, n := range m {
				add(from.Add(time.Duration(i)*time.Hour), s, n)
			}
		}
	} else {
		err = h.histories(ctx, names, from, add)
	}
	return drawChart(from.In(h.o.Location), counts), err
}

// histories calls add for each record of each of names due from from on,
// reading their histories back to from. It stops at the first error: a
// store that is down costs one call.
func (h *handler) histories(ctx context.Context, names []string, from time.Time, add func(time.Time, schedule.Status, int)) error {
	for i, name := range names {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		for limit := 32; ; limit *= 2 {
			rs, err := h.o.Store.History(ctx, name, limit)
			if err != nil {
				return err
			}
			if len(rs) < limit || rs[len(rs)-1].Due.Before(from) || limit >= maxHistory {
				for _, r := range rs {
					add(r.Due, r.Status, 1)
				}
				break
			}
		}
	}
	return nil
}

// drawChart lays out the chart of counts, by hour from from and by outcome.
func drawChart(from time.Time, counts [][]int) *chart {
	c := &chart{From: from, Step: "1h", Totals: make([]int, len(outcomes))}
	for _, o := range outcomes {
		c.Outcomes = append(c.Outcomes, o.label)
		c.Legend = append(c.Legend, legend{Key: o.key, Label: o.label})
	}
	most := 0
	for _, cs := range counts {
		t := 0
		for j, n := range cs {
			t += n
			c.Totals[j] += n
		}
		most = max(most, t)
	}
	c.Max = niceCeil(most)
	scale := (plotB - plotT) / float64(c.Max)
	slot := (plotR - plotL) / float64(len(counts))
	for _, v := range []int{0, c.Max / 2, c.Max} {
		c.Ticks = append(c.Ticks, tick{Pos: round1(plotB - float64(v)*scale), Text: strconv.Itoa(v)})
	}
	for i, cs := range counts {
		start := from.Add(time.Duration(i) * time.Hour)
		hr := hour{Start: start, Counts: cs, Label: start.Format("15:04"),
			X: round1(plotL + float64(i)*slot + slot*(1-barFill)/2), W: round1(slot * barFill)}
		text := start.Format("Jan 2 15:04") + "–" + start.Add(time.Hour).Format("15:04") + ":"
		y := plotB
		for j, n := range cs {
			hr.Total += n
			if j > 0 {
				text += ","
			}
			text += " " + strconv.Itoa(n) + " " + lowerFirst(outcomes[j].label)
			if n == 0 {
				continue
			}
			ht := float64(n) * scale
			y -= ht
			hr.Segs = append(hr.Segs, seg{Key: outcomes[j].key, Y: round1(y), H: round1(ht)})
		}
		hr.Text = text
		c.Hours = append(c.Hours, hr)
		if i%3 == 0 {
			c.Labels = append(c.Labels, tick{Pos: round1(plotL + (float64(i)+.5)*slot), Text: hr.Label})
		}
	}
	return c
}

// niceCeil returns the least of 1, 2, 5, 10, 20, 50... that is at least
// n, and an even number if more than 1, so that half of it is a tick.
func niceCeil(n int) int {
	if n <= 2 {
		return 2
	}
	for p := 1; ; p *= 10 {
		for _, m := range []int{2, 4, 10} {
			if m*p >= n {
				return m * p
			}
		}
	}
}

// round1 rounds f to a tenth, which is all an SVG of this size needs.
func round1(f float64) float64 {
	v, _ := strconv.ParseFloat(fmt.Sprintf("%.1f", f), 64)
	return v
}

// lowerFirst returns s with its first letter in lower case.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]|0x20) + s[1:]
}

// Description says, for the SVG's desc, what the chart shows.
func (c *chart) Description() string {
	s := "Stacked bars, one per hour from " + c.From.Format("Jan 2 15:04 MST") + ", by outcome. Totals:"
	for j, o := range outcomes {
		if j > 0 {
			s += ","
		}
		s += " " + strconv.Itoa(c.Totals[j]) + " " + lowerFirst(o.label)
	}
	return s + ". The table below has every hour."
}

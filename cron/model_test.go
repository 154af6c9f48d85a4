package cron

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// model lists, minute by minute, the instants in [from, to) at which a
// five-field spec runs by ISC cron's rules, computed from their
// definition with the time package rather than with Next's arithmetic:
//
//   - an instant whose local time matches runs, unless the job is pinned
//     and the same local time came earlier (the clocks went back);
//   - a pinned job also runs at an instant when the clocks jump forward,
//     if a local time they skip matches.
func model(s *spec, from, to int64, z *zoneMinutes) []int64 {
	offsets := map[int]bool{}
	for _, off := range z.offs {
		offsets[off] = true
	}
	offAt := z.at
	matches := func(wall int64) bool {
		w := time.Unix(wall, 0).UTC()
		y, mo, d := w.Date()
		h, mi, sec := w.Clock()
		dom := s.dom&(1<<d) != 0
		dow := s.dow&(1<<w.Weekday()) != 0
		day := dom && dow
		if s.dayOr {
			day = dom || dow
		}
		_ = y
		return day && s.month&(1<<mo) != 0 && s.hour&(1<<h) != 0 && s.minute&(1<<mi) != 0 && s.second&(1<<sec) != 0
	}
	var out []int64
	for x := from; x < to; x += 60 {
		off := offAt(x)
		wall := x + int64(off)
		run := matches(wall)
		if run && s.pinned {
			for o := range offsets {
				if y := wall - int64(o); y < x && offAt(y) == o {
					run = false // this local time came earlier
				}
			}
		}
		if prev := offAt(x - 60); s.pinned && !run && prev < off { // the clocks change on the minute
			for w := x + int64(prev); w < wall; w += 60 {
				if matches(w) {
					run = true // a skipped local time: run at the jump
					break
				}
			}
		}
		if run {
			out = append(out, x)
		}
	}
	return out
}

// zoneMinutes holds a location's offset at each minute from base on, read
// with the time package once for all the specs checked around a change.
type zoneMinutes struct {
	loc  *time.Location
	base int64
	offs []int
}

func newZoneMinutes(loc *time.Location, from, to int64) *zoneMinutes {
	z := &zoneMinutes{loc: loc, base: from}
	for x := from; x < to; x += 60 {
		_, off := time.Unix(x, 0).In(loc).Zone()
		z.offs = append(z.offs, off)
	}
	return z
}

// at returns the offset at x, a whole minute.
func (z *zoneMinutes) at(x int64) int {
	if i := (x - z.base) / 60; x >= z.base && i < int64(len(z.offs)) && x%60 == 0 {
		return z.offs[i]
	}
	_, off := time.Unix(x, 0).In(z.loc).Zone()
	return off
}

func randomSpec(r *rand.Rand, day time.Time) string {
	pick := func(choices ...string) string { return choices[r.IntN(len(choices))] }
	minute := pick("*", "0", "30", "15,45", "*/15", "*/20", "10-50/20", "0-59/30", "5", "59", "?",
		fmt.Sprint(r.IntN(60)), fmt.Sprintf("%d/%d", r.IntN(30), 1+r.IntN(30)))
	hour := pick("*", "*/2", "*/3", "0", "1", "2", "3", "23", "1,2", "0-3", "1-2", "2-23/3", "?",
		fmt.Sprint(r.IntN(24)), fmt.Sprintf("%d-%d", r.IntN(4), 4+r.IntN(20)))
	dom := pick("*", "*", "?", fmt.Sprint(day.Day()), fmt.Sprintf("%d,%d", day.Day(), 1+day.Day()%28), "1-15", "*/2")
	month := pick("*", "*", fmt.Sprint(int(day.Month())), "1-6")
	dow := pick("*", "*", "?", fmt.Sprint(int(day.Weekday())), "sun", "1-5", "*/3")
	return fmt.Sprintf("%s %s %s %s %s", minute, hour, dom, month, dow)
}

var modelZones = []string{"America/New_York", "Europe/London", "Australia/Lord_Howe", "Australia/Sydney", "America/Santiago", "Asia/Tehran"}

// changes returns the instants in year at which loc's offset changes.
func changes(loc *time.Location, year int) []time.Time {
	var out []time.Time
	at := time.Date(year, 1, 1, 0, 0, 0, 0, loc)
	for {
		_, end := at.ZoneBounds()
		if end.IsZero() || end.Year() > year {
			return out
		}
		at = end
		_, before := end.Add(-time.Second).Zone()
		_, after := end.Zone()
		if before != after {
			out = append(out, end)
		}
	}
}

// around returns the whole days around the change at end, and the zone's
// offsets over them and the two days before.
func around(end time.Time) (from, to int64, z *zoneMinutes) {
	from, to = end.Unix()-end.Unix()%86400-2*86400, end.Unix()-end.Unix()%86400+3*86400
	return from, to, newZoneMinutes(end.Location(), from-2*86400, to)
}

// checkModel fails t unless Next gives the model's times for text in
// [from, to).
func checkModel(t *testing.T, text string, loc *time.Location, from, to int64, z *zoneMinutes) {
	t.Helper()
	p, err := Parse(text, loc)
	require.NoError(t, err)
	s := p.(*spec)
	want := model(s, from, to, z)
	var got []int64
	for x := s.Next(time.Unix(from-1, 0)); !x.IsZero() && x.Unix() < to; x = s.Next(x) {
		got = append(got, x.Unix())
	}
	require.Equal(t, format(want, loc), format(got, loc), "%s %q from %v", loc, text, time.Unix(from, 0).In(loc))
}

// Next agrees with the model for random specs, whole days around every
// change of the clocks in two years of zones with one-hour and half-hour
// shifts, north and south, at night and at midnight (Tehran still had
// daylight saving in 2021).
func TestNextAgreesWithModel(t *testing.T) {
	specs := 25
	if testing.Short() {
		specs = 5
	}
	r := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for _, zone := range modelZones {
		loc, err := time.LoadLocation(zone)
		require.NoError(t, err)
		for _, year := range []int{2021, 2026} {
			for _, end := range changes(loc, year) {
				from, to, z := around(end)
				for range specs {
					checkModel(t, randomSpec(r, end), loc, from, to, z)
					checked++
				}
			}
		}
	}
	t.Logf("%d specs checked", checked)
}

// FuzzNextAgreesWithModel draws the spec, the zone and the change of the
// clocks from its inputs: go test -fuzz FuzzNextAgreesWithModel explores
// beyond the fixed draws of TestNextAgreesWithModel.
func FuzzNextAgreesWithModel(f *testing.F) {
	for i := range uint64(6) {
		f.Add(i, i*7919)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		r := rand.New(rand.NewPCG(a, b))
		loc, err := time.LoadLocation(modelZones[r.IntN(len(modelZones))])
		require.NoError(t, err)
		cs := changes(loc, 2021+r.IntN(6))
		if len(cs) == 0 {
			return // Tehran after 2022
		}
		end := cs[r.IntN(len(cs))]
		from, to, z := around(end)
		checkModel(t, randomSpec(r, end), loc, from, to, z)
	})
}

func format(xs []int64, loc *time.Location) []string {
	var out []string
	for _, x := range xs {
		out = append(out, time.Unix(x, 0).In(loc).Format(time.RFC3339))
	}
	return out
}

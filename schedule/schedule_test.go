package schedule_test

import (
	"math"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

func TestEveryIsAnchoredAtTheEpoch(t *testing.T) {
	s := schedule.Every(time.Hour)
	assert.Equal(t, time.Date(2024, 5, 1, 11, 0, 0, 0, time.UTC), s.Next(time.Date(2024, 5, 1, 10, 59, 59, 999, time.UTC)))
	assert.Equal(t, time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), s.Next(time.Date(2024, 5, 1, 11, 0, 0, 0, time.UTC)), "strictly after")
	assert.Equal(t, time.Date(1960, 1, 1, 1, 0, 0, 0, time.UTC), s.Next(time.Date(1960, 1, 1, 0, 30, 0, 0, time.UTC)), "before the epoch")
	assert.Equal(t, time.Unix(0, 0).UTC(), s.Next(time.Unix(-1, 0).UTC()))
	// Far from the epoch, where t - epoch overflows a Duration.
	far := time.Date(9000, 1, 1, 0, 0, 0, 1, time.UTC)
	assert.Equal(t, time.Date(9000, 1, 1, 1, 0, 0, 0, time.UTC), s.Next(far))
	assert.Equal(t, time.Date(1, 1, 1, 1, 0, 0, 0, time.UTC), s.Next(time.Date(1, 1, 1, 0, 0, 0, 5, time.UTC)))
	// A period that does not divide a second.
	odd := schedule.Every(7 * time.Millisecond)
	n := odd.Next(far)
	ns := new(big.Int).Mul(big.NewInt(n.Unix()), big.NewInt(1e9))
	ns.Add(ns, big.NewInt(int64(n.Nanosecond())))
	assert.Zero(t, new(big.Int).Mod(ns, big.NewInt(7e6)).Int64(), "a multiple of 7ms since the epoch: %v", n)
	assert.True(t, n.After(far) && !n.After(far.Add(7*time.Millisecond)))
	assert.Equal(t, n, odd.Next(n.Add(-1)))
	assert.Equal(t, time.Duration(math.MaxInt64), schedule.Every(math.MaxInt64).Next(time.Unix(0, 0)).Sub(time.Unix(0, 0)))
}

func TestEveryFrom(t *testing.T) {
	anchor := time.Date(2024, 1, 1, 0, 0, 0, 500, time.UTC)
	s := schedule.EveryFrom(anchor, 90*time.Minute)
	assert.Equal(t, anchor, s.Next(anchor.Add(-1)))
	assert.Equal(t, anchor.Add(90*time.Minute), s.Next(anchor))
	assert.Equal(t, anchor.Add(-90*time.Minute), s.Next(anchor.Add(-100*time.Minute)))
	assert.Equal(t, []time.Time{anchor, anchor.Add(90 * time.Minute), anchor.Add(180 * time.Minute)},
		schedule.Upcoming(s, anchor.Add(-time.Minute), 3))
}

// TestEveryFromFarApart checks EveryFrom's grid against big.Int arithmetic
// for times more than 2^63 seconds apart, where the difference of their
// Unix seconds does not fit in an int64.
func TestEveryFromFarApart(t *testing.T) {
	unixToYear1 := int64(62135596800) // seconds from year 1 to the epoch
	lo := time.Unix(math.MinInt64+unixToYear1+1e10, 123456789).UTC()
	hi := time.Unix(math.MaxInt64-unixToYear1-1e10, 987654321).UTC()
	for _, c := range []struct {
		anchor, t time.Time
		d         time.Duration
	}{
		{lo, hi, 7 * time.Second},
		{lo, hi, time.Hour + 3},
		{hi, lo, 7 * time.Second},
		{hi, lo, 90*time.Minute + 1},
		{lo, hi.Add(-time.Hour), math.MaxInt64},
		{hi, lo.Add(time.Hour), 1},
	} {
		require.Greater(t, new(big.Int).Abs(bigDiff(c.t, c.anchor)).Cmp(new(big.Int).Lsh(big.NewInt(1e9), 63)), 0)
		n := schedule.EveryFrom(c.anchor, c.d).Next(c.t)
		// n - anchor is a multiple of d, and n is the first such time after t.
		off := bigDiff(n, c.anchor)
		assert.Zero(t, new(big.Int).Mod(off, big.NewInt(int64(c.d))).Sign(), "anchor %v, t %v, d %v: %v not on the grid", c.anchor, c.t, c.d, n)
		assert.True(t, n.After(c.t) && !n.After(c.t.Add(c.d)), "anchor %v, t %v, d %v: %v", c.anchor, c.t, c.d, n)
	}
}

// bigDiff returns a - b in nanoseconds, exactly.
func bigDiff(a, b time.Time) *big.Int {
	ns := func(t time.Time) *big.Int {
		x := new(big.Int).Mul(big.NewInt(t.Unix()), big.NewInt(1e9))
		return x.Add(x, big.NewInt(int64(t.Nanosecond())))
	}
	return new(big.Int).Sub(ns(a), ns(b))
}

func TestAtOnceBetweenUnion(t *testing.T) {
	a, b, c := at(time.Second), at(2*time.Second), at(3*time.Second)
	assert.Equal(t, []time.Time{a, b, c}, schedule.Upcoming(schedule.At(c, a, b, a), t0, 10), "sorted, duplicates once")
	assert.Equal(t, []time.Time{b}, schedule.Upcoming(schedule.Once(b), t0, 10))
	assert.Empty(t, schedule.Upcoming(schedule.Once(b), b, 10))
	assert.Empty(t, schedule.Upcoming(schedule.At(), t0, 10))
	every := schedule.Every(time.Second)
	assert.Equal(t, []time.Time{a, b}, schedule.Upcoming(schedule.Between(every, a, b), t0, 10), "closed at both ends")
	assert.Equal(t, []time.Time{b, c}, schedule.Upcoming(schedule.Between(every, a.Add(1), time.Time{}), t0, 2), "open end")
	assert.Equal(t, []time.Time{a}, schedule.Upcoming(schedule.Between(every, time.Time{}, a), a.Add(-time.Second/2), 10), "open start")
	assert.Empty(t, schedule.Upcoming(schedule.Between(every, b, a), t0, 10), "start after end")
	u := schedule.Union(schedule.Once(c), schedule.Between(every, a, b), schedule.Once(b))
	assert.Equal(t, []time.Time{a, b, c}, schedule.Upcoming(u, t0, 10))
	assert.Empty(t, schedule.Upcoming(schedule.Union(), t0, 10))
	assert.Nil(t, schedule.Upcoming(every, t0, -1))
}

// model is a reference Schedule: a sorted list of every time, made by
// stepping, searched linearly.
type model []time.Time

func (m model) next(t time.Time) time.Time {
	for _, x := range m {
		if x.After(t) {
			return x
		}
	}
	return time.Time{}
}

// FuzzSchedules checks Every, EveryFrom, At, Between and Union, through
// Upcoming, against lists of times built by stepping.
func FuzzSchedules(f *testing.F) {
	f.Add(int64(1000), int64(0), int64(7), int64(300), int64(-50), int64(20000), int64(1234), int64(40))
	f.Add(int64(1), int64(-3), int64(1), int64(2), int64(0), int64(0), int64(5), int64(9))
	f.Add(int64(999), int64(1e9), int64(333), int64(1e4), int64(-1e4), int64(1e4), int64(-7), int64(1))
	f.Fuzz(func(t *testing.T, period, anchor, period2, start, end, _, after, at3 int64) {
		period = 1 + abs(period)%5000
		period2 = 1 + abs(period2)%5000
		base := time.Unix(1e9, 0).UTC()
		ns := func(n int64) time.Time { return base.Add(time.Duration(n)) }
		lo, hi := ns(-40000), ns(40000)
		// Reference lists over [lo, hi].
		steps := func(a time.Time, d int64) model {
			var m model
			// The multiple of d from a at or before lo, in int64
			// nanoseconds (a and lo are within 292 years).
			off := lo.Sub(a).Nanoseconds()
			k := off / d
			if off%d < 0 {
				k--
			}
			x := a.Add(time.Duration(k * d))
			for ; !x.After(hi); x = x.Add(time.Duration(d)) {
				if x.After(lo) {
					m = append(m, x)
				}
			}
			return m
		}
		anchorT := ns(anchor % 1e5)
		epochAligned := steps(time.Unix(0, 0).UTC(), period) // Every: anchored at the epoch
		fromAnchor := steps(anchorT, period2)
		atTimes := model{ns(at3 % 30000), ns(start % 30000), ns(-at3 % 30000)}
		slices.SortFunc(atTimes, time.Time.Compare)
		atTimes = slices.CompactFunc(atTimes, time.Time.Equal)
		s0, e0 := ns(start%30000), ns(end%30000)
		var between model
		for _, x := range epochAligned {
			if !x.Before(s0) && !x.After(e0) {
				between = append(between, x)
			}
		}
		var union model
		union = append(union, fromAnchor...)
		union = append(union, atTimes...)
		slices.SortFunc(union, time.Time.Compare)
		union = slices.CompactFunc(union, time.Time.Equal)

		for _, c := range []struct {
			name string
			s    schedule.Schedule
			m    model
		}{
			{"Every", schedule.Every(time.Duration(period)), epochAligned},
			{"EveryFrom", schedule.EveryFrom(anchorT, time.Duration(period2)), fromAnchor},
			{"At", schedule.At(atTimes[len(atTimes)-1], atTimes[0], atTimes[len(atTimes)/2]), atTimes},
			{"Between", schedule.Between(schedule.Every(time.Duration(period)), s0, e0), between},
			{"Union", schedule.Union(schedule.EveryFrom(anchorT, time.Duration(period2)), schedule.At(atTimes...)), union},
		} {
			from := ns(after % 30000)
			got := schedule.Upcoming(c.s, from, 20)
			var want []time.Time
			for x := from; len(want) < 20; {
				n := c.m.next(x)
				if n.IsZero() || n.After(ns(39000)) {
					break
				}
				want = append(want, n)
				x = n
			}
			if len(want) < 20 && len(got) > len(want) {
				got = got[:len(want)] // the model stops at hi; the schedule goes on
			}
			if !slices.EqualFunc(got, want, time.Time.Equal) {
				t.Fatalf("%s from %v: got %v, want %v", c.name, from.Sub(base), rel(base, got), rel(base, want))
			}
		}
	})
}

func abs(n int64) int64 {
	if n < 0 {
		if n == math.MinInt64 {
			return math.MaxInt64
		}
		return -n
	}
	return n
}

func rel(base time.Time, ts []time.Time) []time.Duration {
	var d []time.Duration
	for _, t := range ts {
		d = append(d, t.Sub(base))
	}
	return d
}

// Upcoming allocates for the times it returns, not for n.
func TestUpcomingHugeN(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := schedule.At(now.Add(time.Hour), now.Add(2*time.Hour))
	var got []time.Time
	allocs := testing.AllocsPerRun(10, func() { got = schedule.Upcoming(s, now, math.MaxInt) })
	assert.Equal(t, []time.Time{now.Add(time.Hour), now.Add(2 * time.Hour)}, got)
	assert.LessOrEqual(t, allocs, 2.0)
	assert.Empty(t, schedule.Upcoming(s, now, math.MinInt))
}

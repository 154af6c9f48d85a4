// Package schedule runs jobs on schedules: each slot of a Schedule runs a
// Func once, recorded in a Store, with an overlap policy for slots that fall
// due while a run is in flight and a misfire policy for slots missed while
// the job was down, paused by a sleeping machine or a clock step.
//
//	j := schedule.NewJob("report", schedule.Every(time.Hour), report,
//		schedule.WithOverlap(schedule.OverlapSkip),
//		schedule.WithMisfire(schedule.MisfireRunOnce),
//		schedule.WithStore(store))
//	if err := j.Start(ctx); err != nil { ... }
//	defer j.Stop(context.Background())
//
// A run is identified by its job's name and its slot, (Job, Due): the job
// claims that key in its Store before the Func starts, so several Jobs with
// the same name sharing a Store, in one process or many, run each slot
// exactly once. Run times are read from the wall clock, so a slot runs at
// its due time whatever the monotonic clock did meanwhile.
//
// A Store is where Jobs of one name agree on who runs a slot, and where
// each slot's fate is kept: Claim, Finish, Last and History. A Store that
// only does that keeps each slot once, and nothing more. Replicas that
// act as one scheduler need a SharedStore: each claim holds a lease that
// the Job renews, and a node that dies mid-run has its slot taken over;
// the overlap policy counts the job's runs in flight on every node, in the
// same atomic step as the claim; a Job that stops (Stop, Shutdown) hands
// the runs it cuts short over to another node at once; and the slots that
// did not run, the attempts of retried runs and since when each job is
// scheduled are recorded too. MemoryStore is a SharedStore for the Jobs of
// one process; schedule/sqlstore's Store, for replicas on SQLite or
// PostgreSQL. Two optional interfaces make a Store faster, not different:
// LastReader reads the last records of many jobs in one call, and
// JobChecker refuses at Start a name the store cannot hold.
//
// A Job waits for its next slot on one timer of its Scheduler (default
// circulation.RuntimeScheduler; a wheel.Wheel holds millions of idle jobs),
// armed for the whole wait. One watch per Scheduler, a circulation.Trigger
// that runs once a second while any job of that Scheduler is armed, notices
// when the wall clock parts from the timers' monotonic clock (a sleep, a
// clock step) and re-arms the jobs, so that an idle job costs no CPU and a
// jump is noticed within about a second. DESIGN.md beside this file
// explains the choices and their measurements.
package schedule

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"
)

// A Schedule says when a job's runs fall due. Implementations must be safe
// for concurrent use, and their Next must not call the methods of a Job:
// a Job calls it holding its lock, and, on a wall-clock jump, its
// Scheduler's watch calls it holding its own.
type Schedule interface {
	// Next returns the first time strictly after t, or the zero Time if
	// there is none. A Job treats a result that is not after t as none.
	Next(t time.Time) time.Time
}

// Reason says why a run happened.
type Reason uint8

const (
	Scheduled Reason = iota // its slot fell due
	CatchUp                 // its slot was missed and the Misfire policy runs it late
	Manual                  // RunNow
	Recovered               // its node died mid-run, or stopped and handed it over, and another took the slot over (SharedStore)
	Backfill                // Job.Backfill runs a slot of a past range
)

var reasonNames = [...]string{"Scheduled", "CatchUp", "Manual", "Recovered", "Backfill"}

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

var unixEpoch = time.Unix(0, 0).UTC()

// Every returns the Schedule of the times k·d after the Unix epoch, for
// every integer k: the same slots on every replica and after every restart,
// whenever the job started. Every(time.Hour) falls due on the hour, UTC.
// Every panics if d <= 0.
func Every(d time.Duration) Schedule {
	if d <= 0 {
		panic("schedule: Every with a non-positive period " + d.String())
	}
	return epochEvery(d)
}

// epochEvery is Every: an EveryFrom the epoch in 8 bytes, for the millions
// of jobs a process may hold.
type epochEvery time.Duration

func (e epochEvery) Next(t time.Time) time.Time {
	return every{anchor: unixEpoch, d: time.Duration(e)}.Next(t)
}

// EveryFrom returns the Schedule of the times anchor + k·d, for every
// integer k, before and after anchor. It panics if d <= 0.
func EveryFrom(anchor time.Time, d time.Duration) Schedule {
	if d <= 0 {
		panic("schedule: EveryFrom with a non-positive period " + d.String())
	}
	return every{anchor: anchor.Round(0), d: d}
}

type every struct {
	anchor time.Time
	d      time.Duration
}

// Next returns the first anchor + k·d strictly after t, in t's location.
// The distance from the anchor is taken in 128 bits, so it is exact for
// any two times, however far apart.
func (e every) Next(t time.Time) time.Time {
	t = t.Round(0)
	ts, as := t.Unix(), e.anchor.Unix()
	n := int64(t.Nanosecond()) - int64(e.anchor.Nanosecond())
	neg := ts < as || (ts == as && n < 0)
	// s = |ts - as|, which may not fit in an int64 but always fits in a
	// uint64, where the difference of the larger and the smaller, taken
	// modulo 2^64, is exact.
	var s uint64
	if neg {
		s, n = uint64(as)-uint64(ts), -n
	} else {
		s = uint64(ts) - uint64(as)
	}
	// |t - anchor| = s·1e9 + n, with |n| < 1e9.
	hi, lo := bits.Mul64(s, 1e9)
	var c uint64
	if n >= 0 {
		lo, c = bits.Add64(lo, uint64(n), 0)
		hi += c
	} else {
		lo, c = bits.Sub64(lo, uint64(-n), 0)
		hi -= c
	}
	r := time.Duration(bits.Rem64(hi, lo, uint64(e.d)))
	switch {
	case neg && r != 0:
		return t.Add(r)
	case neg:
		return t.Add(e.d)
	default:
		return t.Add(e.d - r)
	}
}

// Once returns the Schedule with the single time at.
func Once(at time.Time) Schedule { return At(at) }

// At returns the Schedule of the given times, in any order; duplicates
// count once.
func At(times ...time.Time) Schedule {
	ts := make([]time.Time, 0, len(times))
	for _, t := range times {
		ts = append(ts, t.Round(0))
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	ts = slices.CompactFunc(ts, time.Time.Equal)
	return at(ts)
}

type at []time.Time

func (a at) Next(t time.Time) time.Time {
	i, found := slices.BinarySearchFunc(a, t, func(x, t time.Time) int { return x.Compare(t) })
	if found {
		i++
	}
	if i < len(a) {
		return a[i]
	}
	return time.Time{}
}

// Between returns the times of s in [start, end]. A zero start or end
// leaves that side open.
func Between(s Schedule, start, end time.Time) Schedule {
	if s == nil {
		panic("schedule: Between with a nil Schedule")
	}
	b := &between{s: s, start: math.MinInt64, end: math.MaxInt64}
	if !start.IsZero() {
		b.start = clampNanos(start)
	}
	if !end.IsZero() {
		b.end = clampNanos(end)
	}
	return b
}

// between holds its bounds as Unix nanoseconds, in 32 bytes, for the
// millions of windows of the tasks users define; an open side is the
// smallest or largest int64.
type between struct {
	s          Schedule
	start, end int64
}

// clampNanos returns t in Unix nanoseconds, clamped to the int64 range:
// years 1678 to 2262 are exact, earlier and later times the bounds.
func clampNanos(t time.Time) int64 {
	switch {
	case t.Before(minNanos):
		return math.MinInt64 + 1
	case t.After(maxNanos):
		return math.MaxInt64 - 1
	}
	return t.UnixNano()
}

var (
	minNanos = time.Unix(0, math.MinInt64+1)
	maxNanos = time.Unix(0, math.MaxInt64-1)
)

func (b *between) Next(t time.Time) time.Time {
	if b.start != math.MinInt64 && clampNanos(t) < b.start {
		t = time.Unix(0, b.start-1).In(t.Location()) // the first time of s at or after start
	}
	n := b.s.Next(t)
	if n.IsZero() || !n.After(t) || (b.end != math.MaxInt64 && clampNanos(n) > b.end) {
		return time.Time{}
	}
	return n
}

// Union returns the Schedule of the times of all of ss. A time of several
// counts once.
func Union(ss ...Schedule) Schedule {
	for _, s := range ss {
		if s == nil {
			panic("schedule: Union with a nil Schedule")
		}
	}
	return union(slices.Clone(ss))
}

type union []Schedule

func (u union) Next(t time.Time) time.Time {
	var first time.Time
	for _, s := range u {
		n := s.Next(t)
		if n.IsZero() || !n.After(t) {
			continue
		}
		if first.IsZero() || n.Before(first) {
			first = n
		}
	}
	return first
}

// Upcoming returns the first n times of s after after, fewer if s has
// fewer. It stops at a time that is not after the one before it. It
// allocates for the times it returns, not for n: a huge n is cheap with a
// Schedule that ends.
func Upcoming(s Schedule, after time.Time, n int) []time.Time {
	var ts []time.Time
	t := after
	for range max(n, 0) {
		next := s.Next(t)
		if next.IsZero() || !next.After(t) {
			break
		}
		ts = append(ts, next)
		t = next
	}
	return ts
}

// next is s.Next(t), or the zero Time if s breaks its contract by
// returning a time that is not after t.
func next(s Schedule, t time.Time) time.Time {
	n := s.Next(t)
	if !n.After(t) {
		return time.Time{}
	}
	return n
}

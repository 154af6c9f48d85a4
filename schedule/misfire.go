package schedule

import "time"

// scanLimit bounds the slots a job looks at one by one after a gap: the
// catch-up runs, and the Missed records reported.
func (c *config) scanLimit() int { return max(c.catchUp, 1000) }

// dueLocked handles the slots from first, which has fallen due, to now:
// the latest is on time if now is within the grace period after it; the
// others, and the latest if it is late, are missed, and the Misfire policy
// says which of them run. It returns the records of the slots that do not
// run; the others go to submitLocked.
func (j *Job) dueLocked(sched Schedule, first, now time.Time) []Record {
	return j.dueAtLocked(sched, first, now, now)
}

// dueAtLocked is dueLocked, with the slots older than the catch-up window
// at at, not at now, Missed: a Start whose store was down hands the slots
// it missed once the store answers, on time as at the Start, but as old
// as they are by then.
func (j *Job) dueAtLocked(sched Schedule, first, now, at time.Time) []Record {
	c := j.cfg
	var obs []Record
	miss := func(ts ...time.Time) {
		for _, t := range ts {
			obs = append(obs, j.record(Run{Job: j.name, Due: t, Reason: CatchUp}, Missed, nil))
		}
	}
	stale := false // every slot from first to now is older than the window
	if cut := at.Add(-c.window); c.window > 0 && first.Before(cut) {
		// The slots older than the catch-up window are Missed whatever
		// the policy, reported as a gap's are, up to the scan limit; the
		// policy takes over at the first slot within the window.
		if from := next(sched, cut.Add(-1)); !from.IsZero() && !from.After(now) {
			head, latest := dueSlots(sched, first, from.Add(-1), c.scanLimit())
			miss(head...)
			miss(latest)
			first = from
		} else {
			stale = true
		}
	}
	head, latest := dueSlots(sched, first, now, c.scanLimit())
	missed := head
	onTime := now.Sub(j.plannedLocked(sched, latest)) <= c.grace
	if c.window > 0 && at.After(now) && latest.Before(at.Add(-c.window)) {
		onTime = false // on time at the Start, but as old as the store's answer finds it
	}
	if !onTime {
		missed = append(missed, latest)
	}
	var run []pending
	switch {
	case stale || c.misfire == MisfireSkip:
		miss(missed...)
	case c.misfire == MisfireRunOnce:
		if !onTime {
			miss(missed[:len(missed)-1]...)
			run = append(run, pending{run: Run{Job: j.name, Due: latest, Reason: CatchUp}})
		} else {
			miss(missed...)
		}
	case c.misfire == MisfireRunAll:
		n := min(len(missed), c.catchUp)
		for _, t := range missed[:n] {
			run = append(run, pending{run: Run{Job: j.name, Due: t, Reason: CatchUp}})
		}
		miss(missed[n:]...)
	}
	if onTime {
		run = append(run, pending{run: Run{Job: j.name, Due: latest, Reason: Scheduled}})
	}
	if len(run) > 0 {
		obs = j.submitLocked(run, obs)
	}
	return obs
}

// dueSlots returns the slots of s from first, which is at or before now,
// to now: the latest, and those before it, oldest first, up to limit of
// them. Past limit, it finds the latest by looking back from now in
// doubling steps, so that a gap of a year of one-second slots costs a few
// dozen calls of Next, not millions.
func dueSlots(s Schedule, first, now time.Time, limit int) (head []time.Time, latest time.Time) {
	t := first
	for {
		n := next(s, t)
		if n.IsZero() || n.After(now) {
			return head, t
		}
		if len(head) == limit {
			break
		}
		head = append(head, t)
		t = n
	}
	latest = t
	for d := time.Microsecond; d > 0; d *= 2 {
		p := now.Add(-d)
		if !p.After(latest) {
			break
		}
		if n := next(s, p); !n.IsZero() && !n.After(now) {
			latest = n
			break
		}
	}
	for range limit {
		n := next(s, latest)
		if n.IsZero() || n.After(now) {
			break
		}
		latest = n
	}
	return head, latest
}

package schedule

import (
	"context"
	"errors"
	"slices"
	"time"
)

// noCatchUpBeforeLocked says that slots before now are not to be caught
// up after a store outage: the job resumed or changed schedule at now.
func (j *Job) noCatchUpBeforeLocked(now time.Time) {
	if j.x != nil {
		j.x.floor = now
	}
}

// catchUp runs the slots a store outage made the job miss, before the
// slot of r (see recoverOutage). It reports false if the job was stopped
// or paused meanwhile: r's slot is then reported Skipped, and not run.
//
//go:noinline
func (j *Job) catchUp(ctx context.Context, x *active, r *Run) bool {
	j.mu.Lock()
	floor := x.floor
	j.mu.Unlock()
	j.recoverOutage(ctx, x, r.Due)
	j.mu.Lock()
	stopped, paused := j.state != jobStarted, j.paused()
	resumed := !x.floor.Equal(floor) // paused and resumed, or given a schedule: r's slot is before the new first one
	j.mu.Unlock()
	if !stopped && !paused && !resumed {
		return true
	}
	why := errStopped
	if paused || resumed {
		why = ErrPaused
	}
	j.observe([]Record{j.record(*r, Skipped, why)})
	return false
}

// owe records that the slot of r is owed, under MisfireRunAll: its claim
// failed, or the catch-up that was to run it ended first. The next
// Scheduled run then catches up first (recoverOutage). A Manual run is not
// owed, nor a Backfill's: its Backfill stops at it. Under the other
// policies nothing is owed, and nothing is kept.
func (x *active) owe(j *Job, r *Run) {
	if r.Reason == Manual || r.Reason == Backfill || j.cfg.misfire != MisfireRunAll {
		return
	}
	j.mu.Lock()
	if o := x.rareLocked(); o.missed.IsZero() || r.Due.Before(o.missed) {
		o.missed = r.Due
	}
	j.mu.Unlock()
}

// recoverOutage runs, before the slot due, under MisfireRunAll, the slots
// whose claims failed since the last catch-up: each of them, oldest first,
// up to the catch-up limit. (Under the other policies the slot due is the
// latest missed one, and the slots whose claims failed were reported
// Skipped.) A slot that has a record by now, this job's or another
// replica's, is not run again: its claim says ErrClaimed.
//
// The catch-up stops at the first claim that fails, and if the slot due
// replaces or stops it: the slots left stay owed, and are not reported
// again. It also stops if the job is paused, resumed, stopped or given a
// schedule meanwhile. It takes the owed slots over as it starts: a claim
// that fails meanwhile, under OverlapAllow, makes its slot owed again, for
// the next catch-up.
//
// Each catch-up run has a context of its own, under ctx: a lease it loses
// cancels it alone.
func (j *Job) recoverOutage(ctx context.Context, x *active, due time.Time) {
	if j.cfg.misfire != MisfireRunAll {
		return
	}
	j.mu.Lock()
	var missed time.Time
	if x.r != nil {
		missed = x.r.missed
	}
	floor, sched := x.floor, j.sched
	if missed.IsZero() || !missed.Before(due) {
		// Nothing owed, or only slots after this one: a slot a Start
		// whose Last failed handed late.
		j.mu.Unlock()
		return
	}
	x.r.missed = time.Time{}
	x.tidyRareLocked()
	j.mu.Unlock()
	if missed.Before(floor) {
		return // owed from before a pause or a new schedule: not caught up
	}
	if w := j.cfg.window; w > 0 {
		// The slots older than the catch-up window are not run. They
		// reached the Observer Skipped when their claims failed; the
		// store keeps them Missed, up to maxNoted of them, unless
		// another node ran them meanwhile: a note does not overwrite a
		// record, and the Observer, which cannot tell, is not told.
		if from := time.Now().Add(-w); missed.Before(from) {
			var rs []Record
			for t := missed; !t.IsZero() && t.Before(from) && t.Before(due) && len(rs) < maxNoted; t = next(sched, t) {
				rs = append(rs, j.record(Run{Job: j.name, Due: t, Reason: CatchUp}, Missed, nil))
			}
			j.note(rs)
			j.logMissed(rs)
			missed = from
		}
	}
	t := missed.Add(-1) // so that the first slot after it is the missed one itself
	for n := 0; ; n++ {
		if t = next(sched, t); t.IsZero() || !t.Before(due) {
			return
		}
		j.mu.Lock()
		changed := j.state != jobStarted || j.paused() || !x.floor.Equal(floor)
		j.mu.Unlock()
		if changed {
			return
		}
		p := pending{run: Run{Job: j.name, Due: t, Reason: CatchUp}, inline: true}
		if ctx.Err() != nil || n == j.cfg.catchUp {
			// Replaced or stopped: the slot due catches up from here. Past
			// the limit: the slots left were reported when they fell due,
			// and stay owed to the next slot.
			x.owe(j, &p.run)
			return
		}
		if !x.catching(j, t) {
			continue // another pass of this job catches it up now (OverlapAllow)
		}
		ok := j.catchUpRun(ctx, x, &p)
		if !ok {
			return
		}
	}
}

// catchUpRun runs the catch-up p, under a context of its own.
func (j *Job) catchUpRun(ctx context.Context, x *active, p *pending) bool {
	defer x.caught(j, p.run.Due) // a Func that calls runtime.Goexit leaves no slot marked
	rctx, rcancel := context.WithCancelCause(ctx)
	defer rcancel(nil)
	claimed, ok := j.begin(rctx, rcancel, x, p, true)
	if claimed {
		renew, runErr, err := j.run(rctx, rcancel, x, p, nil)
		for {
			var again bool
			renew, again = j.finish(rctx, x, p, renew, runErr, err)
			if !again {
				break
			}
			renew, runErr, err = j.run(rctx, rcancel, x, p, renew)
		}
	}
	return ok
}

// Start retries Last, when it failed, after a pause of firstStartRetry
// that doubles up to maxStartRetry.
const (
	firstStartRetry = time.Second
	maxStartRetry   = 30 * time.Second
)

// recoverStart is the Func of the Trigger that a Start whose Last failed
// leaves behind: it reads the store again, after a growing pause, until it
// answers, and then gives the slots missed before the start what Start
// would have given them, by the schedule of then: those after the store's
// last record before the start, up to the start, each Missed or run by the
// Misfire policy (dueLocked), the latest on time if the start was within
// the grace period after it. The last record is found as lastBefore says,
// so that the records of runs since the start do not hide it. A job with
// no record before the start owes the slots since it has been scheduled
// (sinceOf), as at Start.
//
// A job held at Start (WithMaxRuns, its SharedStore's Since failed) first
// reads Since again, until it answers: it then counts its slots from the
// store's time, runs again, and gives the slots it held since the start
// what a Start now would have given them, the Misfire policy (a slot that
// another replica ran has a record, and does not run again).
func (j *Job) recoverStart(ctx context.Context) (time.Duration, bool) {
	j.mu.Lock()
	x := j.x // made by Start
	r := x.rareLocked()
	gap, sched, pause := r.gap, r.gapSched, r.gapPause
	live := j.state == jobStarted
	j.mu.Unlock()
	if !live || gap.IsZero() {
		return 0, false
	}
	retry := func(err error) (time.Duration, bool) {
		if ctx.Err() != nil {
			return 0, false
		}
		if err != nil {
			j.storeFailed(x.store, err)
		}
		pause = min(max(2*pause, firstStartRetry), maxStartRetry)
		j.mu.Lock()
		r.gapPause = pause
		j.mu.Unlock()
		return pause, true
	}
	var counted time.Time // of a held job: when its slots are counted from
	if f, ok := sched.(*first); ok && f.held {
		base := j.sinceBase(gap)
		got, err := j.cfg.shared.Since(ctx, j.name, base)
		if err != nil || got.IsZero() {
			return retry(err)
		}
		counted = minTime(base, got)
		sched = First(f.s, counted, f.n)
	}
	last, err := j.lastBefore(ctx, x.store, sched, gap, time.Now())
	if err != nil {
		return retry(err)
	}
	j.storeAnswered(x.store)
	if !counted.IsZero() {
		return j.endHold(r, gap, counted, last)
	}
	if last.IsZero() {
		// No record before the start: the job owes the slots since it
		// has been scheduled, as Start would have found.
		if since := j.sinceOf(ctx, gap, nil); since.Before(gap) {
			last = since
		}
	}
	var obs []Record
	j.mu.Lock()
	if r.gap.Equal(gap) && j.state == jobStarted {
		r.gap, r.gapSched = time.Time{}, nil
		if first := next(sched, last); !last.IsZero() && !first.IsZero() && !first.After(gap) {
			obs = j.dueAtLocked(sched, first, gap, time.Now().Round(0))
		}
	}
	j.mu.Unlock()
	j.observe(obs)
	return 0, false
}

// endHold ends the hold of a job that Start held: its slots are counted
// from counted, from now on, and those due since the latest record before
// the start, last, or else since counted, up to now, are given the Misfire
// policy as at a Start now. A job paused meanwhile misses them, as one
// started paused. A Scheduler that refuses the job's timer leaves it with
// no next slot, as at the end of a pause.
func (j *Job) endHold(r *rare, gap, counted, last time.Time) (time.Duration, bool) {
	if last.IsZero() && counted.Before(gap) {
		last = counted
	}
	var obs []Record
	j.mu.Lock()
	if r.gap.Equal(gap) && j.state == jobStarted {
		r.gap, r.gapSched = time.Time{}, nil
		if f, ok := j.sched.(*first); ok && f.held { // SetSchedule may have replaced it, held as well
			j.sched = j.limitLocked(f.s, counted)
		}
		if !j.paused() {
			now := time.Now().Round(0)
			if first := next(j.sched, last); !last.IsZero() && !first.IsZero() && !first.After(now) {
				obs = j.dueLocked(j.sched, first, now)
			}
			j.armLocked(now)
		}
		j.tellLocked(obs)
	}
	j.mu.Unlock()
	j.resync()
	j.told(obs)
	return 0, false
}

// catching notes that a catch-up of the slot due is under way, and reports
// false if the slot is another run's already, catching up or in flight:
// under OverlapAllow two runs may catch up the same owed slots at once, or
// one catch up the slot of the other, and a job never runs one slot twice
// at once, whatever its store says of the claim.
func (x *active) catching(j *Job, due time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	r := x.rareLocked()
	if slices.ContainsFunc(r.catchUps, due.Equal) || slices.ContainsFunc(x.runs, func(f flight) bool { return f.due.Equal(due) }) {
		return false
	}
	r.catchUps = append(r.catchUps, due)
	return true
}

// caught notes that the catch-up of the slot due has ended.
func (x *active) caught(j *Job, due time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if r := x.r; r != nil {
		if i := slices.IndexFunc(r.catchUps, due.Equal); i >= 0 {
			r.catchUps = slices.Delete(r.catchUps, i, i+1)
		}
		x.tidyRareLocked()
	}
}

// lastBefore returns the Due of the latest record of the job before gap,
// or zero if it has none; due is the slot about to run, on sched. Last
// answers, unless runs since gap have records: then History is read back
// past the slots of sched since gap (and a few RunNow), up to the scan
// limit. A record older than that, if any, is not looked for: the slots
// after it are not caught up.
func (j *Job) lastBefore(ctx context.Context, s Store, sched Schedule, gap, due time.Time) (time.Time, error) {
	l, err := s.Last(ctx, j.name)
	switch {
	case errors.Is(err, ErrNoRecord):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, err
	case l.Due.Before(gap):
		return l.Due, nil
	}
	n := 16
	for t := gap; n < j.cfg.scanLimit(); n++ {
		if t = next(sched, t); t.IsZero() || t.After(due) {
			break
		}
	}
	h, err := s.History(ctx, j.name, n)
	if err != nil {
		return time.Time{}, err
	}
	for _, r := range h {
		if r.Due.Before(gap) {
			return r.Due, nil
		}
	}
	return time.Time{}, nil
}

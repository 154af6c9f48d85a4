package schedule

import (
	"slices"
	"time"
)

// submitLocked hands runs to a runner under the overlap policy, and
// returns obs with the records of those that will not run.
func (j *Job) submitLocked(runs []pending, obs []Record) []Record {
	x := j.x
	if x == nil {
		// Made at the first slots handed, which the job's timer may hand
		// late: catch-up may go back to them, should their claims fail.
		floor := time.Now().Round(0)
		for _, p := range runs {
			if d := p.run.Due.Add(-1); d.Before(floor) {
				floor = d
			}
		}
		x = j.active(floor)
	}
	for _, p := range runs {
		if p.claim == nil && p.run.Due.After(x.handed) {
			x.handed = p.run.Due
		}
	}
	if j.state != jobStarted || j.paused() {
		why := j.refusal()
		for _, p := range runs {
			obs = append(obs, j.drop(p, why))
		}
		return obs
	}
	if j.holdLocked(x, runs) {
		return obs
	}
	c := j.cfg
	if x.claiming && (c.overlap != OverlapAllow || c.maxParallel > 0) {
		// A Reclaim is on its way back, asked for while the job was free:
		// these runs wait for its answer, so that a claim it took over
		// finds the job as free as when it asked (takeOver).
		r := x.rareLocked()
		r.held = append(r.held, slices.Clone(runs)) // runs is the caller's: a RunNow's is on its stack
		return obs
	}
	if c.overlap == OverlapAllow {
		if c.maxParallel > 0 && x.runners >= c.maxParallel {
			for _, p := range runs {
				obs = append(obs, j.drop(p, errOverlap))
			}
			return obs
		}
		x.runners++
		if len(runs) == 1 {
			j.spawnLocked(x, runs[0], nil, false) // by value: no slice to allocate
		} else {
			j.spawnLocked(x, pending{}, slices.Clone(runs), false) // runs is the caller's: a RunNow's stays on its stack
		}
		return obs
	}
	if x.runners == 0 {
		// In the queue, where Pause, Stop and OverlapReplace find it
		// until the runner takes it.
		x.queue = append(x.queue, runs...)
		x.runners = 1
		j.spawnLocked(x, pending{}, nil, false)
		return obs
	}
	switch c.overlap {
	case OverlapSkip:
		for _, p := range runs {
			obs = append(obs, j.drop(p, errOverlap))
		}
	case OverlapBufferOne:
		for _, p := range runs[:len(runs)-1] {
			obs = append(obs, j.drop(p, errOverlap))
		}
		p := runs[len(runs)-1]
		p.buffered = true
		// A run that waits for the job's runs on other nodes to end holds
		// the slot buffered before: the newer one takes its place.
		x.stopWaitingLocked(errOverlap)
		if n := len(x.queue); n > 0 && x.queue[n-1].buffered {
			obs = append(obs, j.drop(x.queue[n-1], errOverlap))
			x.queue[n-1] = p
		} else {
			x.queue = append(x.queue, p)
		}
	case OverlapBufferAll:
		for _, p := range runs {
			if len(x.queue) >= c.bufferLimit() {
				obs = append(obs, j.drop(p, errFull))
				continue
			}
			x.queue = append(x.queue, p)
		}
	case OverlapReplace:
		for _, f := range x.runs {
			if !f.recovered { // a Recovered run is not replaced: the new runs wait for it
				f.cancel(ErrReplaced)
			}
		}
		obs = append(obs, j.dropQueueLocked(ErrReplaced)...)
		x.queue = append(x.queue, runs...)
	}
	return obs
}

// spawnLocked starts a runner for first, if its Due is set, batch, and
// then the job's queue, under
// the job's RunLimit if it has one: the runner may wait its turn. now says
// it may not wait (a claim taken over holds a lease). The caller holds
// j.mu and has counted the runner in x.runners.
func (j *Job) spawnLocked(x *active, first pending, batch []pending, now bool) {
	l := j.cfg.limit
	if l == nil {
		j.w.pool.start(work{j: j, p: first, batch: batch})
		return
	}
	if w := l.enter(j, first, batch, now); w != nil {
		x.waiting = append(x.waiting, w)
	}
}

// started notes that the RunLimit started the runner w of j's.
func (j *Job) started(w *waiting) {
	j.mu.Lock()
	if x := j.x; x != nil {
		x.unwaitLocked(w)
	}
	j.mu.Unlock()
}

// unwaitLocked takes w out of x.waiting, if it is there. The caller holds
// the job's lock.
func (x *active) unwaitLocked(w *waiting) {
	if i := slices.Index(x.waiting, w); i >= 0 {
		x.waiting = slices.Delete(x.waiting, i, i+1)
		if len(x.waiting) == 0 {
			x.waiting = nil
		}
	}
}

// dropWaitingLocked takes the job's runners that wait for their turn in
// its RunLimit out of it, and returns the records of their runs, which
// will not run. The caller holds j.mu.
func (j *Job) dropWaitingLocked(why error) []Record {
	x := j.x
	if x == nil || len(x.waiting) == 0 {
		return nil
	}
	var obs []Record
	for _, w := range x.waiting {
		if !j.cfg.limit.drop(w) {
			continue // started meanwhile: it finds the job stopped
		}
		if w.hold {
			continue // slots handed to their owner: not this node's to record
		}
		x.runners--
		if !w.p.run.Due.IsZero() {
			obs = append(obs, j.drop(w.p, why))
		}
		for _, p := range w.batch {
			obs = append(obs, j.drop(p, why))
		}
	}
	x.waiting = nil
	j.quietLocked()
	return obs
}

// refusal is why the job does not start a run: it is paused, or else
// stopped. The caller holds j.mu.
func (j *Job) refusal() error {
	if j.paused() {
		return ErrPaused
	}
	return errStopped
}

// drop returns the record of a pending run that will not run, and notes
// the end of a Backfill's slot. The caller holds j.mu. It is never a
// claimed run: takeOver hands those only to a runner of their
// own, which leaves them to expire if it cannot start them.
func (j *Job) drop(p pending, why error) Record {
	if p.run.Reason == Backfill {
		j.fillEndedLocked(p.run.Due, true, why)
	}
	return j.record(p.run, Skipped, why)
}

// dropQueueLocked empties the queue of pending runs, and the runs held
// while a claim is taken over, and returns their records.
func (j *Job) dropQueueLocked(why error) []Record {
	x := j.x
	if x == nil {
		return nil
	}
	var obs []Record
	for _, p := range x.queue {
		obs = append(obs, j.drop(p, why))
	}
	clear(x.queue)
	x.queue = x.queue[:0]
	for _, runs := range x.takeHeldLocked() {
		for _, p := range runs {
			obs = append(obs, j.drop(p, why))
		}
	}
	return obs
}

// takeHeldLocked returns the runs held while a claim was taken over, each
// call's as it was submitted, and holds none any more. The caller holds
// the job's lock.
func (x *active) takeHeldLocked() [][]pending {
	if x.r == nil || len(x.r.held) == 0 {
		return nil
	}
	held := x.r.held
	x.r.held = nil
	return held
}

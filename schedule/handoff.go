package schedule

import (
	"container/heap"
	"context"
	"slices"
	"time"
)

// handOffBatch is the least wait of a slot handed off: the slots whose
// hand-off is over when they are handed off wait this long, so that one
// look at which slots are claimed answers for those that come meanwhile.
const handOffBatch = 10 * time.Millisecond

// handOffAt returns when this node is to claim the slot of p, if the
// job's store is a Sharer that gives the slot to another node first (see
// Sharer): a quarter of the grace period after the slot's planned start
// (its due time, or later with WithJitter); last,
// the latest it waits for a live owner that has not claimed it yet, half
// the grace period after it; and far, the latest it waits while the
// slots of the same owner held with it are being claimed (a herd), half
// the store's lease or half the grace period after it, whichever is
// later, but last under MisfireSkip, whose slots must start within the
// grace period; and never more than a quarter, half and half of the time
// to the job's next slot. It returns the zero times if the claim is to
// be made at once. holdLocked has checked that p is a Scheduled slot, or
// a catch-up, neither claimed nor handed yet. The caller holds j.mu.
func (j *Job) handOffAt(p *pending) (at, last, far time.Time) {
	wait, reach, ok := j.handOffWaitLocked(p.run.Due)
	if !ok {
		return time.Time{}, time.Time{}, time.Time{}
	}
	due := j.plannedLocked(j.sched, p.run.Due)
	return due.Add(wait / 4), due.Add(wait / 2), due.Add(max(wait, reach) / 2)
}

// handOffWaitLocked returns the waits of handOffAt for the slot due, and
// whether its claim is handed off at all: the job has a RunLimit and a
// Sharer that says another node owns it, and a grace period, and time to
// its next slot, of 4ns at least. The caller holds j.mu.
func (j *Job) handOffWaitLocked(due time.Time) (wait, reach time.Duration, ok bool) {
	if due.IsZero() || j.cfg.limit == nil || j.cfg.grace/4 <= 0 {
		return 0, 0, false
	}
	s, ok := inner(j.cfg.shared).(Sharer)
	if !ok || s.Owns(j.name) {
		return 0, 0, false
	}
	wait, reach = j.cfg.grace, s.Lease()
	if n := next(j.sched, due); !n.IsZero() {
		wait = min(wait, n.Sub(due))
		reach = min(reach, n.Sub(due))
	}
	if wait/4 <= 0 {
		return 0, 0, false
	}
	if j.cfg.misfire == MisfireSkip {
		reach = 0
	}
	return wait, reach, true
}

// deferredLocked reports whether the job's next slot, due by now, is
// handed off to its owner (handOffWaitLocked) and its hand-off is not over
// yet: the job's wake leaves it until then (wakeAtLocked), so that a node
// spends nothing but a wake on the slots of a herd that others own while
// their owners claim them. A slot under MisfireSkip is not deferred: it is
// late, and Missed, a grace period after its planned start, and a wake
// deferred past that would record it Missed where its owner may yet run
// it. The caller holds j.mu.
func (j *Job) deferredLocked(now time.Time) bool {
	at, ok := j.handOffWakeLocked()
	return ok && now.Before(at) && !now.Before(j.plannedLocked(j.sched, j.next))
}

// handOffWakeLocked returns when the hand-off of the job's next slot is
// over, and whether it is handed off. The caller holds j.mu.
func (j *Job) handOffWakeLocked() (time.Time, bool) {
	if j.state != jobStarted || j.paused() || j.next.IsZero() || j.cfg.misfire == MisfireSkip {
		return time.Time{}, false
	}
	wait, _, ok := j.handOffWaitLocked(j.next)
	if !ok {
		return time.Time{}, false
	}
	return j.plannedLocked(j.sched, j.next).Add(wait / 4), true
}

// wakeAtLocked returns when the job's timer is to wake it, by the wall
// clock at now: at its next slot's planned start, or, once that has
// passed, at the end of the slot's hand-off if another node owns it
// (deferredLocked). The caller holds j.mu.
func (j *Job) wakeAtLocked(now time.Time) time.Time {
	at := j.plannedLocked(j.sched, j.next)
	if now.Before(at) {
		return at
	}
	if end, ok := j.handOffWakeLocked(); ok && now.Before(end) {
		return end
	}
	return at
}

// holdLocked hands runs, slots of the job that fell due together, to the
// job's owner, if the job has a RunLimit and its store is a Sharer that
// says another node owns it, and they are Scheduled, or catch-ups (a wake
// made late by a busy machine: a herd) whose hand-off may still wait (it
// is not yet far): the RunLimit holds them, with no runner and no
// goroutine, until their hand-off is over (handOff), and they are not in
// flight to the overlap policy meanwhile. It reports whether it held
// them. The caller holds j.mu.
func (j *Job) holdLocked(x *active, runs []pending) bool {
	l := j.cfg.limit
	if l == nil || j.cfg.shared == nil || len(runs) == 0 {
		return false
	}
	late := false
	for _, p := range runs {
		if p.run.Reason != Scheduled && p.run.Reason != CatchUp || p.claim != nil || p.handed || p.inline {
			return false
		}
		late = late || p.run.Reason == CatchUp
	}
	at, last, far := j.handOffAt(&runs[0])
	if at.IsZero() || late && !time.Now().Before(far) {
		return false
	}
	w := &waiting{work: work{j: j, batch: slices.Clone(runs)}, hold: true, at: at, last: last, far: far, due: runs[0].run.Due}
	if soon := time.Now().Add(handOffBatch); w.at.Before(soon) {
		// Its hand-off is over already (a herd whose wakes took that
		// long): it waits for the next look at which slots are claimed,
		// with those that come meanwhile.
		w.at = soon
	}
	l.mu.Lock()
	l.holdLocked(w)
	l.mu.Unlock()
	x.waiting = append(x.waiting, w)
	return true
}

// holdLocked keeps w, runs handed to their owner, until w.at, and arms
// the RunLimit's timer for it. The caller holds l.mu.
func (l *RunLimit) holdLocked(w *waiting) {
	heap.Push(&l.held, w)
	if l.held[0] == w {
		d := time.Until(w.at)
		if l.timer == nil {
			l.timer = time.AfterFunc(d, l.handOff)
		} else {
			l.timer.Reset(d)
		}
	}
}

// handOff ends the holds whose time has come: it asks their stores which
// of their slots are claimed (claimedElsewhere), with the RunLimit
// unlocked; those are the owner's, and end without a claim or a record;
// the others wait once more while their owner is live (again), or are
// the job's to run, under its overlap policy, as if they had just fallen
// due. It arms the timer for the next hold. One handOff runs at a time:
// a timer that fires meanwhile leaves the holds to it, so that a store
// that is slow to answer is asked once at a time, not once a firing.
func (l *RunLimit) handOff() {
	l.mu.Lock()
	if l.handing {
		l.rehand = true
		l.mu.Unlock()
		return
	}
	l.handing = true
	for {
		var ready []*waiting
		now := time.Now()
		for len(l.held) > 0 && !l.held[0].at.After(now) {
			if w := heap.Pop(&l.held).(*waiting); w.state == waitQueued {
				ready = append(ready, w)
			} // else dropped by its job's Stop or Pause
		}
		if len(l.held) > 0 {
			l.timer.Reset(time.Until(l.held[0].at))
		}
		l.rehand = false
		l.mu.Unlock()
		claimedElsewhere(ready)
		var done []*waiting
		l.mu.Lock()
		now = time.Now()
		for _, w := range ready {
			switch {
			case w.state != waitQueued: // dropped meanwhile
			case !w.claimed && w.again(now):
				l.holdLocked(w)
			default:
				w.state = waitStarted
				done = append(done, w)
			}
		}
		l.mu.Unlock()
		for _, w := range done {
			w.j.unhold(w)
		}
		l.mu.Lock()
		if !l.rehand {
			l.handing = false
			l.mu.Unlock()
			return
		}
	}
}

// unhold ends w, a hold of the job's runs whose hand-off is over: runs
// the store found claimed are the owner's, and end with no record, as do
// those of a job stopped or paused meanwhile; the others go to the
// overlap policy, marked handed, as slots that have just fallen due, but
// for a policy other than OverlapAllow and OverlapBufferAll, they are
// Skipped if a newer run was handed meanwhile (a RunNow, a slot of a
// schedule changed): an older slot does not replace it, nor take its
// place in the buffer of one. Under OverlapBufferAll they join the
// buffer.
func (j *Job) unhold(w *waiting) {
	j.mu.Lock()
	x := j.x
	if x != nil {
		x.unwaitLocked(w)
	}
	if w.claimed || x == nil || j.state != jobStarted || j.paused() {
		j.mu.Unlock()
		return
	}
	runs := w.batch
	var obs []Record
	if o := j.cfg.overlap; x.handed.After(runs[len(runs)-1].run.Due) && o != OverlapAllow && o != OverlapBufferAll {
		for _, p := range runs {
			obs = append(obs, j.drop(p, errOverlap))
		}
	} else {
		for i := range runs {
			runs[i].handed = true
		}
		obs = j.submitLocked(runs, nil)
	}
	j.tellLocked(obs)
	j.mu.Unlock()
	j.told(obs)
}

// dropHoldsLocked drops the job's holds, with no record: a paused job
// runs none of the slots it held for their owner. The caller holds j.mu.
func (j *Job) dropHoldsLocked() {
	x := j.x
	if x == nil {
		return
	}
	kept := x.waiting[:0]
	for _, w := range x.waiting {
		if w.hold {
			j.cfg.limit.drop(w)
			continue
		}
		kept = append(kept, w)
	}
	clear(x.waiting[len(kept):])
	x.waiting = kept
	if len(kept) == 0 {
		x.waiting = nil
	}
}

// again reports whether w, a hold whose slot its store reported
// unclaimed, waits for its owner once more, with w.at set to when: the
// owner is live and takes the slot (Owns), and at now the slot is not yet
// at the last of its wait (handOffAt), or, if this look found others of the
// slots of the same owner held with it claimed (by the owner, most
// likely: a herd it is still claiming), not yet at far, or, no look
// having found one so far, if it found herdHolds of them unclaimed (a herd
// the owner has not begun), not yet a quarter of the way from last to
// far (so that a dead owner's herd waits that long, not until far). The
// owner being at its limit is the Sharer's to say (Owns). The waits grow
// with the time since the due time, so that a herd of a few seconds costs
// a few looks. The caller holds the RunLimit's lock.
func (w *waiting) again(now time.Time) bool {
	j := w.j
	s, ok := inner(j.cfg.shared).(Sharer)
	end := w.last
	switch {
	case w.progress:
		end = w.far
	case w.unbegun:
		end = w.last.Add(w.far.Sub(w.last) / 4)
	}
	if !ok || !w.asked || !now.Before(end) || s.Owns(j.name) {
		return false
	}
	w.at = now.Add(max(w.last.Sub(w.due)/4, now.Sub(w.due)/2))
	if w.at.After(end) {
		w.at = end
	}
	return true
}

// An owning Sharer names each job's owner as Owns sees it, or "" (the
// Store of schedule/sqlstore does), so that a hold waits on while the
// slots of its own owner are being claimed, not those of another node.
// Without it, the store's nodes count as one owner. Owner is called
// without the RunLimit's lock, once a hold a look.
type owning interface {
	Owner(job string) string
}

// lookPiece bounds the slots of one call of Claimed: a look at the holds
// of a herd of a million asks in pieces, each bounded in time alone, and
// all of them by lookBudget.
const lookPiece = 5000

// lookBudget returns how long a look may ask s in all: half its lease, or
// 10s if that is longer. The pieces it leaves unasked are claimed.
func lookBudget(s Sharer) time.Duration {
	return max(s.Lease()/2, 10*time.Second)
}

// claimedElsewhere asks the Sharer of each of ws which of their slots
// have a record, in calls of lookPiece slots at most (a hold's slots in
// one), and marks the holds all of whose slots do, and those of the same
// owner as such a hold (progress: the record may be another node's, but
// it is most likely the owner's), and, as unbegun, herdHolds holds or
// more of one owner that no look has found claiming them. A call that
// fails, or takes longer than a quarter of the store's lease (1s to 10s),
// marks none of its holds, and the store is asked no more in this look,
// nor once the look has taken lookBudget.
func claimedElsewhere(ws []*waiting) {
	type asked struct {
		ws []*waiting
		rs []Record
		at []int // the index in rs of each hold's first slot
	}
	by := map[Sharer]*asked{}
	for _, w := range ws {
		w.asked, w.claimed, w.progress, w.unbegun = false, false, false, false
		s, ok := inner(w.j.cfg.shared).(Sharer)
		if !ok || !isKey(s) {
			continue
		}
		a := by[s]
		if a == nil {
			a = &asked{}
			by[s] = a
		}
		a.ws = append(a.ws, w)
		a.at = append(a.at, len(a.rs))
		for _, p := range w.batch {
			a.rs = append(a.rs, Record{Job: w.j.name, Due: p.run.Due})
		}
	}
	for s, a := range by {
		o, named := s.(owning)
		owners := make([]string, len(a.ws))
		progress := map[string]bool{}
		unbegun := map[string]int{} // holds asked whose owner had not begun, by owner
		end := time.Now().Add(lookBudget(s))
		for lo := 0; lo < len(a.ws); {
			hi := lo + 1 // a piece: holds lo to hi, lookPiece slots at most, one hold at least
			for hi < len(a.ws) && a.at[hi]-a.at[lo]+len(a.ws[hi].batch) <= lookPiece {
				hi++
			}
			to := len(a.rs)
			if hi < len(a.ws) {
				to = a.at[hi]
			}
			ctx, cancel := context.WithDeadline(context.Background(), earliest(end, time.Now().Add(min(max(s.Lease()/4, time.Second), 10*time.Second))))
			claimed, err := s.Claimed(ctx, a.rs[a.at[lo]:to])
			cancel()
			if err != nil || len(claimed) != to-a.at[lo] {
				break
			}
			for i := lo; i < hi; i++ {
				w := a.ws[i]
				w.asked, w.claimed = true, true
				for k := range w.batch {
					if !claimed[a.at[i]-a.at[lo]+k] {
						w.claimed = false
					}
				}
				if named {
					owners[i] = o.Owner(w.j.name)
				}
				if !w.begun {
					unbegun[owners[i]]++
				}
				if w.claimed {
					progress[owners[i]] = true
				}
			}
			lo = hi
		}
		for i, w := range a.ws {
			w.progress = progress[owners[i]]
			w.unbegun = !w.begun && unbegun[owners[i]] >= herdHolds
			w.begun = w.begun || w.progress
		}
	}
}

// herdHolds is how many holds of one owner a look must find unclaimed, no
// look having found one of them claimed yet, for it to take them for a
// herd that the owner has not begun to claim: an owner busy with a herd
// may not have sent its first claims when their hand-off is over, and
// they wait for it (again), a quarter as long as for an owner that claims
// them. Once a look has found some of them claimed, each look must, for
// the rest to wait on.
const herdHolds = 100

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// holds is a min-heap of holds by hand-off time.
type holds []*waiting

func (h holds) Len() int           { return len(h) }
func (h holds) Less(i, k int) bool { return h[i].at.Before(h[k].at) }
func (h holds) Swap(i, k int)      { h[i], h[k] = h[k], h[i] }
func (h *holds) Push(x any)        { *h = append(*h, x.(*waiting)) }
func (h *holds) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}

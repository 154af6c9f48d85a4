package schedule

import (
	"container/heap"
	"context"
	"time"
)

// handOffBatch is the least wait of a slot handed off: the slots whose
// hand-off is over when they are handed off wait this long, so that one
// look at which slots are claimed answers for those that come meanwhile.
const handOffBatch = 10 * time.Millisecond

// handOffAt returns when this node is to claim the slot of p, if the
// job's store is a Sharer that gives the slot to another node first (see
// Sharer): a quarter of the grace period after the slot's due time, and
// last, the latest it waits for a live owner that has not claimed it yet,
// half the grace period after it; but never more than a quarter and half
// of the time to the job's next slot, so that a run handed off is not
// still waiting, in flight to the overlap policy, when that slot falls
// due. It returns the zero times if the claim is to be made at once.
func (j *Job) handOffAt(p *pending) (at, last time.Time) {
	if p == nil || j.cfg.shared == nil || p.run.Due.IsZero() || p.claim != nil ||
		p.run.Reason != Scheduled || p.run.Attempt > 1 || j.cfg.grace/4 <= 0 {
		return time.Time{}, time.Time{}
	}
	s, ok := inner(j.cfg.shared).(Sharer)
	if !ok || s.Owns(j.name) {
		return time.Time{}, time.Time{}
	}
	wait := j.cfg.grace
	if n := next(j.sched, p.run.Due); !n.IsZero() {
		wait = min(wait, n.Sub(p.run.Due))
	}
	if wait/4 <= 0 {
		return time.Time{}, time.Time{}
	}
	return p.run.Due.Add(wait / 4), p.run.Due.Add(wait / 2)
}

// firstPending returns the run a runner of first and batch takes first:
// first if its Due is set, or else the first of batch, or else the first
// of the job's queue, or nil. The caller holds j.mu.
func (j *Job) firstPending(first *pending, batch []pending) *pending {
	switch {
	case !first.run.Due.IsZero():
		return first
	case len(batch) > 0:
		return &batch[0]
	case j.x != nil && len(j.x.queue) > 0:
		return &j.x.queue[0]
	}
	return nil
}

// handOff waits until the hand-off time of the slot of p, if any (see
// Sharer), or ctx ends. It is the wait of a job without a RunLimit, whose
// runner holds its goroutine; a RunLimit waits without one (deferLocked).
func (j *Job) handOff(ctx context.Context, p *pending) {
	if at, _ := j.handOffAt(p); !at.IsZero() {
		if d := time.Until(at); d > 0 {
			sleep(ctx, d)
		}
	}
}

// deferLocked keeps w, whose slot is handed to its owner first, until
// w.at, and arms the RunLimit's timer for it. The caller holds l.mu.
func (l *RunLimit) deferLocked(w *waiting) {
	at := w.at
	heap.Push(&l.deferred, w)
	l.waits++
	if len(l.deferred) > 0 && l.deferred[0] == w {
		d := time.Until(at)
		if l.timer == nil {
			l.timer = time.AfterFunc(d, l.handOff)
		} else {
			l.timer.Reset(d)
		}
	}
}

// handOff moves the runs whose hand-off time has come from the deferred
// ones to the runners, or to the queue if the limit is reached, after
// the runs waiting there, and arms the timer for the next. It first asks
// their stores which of their slots are claimed (claimedElsewhere), with
// the RunLimit unlocked.
func (l *RunLimit) handOff() {
	var ready []*waiting
	l.mu.Lock()
	now := time.Now()
	for len(l.deferred) > 0 && !l.deferred[0].at.After(now) {
		if w := heap.Pop(&l.deferred).(*waiting); w.state == waitQueued {
			ready = append(ready, w)
		} // else dropped, and counted out of waits then
	}
	if len(l.deferred) > 0 {
		l.timer.Reset(time.Until(l.deferred[0].at))
	}
	l.mu.Unlock()
	claimedElsewhere(ready)
	var start []*waiting
	l.mu.Lock()
	now = time.Now()
	for _, w := range ready {
		switch {
		case w.state != waitQueued: // dropped meanwhile
		case w.elsewhere.IsZero() && w.again(now):
			l.waits--
			l.deferLocked(w)
		case l.running < l.max:
			l.running++
			l.waits--
			w.state = waitStarted
			start = append(start, w)
		default:
			l.queue = append(l.queue, w)
		}
	}
	l.mu.Unlock()
	for _, w := range start {
		w.j.started(w)
		go l.serve(w.work)
	}
}

// again reports whether w, a deferred run whose slot its store reported
// unclaimed, its hand-off over, waits for its owner once more, with w.at
// set to when: the owner is live and not at its limit (a herd it is still
// claiming), and at now the slot is not yet at the last of its wait
// (handOffAt). The caller holds the RunLimit's lock.
func (w *waiting) again(now time.Time) bool {
	j := w.j
	s, ok := inner(j.cfg.shared).(Sharer)
	if !ok || !w.asked || w.due.IsZero() || !now.Before(w.last) || s.Owns(j.name) {
		return false
	}
	w.at = now.Add(w.last.Sub(w.due) / 4)
	if w.at.After(w.last) {
		w.at = w.last
	}
	return true
}

// claimedElsewhere asks the Sharer of each of ws which of their slots
// have a record, one call a store, and marks those: their runners end
// without a claim. A store that fails, or takes longer than a quarter of
// its lease (1s to 10s), marks none: their runners claim as usual.
func claimedElsewhere(ws []*waiting) {
	type asked struct {
		ws []*waiting
		rs []Record
	}
	by := map[Sharer]*asked{}
	for _, w := range ws {
		w.asked = false
		s, ok := inner(w.j.cfg.shared).(Sharer)
		if !ok || w.due.IsZero() || !isKey(s) {
			continue
		}
		a := by[s]
		if a == nil {
			a = &asked{}
			by[s] = a
		}
		a.ws = append(a.ws, w)
		a.rs = append(a.rs, Record{Job: w.j.name, Due: w.due})
	}
	for s, a := range by {
		ctx, cancel := context.WithTimeout(context.Background(), min(max(s.Lease()/4, time.Second), 10*time.Second))
		claimed, err := s.Claimed(ctx, a.rs)
		cancel()
		if err != nil || len(claimed) != len(a.ws) {
			continue
		}
		for i, w := range a.ws {
			w.asked = true
			if claimed[i] {
				w.elsewhere = w.due
			}
		}
	}
}

// handOffs is a min-heap of deferred runs by hand-off time.
type handOffs []*waiting

func (h handOffs) Len() int           { return len(h) }
func (h handOffs) Less(i, k int) bool { return h[i].at.Before(h[k].at) }
func (h handOffs) Swap(i, k int)      { h[i], h[k] = h[k], h[i] }
func (h *handOffs) Push(x any)        { *h = append(*h, x.(*waiting)) }
func (h *handOffs) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}

package schedule

import (
	"container/heap"
	"context"
	"time"
)

// handOffAt returns when this node is to claim the slot of p, if the
// job's store is a Sharer that gives the slot to another node first (see
// Sharer): a quarter of the grace period after the slot's due time. It
// returns the zero time if the claim is to be made at once.
func (j *Job) handOffAt(p *pending) time.Time {
	if p == nil || j.cfg.shared == nil || p.run.Due.IsZero() || p.claim != nil || p.run.Reason != Scheduled || p.run.Attempt > 1 || j.cfg.grace/4 <= 0 {
		return time.Time{}
	}
	s, ok := inner(j.cfg.shared).(Sharer)
	if !ok || s.Owns(j.name) {
		return time.Time{}
	}
	return p.run.Due.Add(j.cfg.grace / 4)
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
	if at := j.handOffAt(p); !at.IsZero() {
		if d := time.Until(at); d > 0 {
			sleep(ctx, d)
		}
	}
}

// deferLocked keeps w, whose slot is handed to its owner first, until at,
// and arms the RunLimit's timer for it. The caller holds l.mu.
func (l *RunLimit) deferLocked(w *waiting, at time.Time) {
	w.at = at
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
// the runs waiting there, and arms the timer for the next.
func (l *RunLimit) handOff() {
	var start []*waiting
	l.mu.Lock()
	now := time.Now()
	for len(l.deferred) > 0 && !l.deferred[0].at.After(now) {
		w := heap.Pop(&l.deferred).(*waiting)
		switch {
		case w.state != waitQueued: // dropped: counted out of waits then
		case l.running < l.max:
			l.running++
			l.waits--
			w.state = waitStarted
			start = append(start, w)
		default:
			l.queue = append(l.queue, w)
		}
	}
	if len(l.deferred) > 0 {
		l.timer.Reset(time.Until(l.deferred[0].at))
	}
	l.mu.Unlock()
	for _, w := range start {
		w.j.started(w)
		go l.serve(w.work)
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

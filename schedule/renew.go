package schedule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/circulation-go/circulation"
)

// A renewal keeps the lease of one run's claim on a SharedStore. A Trigger
// of its own calls Renew every Lease()/3 (every Lease()/6 after a
// failure), and a timer armed for the deadline gives the lease up once a
// full Lease() has passed since the last renewal that worked, or since the
// claim if none did: from then on the store may let another node take the
// slot over. The timer gives the lease up whatever Renew is doing: a Renew
// that hangs, deaf to its context, cannot keep the run going past the
// deadline.
//
// The Trigger and the deadline's timer are made when the first Renew is
// due (begin), by the one timer a run has until then: most runs end
// sooner, and cost that timer alone. Until then, no Renew is in flight,
// and the first is due before the deadline.
//
// Both run on the runtime's timers, not the job's Scheduler: a Scheduler
// that stops arming timers (a stopped wheel.Wheel, during a shutdown)
// would otherwise leave a run in flight with a lease no one renews and no
// one gives up, while another node may take its slot over.
type renewal struct {
	cfg    *config // the job's: its logger
	ls     SharedStore
	lease  time.Duration
	cancel context.CancelCauseFunc // the run's

	// Set by begin, under mu, when the first Renew is due; nil before.
	t      *circulation.Trigger // calls Renew
	gone   context.Context      // done once the lease is given up
	giveUp context.CancelFunc   // gone's

	mu       sync.Mutex
	rec      Record      // the claim renewed: the run's, then its latest attempt's (Retry)
	retrying bool        // the store's Retry is claiming the next attempt
	deadline time.Time   // when the lease may expire, by the wall clock
	last     error       // of the latest failed Renew
	inflight bool        // a Renew is under way
	timer    *time.Timer // armed for the first Renew (begin), then for deadline; nil once stopped
	stopped  bool        // stopRenewal was called
	lost     bool        // the lease is given up, or the store said it is lost: once
}

// renew starts the renewal of the lease of the claim of p, whose run's
// context cancel cancels: with ErrLeaseLost if the store says the lease
// is lost, and with ErrLeaseNotRenewed once it could not be renewed for a
// full Lease(). No Renew outlives that moment: each one's context ends
// there.
//
//go:noinline
func (j *Job) renew(ls SharedStore, p *pending, cancel context.CancelCauseFunc) *renewal {
	since := p.start
	if h := p.claim; h != nil {
		since = h.since
	}
	r := &renewal{cfg: j.cfg, ls: ls, lease: ls.Lease(), cancel: cancel, rec: j.claimed(p), deadline: since.Add(ls.Lease())}
	r.mu.Lock()
	r.armLocked()
	r.mu.Unlock()
	return r
}

// begin is the callback of the timer armed for the first Renew: it makes
// the Trigger that renews, arms the timer for the deadline, and fires the
// Trigger, unless the renewal was stopped meanwhile.
func (r *renewal) begin() {
	if testHookBegin != nil {
		testHookBegin()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.t != nil {
		return
	}
	r.gone, r.giveUp = context.WithCancel(context.Background())
	r.t = circulation.Bind(nil, r.tick)
	r.armLocked()
	// Fired under r.mu, so that stopRenewal, which reads r.t under it,
	// stops this run too.
	r.t.Fire()
}

// tick is the Func of the renewal's Trigger: one Renew, bounded by the
// deadline.
func (r *renewal) tick(rctx context.Context) (time.Duration, bool) {
	sent := time.Now()
	r.mu.Lock()
	deadline, rec := r.deadline, r.rec
	r.inflight = sent.Before(deadline)
	r.mu.Unlock()
	if !sent.Before(deadline) {
		r.expired(deadline)
		return 0, false
	}
	ctx, stop := context.WithDeadline(rctx, deadline)
	err := r.ls.Renew(ctx, rec)
	stop()
	r.mu.Lock()
	r.inflight = false
	// A Retry claimed the next attempt meanwhile, or is claiming it: a
	// store that refused this Renew refused the attempt before, and one
	// that took it renewed a lease that Retry renews in turn.
	stale := r.retrying || r.rec.Attempt != rec.Attempt
	r.mu.Unlock()
	switch {
	case rctx.Err() != nil || r.gone.Err() != nil:
		return 0, false // the run has ended, or its lease was given up
	case stale:
		return min(r.lease/6, max(time.Until(deadline), 0)), true
	case err == nil || errors.Is(err, ErrReplaced):
		if err != nil {
			// A newer run on another node replaces this one: it ends, and
			// its lease is renewed until its outcome is recorded.
			r.cancel(ErrReplaced)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.stopped {
			return 0, false
		}
		r.deadline = sent.Add(r.lease) // counted from before the call, as the store's is
		r.armLocked()
		return r.lease / 3, true
	case errors.Is(err, ErrLeaseLost):
		r.mu.Lock()
		lost := r.lost
		r.lost = true
		r.mu.Unlock()
		if !lost {
			r.cancel(ErrLeaseLost)
			r.cfg.leaseLost(rec, ErrLeaseLost)
		}
		return 0, false
	}
	r.mu.Lock()
	r.last = err
	r.mu.Unlock()
	if left := time.Until(deadline); left > 0 {
		return min(r.lease/6, left), true
	}
	r.expired(deadline)
	return 0, false
}

// moving says whether a Retry is claiming the next attempt of the run: the
// answers of Renew meanwhile say nothing of the lease.
func (r *renewal) moving(on bool) {
	r.mu.Lock()
	r.retrying = on
	r.mu.Unlock()
}

// retried makes rec, the next attempt of the run, which a Retry sent at
// sent claimed with a fresh lease, the claim the renewal renews.
func (r *renewal) retried(rec Record, sent time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec, r.retrying = rec, false
	if r.stopped || r.lost || r.givenUpLocked() {
		return
	}
	r.deadline = sent.Add(r.lease)
	r.armLocked()
}

// armLocked arms the timer for the deadline, in place of the one armed
// before; or, before begin, for the first Renew: a third of a lease from
// now, or half-way to the deadline if that is sooner (a claim that took
// long left less than a lease). The caller holds r.mu.
func (r *renewal) armLocked() {
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.t == nil {
		r.timer = time.AfterFunc(max(min(r.lease/3, time.Until(r.deadline)/2), 0), r.begin)
		return
	}
	deadline := r.deadline
	r.timer = time.AfterFunc(max(time.Until(deadline), 0), func() { r.expired(deadline) })
}

// givenUpLocked reports whether the lease was given up. The caller holds
// r.mu.
func (r *renewal) givenUpLocked() bool {
	return r.gone != nil && r.gone.Err() != nil
}

// expired gives the lease up if deadline is still its deadline and has
// passed; a timer that comes early by the wall clock is armed again for
// the rest.
func (r *renewal) expired(deadline time.Time) {
	r.mu.Lock()
	if r.lost || r.givenUpLocked() || !r.deadline.Equal(deadline) {
		r.mu.Unlock()
		return // given up already (the timer and a Renew's end may both come at the deadline), or renewed since
	}
	if time.Now().Before(deadline) {
		if !r.stopped {
			r.armLocked()
		}
		r.mu.Unlock()
		return
	}
	cause := fmt.Errorf("%w for %v", ErrLeaseNotRenewed, r.lease)
	switch {
	case r.inflight:
		// The Renew under way had until now: whether it has noticed or
		// not, its context's deadline is what ended it.
		cause = fmt.Errorf("%w: %w", cause, context.DeadlineExceeded)
	case r.last != nil:
		cause = fmt.Errorf("%w: %w", cause, r.last)
	}
	rec := r.rec
	r.lost = true
	r.mu.Unlock()
	r.expire(cause)
	r.cfg.leaseLost(rec, cause)
}

// expire gives the lease up: the run is cancelled with cause, and no
// longer waits for a Renew in flight.
func (r *renewal) expire(cause error) {
	r.cancel(cause)
	r.giveUp()
}

// stopRenewal ends the renewal of r: no Renew starts after it returns. It
// waits for a Renew in flight, but not past the deadline: once the lease
// is given up, the run no longer waits for a Renew that hangs, and Stop
// waits for it instead. It may be called more than once.
func (j *Job) stopRenewal(x *active, r *renewal) {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	if r.t == nil {
		// Before the first Renew: none was sent, and begin sends none.
		r.stopped = true
		r.timer.Stop()
		r.timer = nil
		r.mu.Unlock()
		return
	}
	rt := r.t
	r.mu.Unlock()
	if rt.Stop(r.gone) != nil {
		// Given up while a Renew hangs: its Trigger returns when Renew
		// does.
		j.mu.Lock()
		xr := x.rareLocked()
		xr.hung = slices.DeleteFunc(xr.hung, func(t *circulation.Trigger) bool { return !t.Running() })
		xr.hung = append(xr.hung, rt)
		j.mu.Unlock()
	}
	r.mu.Lock()
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.mu.Unlock()
	r.giveUp() // releases gone's resources; the lease is the run's no more
}

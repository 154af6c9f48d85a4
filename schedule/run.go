package schedule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/circulation-go/circulation"
)

// active is the part of a Job that an idle job does not need: its runs,
// what it knows of its store, and its lease machinery. Its fields are
// guarded by Job.mu, except store and reclaim, which are set once when it
// is made.
type active struct {
	store   Store                // the job's store: WithStore's, or a MemoryStore of its own
	reclaim *circulation.Trigger // LeaseStore only: looks for expired claims every Lease()

	runs    []flight      // runs in flight, to cancel on Stop and OverlapReplace
	flights uint64        // the id of the latest flight
	queue   []pending     // runs waiting for the runner (all policies but OverlapAllow)
	runners int           // goroutines running the job's Func or about to
	idle    chan struct{} // closed once no runner is left and no callback of the job's timer runs
	handed  time.Time     // the latest Due handed to a runner: a Manual run's Due is after it

	last   time.Time // the latest Due claimed, by this job or another, or read from the store
	floor  time.Time // slots before it are never caught up: the job started, resumed or changed schedule then
	outage bool      // a store call failed since the last catch-up: the next Scheduled run first catches up (MisfireRunAll)
	missed time.Time // the earliest Due whose claim failed since the last catch-up, or zero: the catch-up starts there
	fails  uint64    // claims that failed: a catch-up ends the outage only if none failed while it looked
	look   bool      // LeaseStore: a look for expired claims found the job busy; look again once it is free
}

// A flight is a run in flight.
type flight struct {
	id        uint64
	cancel    context.CancelCauseFunc
	recovered bool // a claim taken over from another node: OverlapReplace does not cancel it
}

// A pending run is one a runner will start: a slot, or a claim a LeaseStore
// handed over (claimed, with its record in rec).
type pending struct {
	run      Run
	rec      Record
	claimed  bool
	since    time.Time // claimed: when Reclaim was called, the latest the store can have started its lease
	buffered bool      // OverlapBufferOne: the one run that follows the run in flight
}

// active returns j.x, making it if need be. The caller holds j.mu.
func (j *Job) active(now time.Time) *active {
	if j.x != nil {
		return j.x
	}
	x := &active{store: j.cfg.store, floor: now}
	if x.store == nil {
		x.store = NewMemoryStore(16)
	}
	if j.cfg.lease != nil {
		x.reclaim = circulation.Bind(j.cfg.sched, j.reclaimTick)
	}
	j.x = x
	return x
}

// noCatchUpBeforeLocked says that slots before now are not to be caught
// up after a store outage: the job resumed or changed schedule at now.
func (j *Job) noCatchUpBeforeLocked(now time.Time) {
	if j.x != nil {
		j.x.floor = now
	}
}

// scanLimit bounds the slots a job looks at one by one after a gap: the
// catch-up runs, and the Missed records reported.
func (c *config) scanLimit() int { return max(c.catchUp, 1000) }

// dueLocked handles the slots from first, which has fallen due, to now:
// the latest is on time if now is within the grace period after it; the
// others, and the latest if it is late, are missed, and the Misfire policy
// says which of them run. It returns the records of the slots that do not
// run; the others go to submitLocked.
func (j *Job) dueLocked(first, now time.Time, start bool) []Record {
	c := j.cfg
	head, latest := dueSlots(j.sched, first, now, c.scanLimit())
	missed := head
	onTime := now.Sub(latest) <= c.grace
	if !onTime {
		missed = append(missed, latest)
	}
	var run []pending
	var obs []Record
	miss := func(ts []time.Time) {
		for _, t := range ts {
			obs = append(obs, j.record(Run{Job: j.name, Due: t, Reason: CatchUp}, Missed, nil))
		}
	}
	switch c.misfire {
	case MisfireSkip:
		miss(missed)
	case MisfireRunOnce:
		if !onTime {
			miss(missed[:len(missed)-1])
			run = append(run, pending{run: Run{Job: j.name, Due: latest, Reason: CatchUp}})
		} else {
			miss(missed)
		}
	case MisfireRunAll:
		n := min(len(missed), c.catchUp)
		for _, t := range missed[:n] {
			run = append(run, pending{run: Run{Job: j.name, Due: t, Reason: CatchUp}})
		}
		miss(missed[n:])
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
		if !p.claimed && p.run.Due.After(x.handed) {
			x.handed = p.run.Due
		}
	}
	if j.state != jobStarted || j.paused() {
		why := errStopped
		if j.paused() {
			why = errPaused
		}
		for _, p := range runs {
			obs = append(obs, j.drop(p, why))
		}
		return obs
	}
	c := j.cfg
	if c.overlap == OverlapAllow {
		if c.maxParallel > 0 && x.runners >= c.maxParallel {
			for _, p := range runs {
				obs = append(obs, j.drop(p, errOverlap))
			}
			return obs
		}
		x.runners++
		go j.runner(slices.Clone(runs)) // runs is the caller's: a RunNow's stays on its stack
		return obs
	}
	if x.runners == 0 {
		x.queue = append(x.queue, runs...)
		x.runners = 1
		go j.runner(nil)
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
		if n := len(x.queue); n > 0 && x.queue[n-1].buffered {
			obs = append(obs, j.drop(x.queue[n-1], errOverlap))
			x.queue[n-1] = p
		} else {
			x.queue = append(x.queue, p)
		}
	case OverlapReplace:
		for _, f := range x.runs {
			if !f.recovered { // a Recovered run is not replaced: the new runs wait for it
				f.cancel(errReplaced)
			}
		}
		obs = append(obs, j.dropQueueLocked(errReplaced)...)
		x.queue = append(x.queue, runs...)
	}
	return obs
}

// drop returns the record of a pending run that will not run. It is
// never a claimed run: reclaimTick hands those only to a runner of their
// own, which leaves them to expire if it cannot start them.
func (j *Job) drop(p pending, why error) Record {
	return j.record(p.run, Skipped, why)
}

// dropQueueLocked empties the queue of pending runs and returns their
// records.
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
	return obs
}

// runner runs the pending runs of batch, then those of the queue, one
// after another, and exits when there are none left.
func (j *Job) runner(batch []pending) {
	x := j.x       // set before any runner starts, never changed
	var cur uint64 // the id of the flight in progress, if any
	normal := false
	defer func() {
		if normal {
			return
		}
		// The Func called runtime.Goexit: give up the runner's place, so
		// that the job goes on and Stop does not wait for it forever.
		j.mu.Lock()
		x.land(cur)
		j.exitLocked(x)
		j.mu.Unlock()
	}()
	for {
		j.mu.Lock()
		var p pending
		switch {
		case len(batch) > 0:
			p, batch = batch[0], batch[1:]
		case len(x.queue) == 1:
			p = x.queue[0]
			x.queue[0] = pending{}
			x.queue = x.queue[:0] // keeps the array for the next run
		case len(x.queue) > 1:
			p = x.queue[0]
			x.queue[0] = pending{}
			x.queue = x.queue[1:]
		default:
			j.exitLocked(x)
			j.mu.Unlock()
			normal = true
			return
		}
		if j.state != jobStarted || j.paused() {
			if p.claimed {
				// Not finished: its lease expires, and a replica takes
				// it over again.
				j.mu.Unlock()
				continue
			}
			why := errStopped
			if j.paused() {
				why = errPaused
			}
			r := j.drop(p, why)
			j.mu.Unlock()
			j.observe([]Record{r})
			continue
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		x.flights++
		cur = x.flights
		x.runs = append(x.runs, flight{id: cur, cancel: cancel, recovered: p.claimed})
		j.mu.Unlock()

		j.execute(ctx, cancel, x, &p, false)
		cancel(nil)

		j.mu.Lock()
		x.land(cur)
		cur = 0
		j.mu.Unlock()
	}
}

// land removes the flight id from the runs in flight, if it is there.
// The caller holds the job's lock.
func (x *active) land(id uint64) {
	if i := slices.IndexFunc(x.runs, func(f flight) bool { return f.id == id }); i >= 0 {
		x.runs = slices.Delete(x.runs, i, i+1)
	}
}

// exitLocked accounts for a runner that exits, and makes the look for
// expired claims that found the job busy, if it is free now. The caller
// holds j.mu.
func (j *Job) exitLocked(x *active) {
	x.runners--
	j.quietLocked()
	if x.look && j.freeLocked(x) && j.state == jobStarted && !j.paused() && !j.next.IsZero() {
		x.look = false
		fire(x.reclaim)
	}
}

// freeLocked reports whether the overlap policy would start a run at once:
// no run in flight, or under OverlapAllow fewer than WithMaxParallel. The
// caller holds j.mu.
func (j *Job) freeLocked(x *active) bool {
	if c := j.cfg; c.overlap == OverlapAllow {
		return c.maxParallel == 0 || x.runners < c.maxParallel
	}
	return x.runners == 0
}

// quiet reports whether nothing of the job's runs: no runner, and no
// callback of its timer. The caller holds j.mu.
func (j *Job) quiet() bool {
	return j.flags&jobBusy == 0 && (j.x == nil || j.x.runners == 0)
}

// quietLocked wakes the Stop waiting for the job to be quiet, if it is.
// The caller holds j.mu.
func (j *Job) quietLocked() {
	if x := j.x; x != nil && x.idle != nil && j.quiet() {
		close(x.idle)
		x.idle = nil
	}
}

// wait waits until the job is quiet.
func (j *Job) wait(ctx context.Context) error {
	for {
		j.mu.Lock()
		if j.quiet() {
			j.mu.Unlock()
			return nil
		}
		x := j.active(time.Now().Round(0))
		if x.idle == nil {
			x.idle = make(chan struct{})
		}
		idle := x.idle
		j.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// execute claims the slot of p (unless a LeaseStore handed it over
// claimed), runs the Func, and records the outcome. It reports false if
// the claim failed (not ErrClaimed): the slot is owed, and was reported
// Skipped unless retry says that it was before, when its claim first
// failed.
func (j *Job) execute(ctx context.Context, cancel context.CancelCauseFunc, x *active, p *pending, retry bool) (claimed bool) {
	c := j.cfg
	r := p.run
	rec := p.rec
	since := p.since // when the lease began, at the latest
	if p.claimed {
		rec.Reason, rec.Start = Recovered, time.Now().Round(0)
	} else {
		if r.Reason == Scheduled && c.misfire == MisfireRunAll {
			j.recoverOutage(ctx, cancel, x, r.Due)
			j.mu.Lock()
			stopped, paused := j.state != jobStarted, j.paused()
			j.mu.Unlock()
			if stopped || paused { // during the catch-up
				why := errStopped
				if paused {
					why = errPaused
				}
				j.observe([]Record{j.record(r, Skipped, why)})
				return true
			}
		}
		rec = Record{Job: r.Job, Due: r.Due, Reason: r.Reason, Status: Running,
			Start: time.Now().Round(0), Node: c.nodeName(), Attempt: 1}
		since = rec.Start
		err := x.store.Claim(ctx, rec)
		j.mu.Lock()
		switch {
		case err == nil || errors.Is(err, ErrClaimed):
			// A claim that works again does not end the outage: the
			// slots whose claims failed are still owed (recoverOutage).
			if r.Due.After(x.last) {
				x.last = r.Due
			}
		case ctx.Err() == nil:
			x.outage = true
			x.fails++
			if r.Reason != Manual && (x.missed.IsZero() || r.Due.Before(x.missed)) {
				x.missed = r.Due
			}
		}
		j.mu.Unlock()
		switch {
		case errors.Is(err, ErrClaimed) && r.Reason != Manual:
			return true // the slot is another replica's, which records it
		case err != nil && retry && ctx.Err() == nil:
			return false
		case err != nil: // a Manual run's Due is its own: another one's claim is not its run
			s := j.record(r, Skipped, nil)
			if cause := context.Cause(ctx); cause != nil {
				s.Err = cause.Error()
			} else {
				s.Err = "schedule: claim: " + err.Error()
			}
			j.observe([]Record{s})
			return false
		}
	}

	runCtx := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	r.Attempt = rec.Attempt
	var renew *circulation.Trigger
	if ls := c.lease; ls != nil && ls.Lease() > 0 {
		renew = j.renewer(ls, rec, since, cancel)
	}
	var err error
	if ctx.Err() == nil { // not stopped or replaced since the claim
		err = j.call(runCtx, r)
	}
	// The outcome is what the contexts said when the Func returned: a Stop
	// or a replacement after that does not make a finished run Canceled.
	var cause, runErr error
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	runErr = runCtx.Err()
	if testHookReturned != nil {
		testHookReturned()
	}
	if renew != nil {
		_ = renew.Stop(context.Background()) // no renewal after Finish
	}
	// A lease given up since, even after the Func returned, decides: the
	// slot is taken over and run again, so this run is not its outcome.
	if lost := context.Cause(ctx); errors.Is(lost, ErrLeaseNotRenewed) {
		cause = lost
	}
	rec.End = time.Now().Round(0)
	rec.Status, rec.Err = outcome(cause, runErr, c.timeout, err)
	// A run that gave up its lease leaves the claim to expire, so that the
	// slot is taken over and run again; any other outcome is recorded.
	if !errors.Is(cause, ErrLeaseNotRenewed) {
		// ctx has no values: the runner made it from context.Background.
		if ferr := x.store.Finish(context.Background(), rec); ferr != nil {
			rec.Err = joinErr(rec.Err, "schedule: finish: "+ferr.Error())
		}
	}
	if f := c.observer; f != nil {
		f(rec)
	}
	return true
}

// outcome returns the status of a run and its error message, from the
// cause of the run's cancellation, if it was cancelled, and the error of
// its context, read when the Func returned.
func outcome(cause, runErr error, timeout time.Duration, err error) (Status, string) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if cause != nil && runErr != context.DeadlineExceeded {
		return Canceled, joinErr(cause.Error(), msg)
	}
	if runErr == context.DeadlineExceeded {
		if errors.Is(err, context.DeadlineExceeded) {
			msg = "" // the Func passed on its context's error
		}
		return Failed, joinErr(fmt.Sprintf("schedule: run timed out after %v: %v", timeout, context.DeadlineExceeded), msg)
	}
	if err != nil {
		return Failed, msg
	}
	return Succeeded, ""
}

func joinErr(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || b == a:
		return a
	}
	return a + ": " + b
}

// call runs the Func, turning a panic into an error.
func (j *Job) call(ctx context.Context, r Run) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("schedule: panic: %v", v)
		}
	}()
	return j.f(ctx, r)
}

// recoverOutage runs, before the slot due, the slots its store's failures
// made it miss, if it failed since the last catch-up: under MisfireRunAll,
// each of them, oldest first, up to the catch-up limit. They are the slots
// from the first one whose claim failed; or, if the store failed when the
// job started, the slots after the last record the job knows. A slot that
// has a record by now, this job's or another replica's, is not run again:
// its claim says ErrClaimed.
//
// The catch-up stops at the first claim that fails, which leaves that slot
// and the later ones owed, without reporting them again; and it stops if
// the job is paused, resumed, stopped or given a schedule meanwhile. The
// outage ends only if no claim failed while it looked at the store.
func (j *Job) recoverOutage(ctx context.Context, cancel context.CancelCauseFunc, x *active, due time.Time) {
	j.mu.Lock()
	outage, missed, fails, base, floor, sched := x.outage, x.missed, x.fails, x.last, x.floor, j.sched
	j.mu.Unlock()
	if floor.After(base) {
		base = floor
	}
	if !outage {
		return
	}
	l, err := x.store.Last(ctx, j.name)
	switch {
	case err == nil:
		if l.Due.After(base) {
			base = l.Due
		}
	case !errors.Is(err, ErrNoRecord):
		return // still failing: the claim will say so
	}
	if !missed.IsZero() && !missed.Before(floor) && (base.IsZero() || missed.Before(base)) {
		base = missed.Add(-1) // so that the first slot after it is the missed one itself
	}
	j.mu.Lock()
	if x.fails == fails {
		x.outage, x.missed = false, time.Time{}
	}
	j.mu.Unlock()
	if base.IsZero() {
		return // no record anywhere: a new job catches up nothing
	}
	t := base
	for range j.cfg.catchUp {
		t = next(sched, t)
		if t.IsZero() || !t.Before(due) || ctx.Err() != nil {
			return
		}
		j.mu.Lock()
		changed := j.state != jobStarted || j.paused() || !x.floor.Equal(floor)
		j.mu.Unlock()
		if changed {
			return
		}
		if !j.execute(ctx, cancel, x, &pending{run: Run{Job: j.name, Due: t, Reason: CatchUp}}, true) {
			return
		}
	}
}

// renewer returns a started Trigger that renews the lease of rec every
// Lease()/3 (every Lease()/6 after a failure). It cancels ctx with
// ErrLeaseLost if the store says the lease is lost, and with
// ErrLeaseNotRenewed once a full Lease() has passed since the last
// successful renewal, or since the claim (since) if none: the lease may
// have expired by then, and the slot been taken over. No Renew outlives
// that moment.
func (j *Job) renewer(ls LeaseStore, rec Record, since time.Time, cancel context.CancelCauseFunc) *circulation.Trigger {
	l := ls.Lease()
	deadline := since.Add(l)
	var last error // of the latest failed renewal
	t := circulation.Bind(j.cfg.sched, func(rctx context.Context) (time.Duration, bool) {
		if sent := time.Now(); sent.Before(deadline) {
			ctx, stop := context.WithDeadline(rctx, deadline)
			err := ls.Renew(ctx, rec)
			stop()
			switch {
			case rctx.Err() != nil:
				return 0, false // the run has ended
			case err == nil:
				deadline = sent.Add(l)
				return l / 3, true
			case errors.Is(err, ErrLeaseLost):
				cancel(ErrLeaseLost)
				return 0, false
			}
			last = err
			if left := time.Until(deadline); left > 0 {
				return min(l/6, left), true
			}
		}
		cause := fmt.Errorf("%w for %v", ErrLeaseNotRenewed, l)
		if last != nil {
			cause = fmt.Errorf("%w: %w", cause, last)
		}
		cancel(cause)
		return 0, false
	})
	// A claim that took long left less than a lease: renew half-way to its
	// end. A Scheduler that refuses the timer (a stopped wheel.Wheel)
	// leaves the lease unrenewed: the run gives it up at once.
	defer func() {
		if r := recover(); r != nil {
			cancel(fmt.Errorf("%w: %v", ErrLeaseNotRenewed, r))
		}
	}()
	t.FireAfter(min(l/3, time.Until(deadline)/2))
	return t
}

// reclaimTick is the Func of a LeaseStore job's reclaim Trigger: it takes
// over the expired claims of the job's name, each a run with Reason
// Recovered, and looks again after Lease(). It calls Reclaim only while
// the overlap policy would start a run at once, so that no claim it takes
// over waits, is skipped or is replaced; if the job is busy, it looks
// again as soon as it is free (exitLocked). A claim that arrives when the
// job is no longer free (a slot started a run meanwhile, or the job was
// paused or stopped) is left as it is: its new lease expires, and a free
// replica, or this one later, takes it over.
func (j *Job) reclaimTick(ctx context.Context) (time.Duration, bool) {
	ls := j.cfg.lease
	node := j.cfg.nodeName()
	for range 1000 {
		j.mu.Lock()
		x := j.x // set before the reclaim Trigger was bound
		if j.state == jobStopped {
			j.mu.Unlock()
			return 0, false
		}
		if j.paused() {
			j.mu.Unlock()
			break
		}
		if !j.freeLocked(x) {
			x.look = true
			j.mu.Unlock()
			break
		}
		x.look = false
		j.mu.Unlock()
		since := time.Now()
		rec, err := ls.Reclaim(ctx, j.name, node)
		if err != nil {
			break
		}
		rec.Reason = Recovered
		p := pending{run: Run{Job: rec.Job, Due: rec.Due, Reason: Recovered}, rec: rec, claimed: true, since: since}
		j.mu.Lock()
		started := j.state == jobStarted && !j.paused()
		if started && j.freeLocked(x) {
			x.runners++
			go j.runner([]pending{p})
		} else if started {
			x.look = true
		}
		j.mu.Unlock()
	}
	return ls.Lease(), true
}

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
// guarded by Job.mu, except store, which is set once when it is made.
type active struct {
	store Store    // the job's store: WithStore's, or nil
	own   *ownDues // without a store, the slots the job ran

	runs    []flight      // runs in flight, to cancel on Stop and OverlapReplace
	flights uint64        // the id of the latest flight
	queue   []pending     // runs waiting for the runner (all policies but OverlapAllow)
	runners int           // goroutines running the job's Func or about to
	reports int           // runners passing the outcome of their last run to the Observer, no longer counted in runners
	report  chan struct{} // holds a token while a run's outcome reaches the Observer, but under OverlapAllow: one at a time, in order
	idle    chan struct{} // closed once no runner is left and no callback of the job's timer runs
	handed  time.Time     // the latest Due handed to a runner: a Manual run's Due is after it

	floor      time.Time // slots at or before it are never caught up: the job started, resumed or changed schedule then
	missed     time.Time // the earliest Due owed since the last catch-up (its claim failed), or zero: the catch-up starts there
	look       bool      // LeaseStore: a look for expired claims found the job busy; look again once it is free
	reclaiming bool      // LeaseStore: takeOver runs
	r          *rare     // made when first needed
}

// rare is the part of a job's active state that few jobs need, made by
// rareLocked when first needed: a Start's store outage, Renews that hung,
// runners waiting in a RunLimit, catch-ups under way, retries waiting for
// their pause, a look for expired claims of its own.
type rare struct {
	gap       time.Time              // Last failed when the job started, then: the slots before it, after the store's last record, are owed
	gapSched  Schedule               // the schedule at gap
	gapPause  time.Duration          // the latest pause of recover
	recover   *circulation.Trigger   // reads the store again after a Start whose Last failed (recoverStart)
	reclaimer *reclaimer             // a LeaseStore that cannot be a map key: the job's own look for expired claims, while started
	hung      []*circulation.Trigger // renewals of leases given up while their Renew hung: Stop waits for them
	waiting   []*waiting             // runners waiting for their turn in the job's RunLimit
	catchUps  []time.Time            // the owed slots being caught up now
	retries   []*retryWait           // retries waiting for their pause (WithRetry): Pause ends them
}

// rareLocked returns x.r, making it if need be. The caller holds the job's
// lock.
func (x *active) rareLocked() *rare {
	if x.r == nil {
		x.r = new(rare)
	}
	return x.r
}

// A flight is a run in flight.
type flight struct {
	id        uint64
	due       time.Time // its run's slot; its catch-up runs come first
	cancel    context.CancelCauseFunc
	recovered bool // a claim taken over from another node: OverlapReplace does not cancel it
}

// A pending run is one a runner will start: a slot, or a claim a LeaseStore
// handed over. It is small, and held by pointer past the runner's frame,
// so that a run seldom grows its goroutine's stack before the Func does.
type pending struct {
	run      Run
	claim    *handover // a claim a LeaseStore handed over, or nil: the runner claims the slot
	start    time.Time // once claimed: when the run started (Record.Start)
	buffered bool      // OverlapBufferOne: the one run that follows the run in flight
	inline   bool      // a catch-up run inside another run's: its outcome reaches the Observer at once
	ended    *ended    // the outcome of the run, for the Observer, once it has ended; nil without an Observer
}

// An ended run's outcome, which the runner passes to the Observer once the
// run no longer counts as in flight. It is made only for a job with an
// Observer, so that a pending run stays small: the runner's frame holds
// one, under the Func.
type ended struct {
	status Status
	end    time.Time
	msg    string
}

// A handover is an expired claim a LeaseStore handed over to the job.
type handover struct {
	rec   Record    // as Reclaim returned it
	since time.Time // when Reclaim was called, the latest the store can have started its lease
}

// active returns j.x, making it if need be. The caller holds j.mu.
func (j *Job) active(now time.Time) *active {
	if j.x != nil {
		return j.x
	}
	x := &active{store: j.cfg.store, floor: now}
	if j.cfg.observer != nil && j.cfg.overlap != OverlapAllow {
		x.report = make(chan struct{}, 1)
	}
	if x.store == nil {
		x.own = new(ownDues)
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
func (j *Job) dueLocked(sched Schedule, first, now time.Time) []Record {
	c := j.cfg
	head, latest := dueSlots(sched, first, now, c.scanLimit())
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
	c := j.cfg
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
		x.rareLocked().waiting = append(x.rareLocked().waiting, w)
	}
}

// started notes that the RunLimit started the runner w of j's.
func (j *Job) started(w *waiting) {
	j.mu.Lock()
	if x := j.x; x != nil {
		if r := x.r; r != nil {
			if i := slices.Index(r.waiting, w); i >= 0 {
				r.waiting = slices.Delete(r.waiting, i, i+1)
			}
		}
	}
	j.mu.Unlock()
}

// dropWaitingLocked takes the job's runners that wait for their turn in
// its RunLimit out of it, and returns the records of their runs, which
// will not run. The caller holds j.mu.
func (j *Job) dropWaitingLocked(why error) []Record {
	x := j.x
	if x == nil || x.r == nil || len(x.r.waiting) == 0 {
		return nil
	}
	var obs []Record
	for _, w := range x.r.waiting {
		if !j.cfg.limit.drop(w) {
			continue // started meanwhile: it finds the job stopped
		}
		x.runners--
		if !w.p.run.Due.IsZero() {
			obs = append(obs, j.drop(w.p, why))
		}
		for _, p := range w.batch {
			obs = append(obs, j.drop(p, why))
		}
	}
	x.r.waiting = x.r.waiting[:0]
	j.quietLocked()
	return obs
}

// refusal is why the job does not start a run: it is paused, or else
// stopped. The caller holds j.mu.
func (j *Job) refusal() error {
	if j.paused() {
		return errPaused
	}
	return errStopped
}

// drop returns the record of a pending run that will not run. It is
// never a claimed run: takeOver hands those only to a runner of their
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

// runner runs the pending runs of w (its first, then its batch), then
// those of the queue, one after another, and exits when there are none
// left.
func (j *Job) runner(w *work) {
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
	p := &w.p
	for {
		ctx, cancel, id := j.take(x, w)
		if id == 0 {
			normal = true
			return
		}
		cur = id
		if claimed, _ := j.begin(ctx, x, p, false); claimed {
			renew, runErr, err := j.run(ctx, cancel, x, p, nil)
			for {
				var again bool // WithRetry: the next attempt is claimed
				if renew, again = j.finish(ctx, x, p, renew, runErr, err); !again {
					break
				}
				renew, runErr, err = j.run(ctx, cancel, x, p, renew)
			}
		}
		cancel(nil)
		j.mu.Lock()
		x.land(cur)
		cur = 0
		if p.ended == nil {
			j.mu.Unlock()
			continue
		}
		// The run no longer counts as in flight when the Observer learns
		// of it, so that a RunNow from the Observer (a retry of a failed
		// run) finds the job free. A runner with nothing left to run
		// leaves first; one with more runs queued keeps the job busy.
		leaving := len(w.batch) == 0 && len(x.queue) == 0
		x.reports++
		if leaving {
			normal = true
			j.exitLocked(x)
		}
		j.mu.Unlock()
		j.reportEnded(x, p)
		if leaving {
			return
		}
	}
}

// reportEnded passes the outcome of the run of p to the Observer, and
// then accounts for the report's end, even if the Observer panics or
// calls runtime.Goexit. Under every policy but OverlapAllow, where runs
// follow one another, their outcomes reach the Observer one at a time and
// in order: a run that a RunNow from the Observer started, or the next
// slot's, runs at once, but its outcome waits for the Observer's call
// before it to return.
func (j *Job) reportEnded(x *active, p *pending) {
	if j.cfg.overlap != OverlapAllow {
		// A channel, not a mutex: in a testing/synctest bubble, a wait
		// on a mutex would stop the bubble's clock.
		x.report <- struct{}{}
		defer func() { <-x.report }()
	}
	defer func() {
		j.mu.Lock()
		x.reports--
		j.quietLocked()
		j.mu.Unlock()
	}()
	j.report(j.cfg.observer, p, p.ended.end, p.ended.status, p.ended.msg)
}

// take moves the next pending run to start, from w or else the queue,
// into w.p, and returns its context and flight id. Runs the job may
// not start (it is stopped or paused) it drops, reporting them. With none
// left it accounts for the runner's exit and returns id 0.
func (j *Job) take(x *active, w *work) (context.Context, context.CancelCauseFunc, uint64) {
	p := &w.p
	for {
		j.mu.Lock()
		switch {
		case !w.taken && !p.run.Due.IsZero():
		case len(w.batch) > 0:
			*p = w.batch[0]
			w.batch = w.batch[1:]
		case len(x.queue) == 1:
			*p = x.queue[0]
			x.queue[0] = pending{}
			x.queue = x.queue[:0] // keeps the array for the next run
		case len(x.queue) > 1:
			*p = x.queue[0]
			x.queue[0] = pending{}
			x.queue = x.queue[1:]
		default:
			j.exitLocked(x)
			j.mu.Unlock()
			return nil, nil, 0
		}
		w.taken = true
		if j.state != jobStarted || j.paused() {
			if p.claim != nil {
				// Not finished: its lease expires, and a replica takes
				// it over again.
				j.mu.Unlock()
				continue
			}
			j.dropTakenLocked(p)
			continue
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		x.flights++
		id := x.flights
		x.runs = append(x.runs, flight{id: id, due: p.run.Due, cancel: cancel, recovered: p.claim != nil})
		j.mu.Unlock()
		return ctx, cancel, id
	}
}

// dropTakenLocked reports p Skipped, as a run of a job stopped or paused.
// The caller holds j.mu, which it unlocks.
//
//go:noinline
func (j *Job) dropTakenLocked(p *pending) {
	r := j.drop(*p, j.refusal())
	j.mu.Unlock()
	j.observe([]Record{r})
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
	if x.look && !x.reclaiming && j.freeLocked(x) && j.state == jobStarted && !j.paused() {
		j.takeOverLocked(x)
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
	return j.flags&jobBusy == 0 && (j.x == nil || j.x.runners == 0 && j.x.reports == 0 && !j.x.reclaiming)
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

// begin claims the slot of p, unless a LeaseStore handed it over claimed,
// and reports whether the caller is to run it (claimed). It reports ok false
// if the claim failed (not ErrClaimed): the slot is owed, and was
// reported Skipped unless retry says that it was before, when its claim
// first failed.
//
// A claim that fails is tried again, after a growing pause, while the slot
// is worth running (worthRetrying): a store that is slow or busy for a
// moment delays the run, and only one that fails for longer makes an
// outage. Each try first catches up what an outage left owed, so that the
// owed slots still run before this one.
//
// begin returns before the Func runs, so that the Func runs on a stack
// that holds none of its frames: most Funcs then run without growing
// their goroutine's first stack.
func (j *Job) begin(ctx context.Context, x *active, p *pending, retry bool) (claimed, ok bool) {
	if h := p.claim; h != nil {
		p.start = time.Now().Round(0)
		p.run.Reason, p.run.Attempt = Recovered, h.rec.Attempt
		return true, true
	}
	for pause := time.Duration(0); ; {
		// A job on a Store of its own never owes a slot: its Last never
		// fails, and its claims fail only under MisfireRunAll's limit.
		if p.run.Reason == Scheduled && j.cfg.store != nil && !j.catchUp(ctx, x, &p.run) {
			return false, true
		}
		switch err := j.claim(ctx, x, p); {
		case err == nil:
			return true, true
		case errors.Is(err, ErrClaimed) && p.run.Reason != Manual:
			return false, true // the slot is another replica's, which records it
		case !errors.Is(err, ErrClaimed) && ctx.Err() == nil:
			if pause = retryPause(pause); j.worthRetrying(&p.run, pause) && sleep(ctx, pause) {
				continue
			}
			// A claim that works again does not end the outage: the
			// slots whose claims failed are still owed (recoverOutage).
			x.owe(j, &p.run)
			fallthrough
		default:
			if !retry {
				// A Manual run's Due is its own: another one's claim is
				// not its run.
				j.claimSkipped(ctx, &p.run, err)
			}
			return false, false
		}
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
		why = errPaused
	}
	j.observe([]Record{j.record(*r, Skipped, why)})
	return false
}

// claim claims the slot of p in the job's store, setting p.start, and
// returns the store's error.
//
//go:noinline
func (j *Job) claim(ctx context.Context, x *active, p *pending) error {
	p.start = time.Now().Round(0)
	var err error
	if o := x.own; o != nil {
		err = o.claim(p.run.Due)
	} else if m, ok := x.store.(*MemoryStore); ok {
		err = m.claimRun(&p.run, p.start, j.cfg.nodeName())
	} else {
		err = j.claimIn(ctx, x.store, p)
	}
	if err == nil {
		p.run.Attempt = 1
	}
	return err
}

// owe records that the slot of r is owed: its claim failed, or the
// catch-up that was to run it ended first. The next Scheduled run then
// catches up first (MisfireRunAll). A Manual run is not owed.
func (x *active) owe(j *Job, r *Run) {
	if r.Reason == Manual {
		return
	}
	j.mu.Lock()
	if x.missed.IsZero() || r.Due.Before(x.missed) {
		x.missed = r.Due
	}
	j.mu.Unlock()
}

// claimIn claims the slot of p, a claim that started at p.start, in s.
// On a QueuedStore, p.start becomes the time the claim left the store's
// queue: its lease began then.
//
//go:noinline
func (j *Job) claimIn(ctx context.Context, s Store, p *pending) error {
	r := &p.run
	rec := Record{Job: r.Job, Due: r.Due, Reason: r.Reason, Status: Running,
		Start: p.start, Node: j.cfg.nodeName(), Attempt: 1}
	if q, ok := s.(QueuedStore); ok {
		sent, err := q.ClaimQueued(ctx, rec)
		if err == nil && sent.After(p.start) {
			p.start = sent.Round(0)
		}
		return err
	}
	return s.Claim(ctx, rec)
}

// Claims that fail are tried again after a pause that starts at
// firstRetry and doubles up to maxRetry.
const (
	firstRetry = 50 * time.Millisecond
	maxRetry   = 5 * time.Second
)

// retryPause returns the pause after pause.
func retryPause(pause time.Duration) time.Duration {
	return min(max(2*pause, firstRetry), maxRetry)
}

// worthRetrying reports whether the slot of r is still worth claiming
// after a further pause (see WithClaimRetry): by default, a failed claim
// is tried again while its slot has the first three quarters of its
// period, up to the next slot, to go, so that the next slot finds the job
// free; under MisfireSkip, only within the grace period, after which the
// slot is missed. A Manual run is tried within the grace period; a
// catch-up of an outage's owed slots stops at its first failure
// (recoverOutage).
func (j *Job) worthRetrying(r *Run, pause time.Duration) bool {
	at := time.Now().Add(pause)
	if r.Reason == CatchUp {
		return false
	}
	if d := j.cfg.retry; d >= 0 {
		return at.Before(r.Due.Add(d))
	}
	limit := r.Due.Add(j.cfg.grace)
	if r.Reason == Scheduled && j.cfg.misfire != MisfireSkip {
		j.mu.Lock()
		n := next(j.sched, r.Due)
		j.mu.Unlock()
		if !n.IsZero() {
			limit = r.Due.Add(n.Sub(r.Due) / 4 * 3)
		}
	}
	return at.Before(limit)
}

// sleep waits for d, and reports false if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// claimSkipped reports the slot of r Skipped, its claim having failed with
// err.
//
//go:noinline
func (j *Job) claimSkipped(ctx context.Context, r *Run, err error) {
	s := j.record(*r, Skipped, nil)
	if cause := context.Cause(ctx); cause != nil {
		s.Err = cause.Error()
	} else {
		s.Err = "schedule: claim: " + err.Error()
	}
	j.observe([]Record{s})
}

// run runs the Func for the claimed slot of p, under the job's timeout if
// it has one, renewing its lease if the store has leases: with kept, the
// renewal of the attempt before, if it is a retry, or else a new one. ctx
// is the run's context, and cancel cancels it. It returns what the caller
// passes to finish: the run's renewal, if any, the error of the Func's
// context when it returned, and the Func's error, or its panic. A Func
// that calls runtime.Goexit leaves no outcome: its lease is left to
// expire, so that the slot is taken over.
//
// The Func runs right under run and the runner, whose frames are small:
// the steps before and after it are calls of their own, made from the
// runner, so that most Funcs run, and their runs are recorded, without
// growing their goroutine's first stack.
func (j *Job) run(ctx context.Context, cancel context.CancelCauseFunc, x *active, p *pending, kept *renewal) (renew *renewal, runErr, err error) {
	c := call{ctx: ctx, renew: kept}
	if ls := j.cfg.lease; kept == nil && ls != nil && ls.Lease() > 0 {
		c.renew = j.renew(ls, p, cancel)
	}
	if t := j.cfg.timeout; t > 0 {
		c.ctx, c.cancel = context.WithTimeout(ctx, t)
	}
	defer j.end(x, &c, &renew, &runErr, &err)
	if ctx.Err() == nil { // not stopped or replaced since the claim
		c.err = j.f(c.ctx, p.run)
	}
	c.returned = true
	return
}

// A call is a call of the Func, in run.
type call struct {
	ctx      context.Context    // the Func's: the run's, or under it with the job's timeout
	cancel   context.CancelFunc // ctx's, if not the run's
	renew    *renewal           // renews the run's lease, if the store has leases
	err      error              // the Func's
	returned bool               // the Func returned, or was not called
}

// end, deferred by run, sets run's results: it turns a panic of the Func
// into its error. If the Func called runtime.Goexit, it gives the lease
// up instead.
func (j *Job) end(x *active, c *call, renew **renewal, runErr, err *error) {
	v := recover()
	if !c.returned && v == nil { // runtime.Goexit
		if c.renew != nil {
			j.stopRenewal(x, c.renew)
		}
		if c.cancel != nil {
			c.cancel()
		}
		return
	}
	if v != nil {
		c.err = fmt.Errorf("schedule: panic: %v", v)
	}
	*renew, *runErr, *err = c.renew, c.ctx.Err(), c.err
	if c.cancel != nil {
		c.cancel()
	}
}

// claimed returns the Record of the claim of p's slot, at its current
// attempt.
func (j *Job) claimed(p *pending) Record {
	if h := p.claim; h != nil {
		rec := h.rec
		rec.Reason, rec.Start, rec.Attempt = Recovered, p.start, p.run.Attempt
		return rec
	}
	r := &p.run
	return Record{Job: r.Job, Due: r.Due, Reason: r.Reason, Status: Running,
		Start: p.start, Node: j.cfg.nodeName(), Attempt: r.Attempt}
}

// finish records the outcome of the run of p, whose Func has returned,
// and passes it to the Observer. The outcome is what ctx said when the
// Func returned, and runErr, the error of the Func's own context then: a
// Stop or a replacement after that does not make a finished run Canceled.
// Only a lease given up since decides otherwise. renew, if not nil, renews
// the run's lease.
//
// An attempt that failed, of a run with attempts left (WithRetry), is
// retried instead: finish reports again once the next attempt is claimed,
// for the caller to run it, and returns renew, which renews its lease.
// (Returned, not kept by the caller across the call: the runner's frame
// stays as small as without retries.)
//
//go:noinline
func (j *Job) finish(ctx context.Context, x *active, p *pending, renew *renewal, runErr, err error) (next *renewal, again bool) {
	var cause error
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	if testHookReturned != nil {
		testHookReturned()
	}
	// A lease given up since, even after the Func returned, decides: the
	// slot is taken over and run again, so this run is not its outcome.
	if lost := context.Cause(ctx); errors.Is(lost, ErrLeaseNotRenewed) {
		cause = lost
	}
	end := time.Now().Round(0)
	status, msg := outcome(cause, runErr, j.cfg.timeout, err)
	// A run that gave up its lease leaves the claim to expire, so that the
	// slot is taken over and run again; any other outcome is recorded,
	// while the lease is still renewed: a Renew that hangs does not make
	// a run that ended in time lose its outcome, nor a Finish that waits
	// let the lease expire. A renewal that comes after the Finish is
	// refused by the store (the claim is no longer running), and changes
	// nothing.
	write, report := !errors.Is(cause, ErrLeaseNotRenewed), true
	if status == Failed && p.run.Attempt < j.cfg.attempts && ctx.Err() == nil {
		var again bool
		if again, write, msg = j.retry(ctx, x, p, renew, end, msg); again {
			return renew, true
		}
		report = false // the Observer has this attempt's outcome
	}
	if write {
		var ferr error
		switch m, ok := x.store.(*MemoryStore); {
		case x.own != nil:
			// A job without a Store keeps no outcome: its Observer has it.
		case ok && p.claim == nil:
			ferr = m.finishRun(&p.run, end, status, msg)
		default:
			ferr = j.finishIn(x.store, p, end, status, msg)
		}
		if ferr != nil {
			msg = joinErr(msg, "schedule: finish: "+ferr.Error())
		}
	}
	if renew != nil {
		j.stopRenewal(x, renew)
	}
	if f := j.cfg.observer; f != nil && report {
		if p.inline {
			j.report(f, p, end, status, msg)
		} else {
			p.ended = &ended{status: status, end: end, msg: msg}
		}
	}
	return nil, false
}

// finishIn records in s the outcome of the run of p, which ended at end.
//
//go:noinline
func (j *Job) finishIn(s Store, p *pending, end time.Time, status Status, msg string) error {
	rec := j.claimed(p)
	rec.End, rec.Status, rec.Err = end, status, msg
	// The runner made the run's context from context.Background: it has
	// no values for Finish to keep.
	return s.Finish(context.Background(), rec)
}

// report passes the Record of the run of p, which ended at end, to the
// Observer f.
//
//go:noinline
func (j *Job) report(f func(Record), p *pending, end time.Time, status Status, msg string) {
	rec := j.claimed(p)
	rec.End, rec.Status, rec.Err = end, status, msg
	f(rec)
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
	missed, floor, sched := x.missed, x.floor, j.sched
	if missed.IsZero() || !missed.Before(due) {
		// Nothing owed, or only slots after this one: a slot a Start
		// whose Last failed handed late.
		j.mu.Unlock()
		return
	}
	x.missed = time.Time{}
	j.mu.Unlock()
	if missed.Before(floor) {
		return // owed from before a pause or a new schedule: not caught up
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
	claimed, ok := j.begin(rctx, x, p, true)
	if claimed {
		renew, runErr, err := j.run(rctx, rcancel, x, p, nil)
		for {
			var again bool
			if renew, again = j.finish(rctx, x, p, renew, runErr, err); !again {
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
// no record before the start owes nothing.
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
	last, err := j.lastBefore(ctx, x.store, sched, gap, time.Now())
	if err != nil {
		if ctx.Err() != nil {
			return 0, false
		}
		pause = min(max(2*pause, firstStartRetry), maxStartRetry)
		j.mu.Lock()
		r.gapPause = pause
		j.mu.Unlock()
		return pause, true
	}
	var obs []Record
	j.mu.Lock()
	if r.gap.Equal(gap) && j.state == jobStarted {
		r.gap, r.gapSched = time.Time{}, nil
		if first := next(sched, last); !last.IsZero() && !first.IsZero() && !first.After(gap) {
			obs = j.dueLocked(sched, first, gap)
		}
	}
	j.mu.Unlock()
	j.observe(obs)
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

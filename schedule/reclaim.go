package schedule

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/circulation-go/circulation"
)

// expiredLimit bounds the names Expired returns at each look.
const expiredLimit = 1000

// A reclaimer looks for the claims to take over of the jobs of one
// SharedStore in this process, and offers each name the store lists to a
// job of that name, which takes the claims over if it is free
// (Job.offer). It looks when its first job starts, soon after another
// does, every quarter lease while it has jobs (lookEvery), and at once when
// a job of the process releases a claim: one Trigger per store, on the
// runtime's timers, not a timer per job. A store without a lease
// (MemoryStore) is looked at only at starts and releases: its claims never
// expire.
type reclaimer struct {
	ls    SharedStore
	every time.Duration
	t     *circulation.Trigger

	mu   sync.Mutex
	jobs map[string][]*Job // the started jobs on ls, by name
}

// reclaimers holds the reclaimer of each SharedStore that has jobs started.
var reclaimers struct {
	mu sync.Mutex
	m  map[any]*reclaimer
}

// unwrapped is a Store that wraps another, such as a Table's view of its
// own, and is the same store for the jobs on it.
type unwrapped interface {
	Unwrap() Store
}

// inner returns the store ls wraps, if any, or ls: the jobs on wrappers of
// one store share one look for claims to take over, on the inner store if
// it is a SharedStore.
func inner(ls SharedStore) SharedStore {
	var s Store = ls
	for {
		u, ok := s.(unwrapped)
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	if l, ok := s.(SharedStore); ok {
		return l
	}
	return ls
}

// storeKey returns the key of the reclaimer of ls, its inner store. A
// store that cannot be a map key gets none: its job looks for itself.
func storeKey(ls SharedStore) (any, bool) {
	s := inner(ls)
	if !isKey(s) {
		return nil, false
	}
	return s, true
}

// enlist adds j, a started job on a SharedStore, to the reclaimer of its
// store, making it if need be, and has it look for expired claims soon. A
// job whose store cannot be a map key has a reclaimer of its own, which it
// keeps in its active state; the others find theirs in reclaimers, so that
// an idle job holds nothing for it.
func (j *Job) enlist() {
	ls := j.cfg.shared
	key, shared := storeKey(ls)
	reclaimers.mu.Lock()
	var r *reclaimer
	if shared {
		r = reclaimers.m[key]
	}
	if r == nil {
		r = newReclaimer(ls)
		if shared {
			if reclaimers.m == nil {
				reclaimers.m = map[any]*reclaimer{}
			}
			reclaimers.m[key] = r
		}
	}
	r.mu.Lock()
	first := len(r.jobs) == 0
	r.jobs[j.name] = append(r.jobs[j.name], j)
	r.mu.Unlock()
	reclaimers.mu.Unlock()
	if !shared {
		j.mu.Lock()
		j.active(time.Now().Round(0)).rareLocked().reclaimer = r
		j.mu.Unlock()
	}
	if first {
		r.t.Fire()
	} else {
		r.t.FireWithin(time.Second) // the starts of many jobs make one look
	}
}

// enlistLate enlists j, a job on a SharedStore without a lease, at its
// first claim: such a store's claims never expire, and only a Job of the
// process that released one hands it over, so a job that never claimed
// needs no place in the reclaimer (a Table's million idle tasks on its
// MemoryStore). Stop delists it again once its runs have ended.
func (j *Job) enlistLate(x *active) {
	j.mu.Lock()
	first := !x.enlisted && j.state == jobStarted
	x.enlisted = true
	j.mu.Unlock()
	if first {
		j.enlist()
	}
}

// delist removes j from its reclaimer, and the reclaimer from reclaimers
// once it has no job. It returns the reclaimer's Trigger if it stopped,
// for Stop to wait for.
func (j *Job) delist() *circulation.Trigger {
	ls := j.cfg.shared
	if ls == nil {
		return nil
	}
	key, shared := storeKey(ls)
	reclaimers.mu.Lock()
	defer reclaimers.mu.Unlock()
	var r *reclaimer
	if shared {
		r = reclaimers.m[key]
	} else {
		j.mu.Lock()
		if j.x != nil {
			if xr := j.x.r; xr != nil {
				r, xr.reclaimer = xr.reclaimer, nil
			}
		}
		j.mu.Unlock()
	}
	if r == nil {
		return nil
	}
	r.mu.Lock()
	js := r.jobs[j.name]
	i := slices.Index(js, j)
	if i < 0 {
		r.mu.Unlock()
		return nil // never enlisted, or delisted before
	}
	js = slices.Delete(js, i, i+1)
	if len(js) == 0 {
		delete(r.jobs, j.name)
	} else {
		r.jobs[j.name] = js
	}
	empty := len(r.jobs) == 0
	r.mu.Unlock()
	if !empty {
		return nil
	}
	if shared {
		delete(reclaimers.m, key)
	}
	r.t.Suspend()
	return r.t
}

func newReclaimer(ls SharedStore) *reclaimer {
	ls = inner(ls)
	r := &reclaimer{ls: ls, every: lookEvery(ls.Lease()), jobs: map[string][]*Job{}}
	r.t = circulation.Bind(nil, r.look)
	return r
}

// look is the reclaimer's Func: it offers the name of each job with a
// claim to take over to a job of that name.
func (r *reclaimer) look(ctx context.Context) (time.Duration, bool) {
	r.mu.Lock()
	if len(r.jobs) == 0 {
		r.mu.Unlock()
		return 0, false
	}
	r.mu.Unlock()
	names, err := r.ls.Expired(ctx, expiredLimit)
	if err != nil {
		names = nil // the store fails: look again later
	}
	for _, name := range names {
		r.mu.Lock()
		js := slices.Clone(r.jobs[name])
		r.mu.Unlock()
		for _, j := range js {
			if j.offer() {
				break
			}
		}
	}
	return r.every, r.every > 0
}

// lookEvery returns how often the jobs of a process on a store with a
// lease look for claims to take over: every quarter of a lease, so that an
// expired claim, or one a stopping node released, waits a quarter lease at
// most. A store without a lease is looked at only when its jobs start and
// release: its claims never expire.
func lookEvery(lease time.Duration) time.Duration {
	return max(lease/4, 0)
}

// kick makes the reclaimer of ls in this process, if it has one, look at
// once: a job released a claim that a job of the process may take over.
func kick(ls SharedStore) {
	key, shared := storeKey(ls)
	if !shared {
		return
	}
	reclaimers.mu.Lock()
	r := reclaimers.m[key]
	reclaimers.mu.Unlock()
	if r != nil {
		r.t.Fire()
	}
}

// offer asks j to take over the expired claims of its name. It reports
// whether j took them, or is taking claims over already; if j is busy,
// it looks for itself as soon as it is free (exitLocked).
func (j *Job) offer() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != jobStarted {
		return false
	}
	if j.paused() {
		x := j.active(time.Now().Round(0))
		x.look = true // Resume looks: a store without a lease is not looked at again
		return false
	}
	x := j.active(time.Now().Round(0)) // a job that never ran makes it now

	if x.reclaiming {
		return true
	}
	if !j.freeLocked(x) {
		x.look = true
		return false
	}
	j.takeOverLocked(x)
	return true
}

// takeOverLocked starts a goroutine that takes over the expired claims of
// the job's name. The caller holds j.mu.
func (j *Job) takeOverLocked(x *active) {
	x.look = false
	x.reclaiming = true
	go j.takeOver(x)
}

// takeOver takes over the expired claims of the job's name, each a run
// with Reason Recovered, while the overlap policy would start a run at
// once, so that no claim it takes over waits, is skipped or is replaced;
// if the job is busy, it looks again as soon as it is free (exitLocked).
//
// The job stays as free as it was while each Reclaim is on its way back:
// the runs submitted meanwhile (its slots, RunNow) are held (claiming), and
// submitted once the answer is in, after the run of the claim taken over
// if there is one, each call's runs in turn, as they would have been. So a
// claim taken over runs at once, and is not taken over again for want of
// a free job, which would spend one of its slot's attempts. The held runs
// wait for the answer at most one lease, which is also the Reclaim's
// deadline: a claim that arrives later has expired already, and one that
// arrives when the job is no longer free (after the lease, or once paused
// or stopped) is left as it is: its new lease expires, and a replica takes
// it over. A Reclaim that finds nothing costs the held runs its wait.
func (j *Job) takeOver(x *active) {
	defer func() {
		j.mu.Lock()
		x.reclaiming = false
		j.quietLocked()
		j.mu.Unlock()
	}()
	ls := j.cfg.shared
	node := j.cfg.nodeName()
	// The runs held meanwhile wait one lease at most, even for a Reclaim
	// deaf to its context; a second on a store without a lease, whose
	// Reclaim answers in process.
	lease := ls.Lease()
	if lease <= 0 {
		lease = time.Second
	}
	for range 1000 {
		j.mu.Lock()
		if j.state != jobStarted || j.paused() {
			j.mu.Unlock()
			return
		}
		if !j.freeLocked(x) {
			x.look = true
			j.mu.Unlock()
			return
		}
		x.claiming = true
		r := x.rareLocked()
		r.claims++
		claim := r.claims
		j.mu.Unlock()
		unhold := time.AfterFunc(lease, func() {
			j.mu.Lock()
			held, _ := x.unholdLocked(claim)
			obs := j.submitHeldLocked(held)
			j.tellLocked(obs)
			j.mu.Unlock()
			j.told(obs)
		})
		since := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), lease)
		rec, err := ls.Reclaim(ctx, j.name, node, j.cfg.concurrency())
		cancel()
		unhold.Stop()
		j.mu.Lock()
		held, holding := x.unholdLocked(claim) // holding: the job is as free as when it asked
		spawned := false
		if err == nil && j.state == jobStarted && !j.paused() {
			if holding || j.freeLocked(x) {
				rec.Reason = Recovered
				x.runners++
				j.spawnLocked(x, pending{run: Run{Job: rec.Job, Due: rec.Due, Reason: Recovered},
					claim: &handover{rec: rec, since: since}}, nil, true)
				spawned = true
			} else {
				x.look = true
			}
		}
		obs := j.submitHeldLocked(held)
		j.mu.Unlock()
		if spawned {
			j.cfg.logRun(slog.LevelWarn, msgTakenOver, rec, nil)
			if t := j.cfg.trace; t != nil && t.TakeOver != nil {
				t.TakeOver(rec)
			}
		}
		j.observe(obs)
		if err != nil {
			return
		}
		if !spawned {
			// The claim came back to a job that can no longer run it
			// (busy, paused or stopped meanwhile): it goes back.
			j.giveBack(ls, rec)
			return
		}
	}
}

// giveBack releases rec, a claim taken over that the job will not run, for
// another node, or this job later, to take over.
func (j *Job) giveBack(ls SharedStore, rec Record) {
	rec.Status, rec.End = Released, time.Now().Round(0)
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if ls.Release(ctx, rec) == nil {
		kick(ls)
	}
}

// unholdLocked ends the holding of runs for the Reclaim claim, if they are
// still held for it, and returns them, each call's as submitted, and
// whether they were; it wakes the job's Backfill, which waits for it. The
// caller holds the job's lock.
func (x *active) unholdLocked(claim uint64) (held [][]pending, holding bool) {
	if !x.claiming || x.r.claims != claim {
		return nil, false
	}
	x.claiming = false
	if f := x.r.fill; f != nil {
		f.poke() // it waits for the job to be free of the claim
	}
	return x.takeHeldLocked(), true
}

// submitHeldLocked submits held runs under the overlap policy, each call's
// runs in turn, and returns the records of those that will not run. The
// caller holds j.mu.
func (j *Job) submitHeldLocked(held [][]pending) []Record {
	var obs []Record
	for _, runs := range held {
		obs = j.submitLocked(runs, obs)
	}
	return obs
}

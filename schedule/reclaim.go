package schedule

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/circulation-go/circulation"
)

// An ExpiredLister is a LeaseStore that lists, in one call, the jobs that
// have expired claims. The jobs of a process on a LeaseStore share one
// look for expired claims: on an ExpiredLister it costs one call every
// quarter of a lease, whatever the number of jobs, where a LeaseStore
// without it is asked for the expired claims of each job every lease.
type ExpiredLister interface {
	LeaseStore
	// Expired returns the names of up to limit jobs that have a running
	// claim whose lease has expired, in no particular order.
	Expired(ctx context.Context, limit int) ([]string, error)
}

// expiredLimit bounds the names an ExpiredLister returns at each look.
const expiredLimit = 1000

// A reclaimer looks for the expired claims of the jobs of one LeaseStore
// in this process, and offers each name it finds to a job of that name,
// which takes the claims over if it is free (Job.offer). It looks when its
// first job starts, soon after another does, and then every Lease() (every
// Lease()/4 on an ExpiredLister) while it has jobs: one Trigger per Store,
// on the runtime's timers, not a timer per job.
type reclaimer struct {
	ls    LeaseStore
	list  ExpiredLister // ls, if it lists the jobs with expired claims
	every time.Duration
	t     *circulation.Trigger

	mu   sync.Mutex
	jobs map[string][]*Job // the started jobs on ls, by name
}

// reclaimers holds the reclaimer of each LeaseStore that has jobs started.
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
// one store share one look for expired claims, on the inner store if it
// is a LeaseStore.
func inner(ls LeaseStore) LeaseStore {
	var s Store = ls
	for {
		u, ok := s.(unwrapped)
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	if l, ok := s.(LeaseStore); ok && l.Lease() > 0 {
		return l
	}
	return ls
}

// storeKey returns the key of the reclaimer of ls, its inner store. A
// store that cannot be a map key gets none: its job looks for itself.
func storeKey(ls LeaseStore) (any, bool) {
	s := inner(ls)
	if !isKey(s) {
		return nil, false
	}
	return s, true
}

// enlist adds j, a started job on a LeaseStore, to the reclaimer of its
// store, making it if need be, and has it look for expired claims soon. A
// job whose store cannot be a map key has a reclaimer of its own, which it
// keeps in its active state; the others find theirs in reclaimers, so that
// an idle job holds nothing for it.
func (j *Job) enlist() {
	ls := j.cfg.lease
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

// delist removes j from its reclaimer, and the reclaimer from reclaimers
// once it has no job. It returns the reclaimer's Trigger if it stopped,
// for Stop to wait for.
func (j *Job) delist() *circulation.Trigger {
	ls := j.cfg.lease
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

func newReclaimer(ls LeaseStore) *reclaimer {
	ls = inner(ls)
	r := &reclaimer{ls: ls, every: ls.Lease(), jobs: map[string][]*Job{}}
	if l, ok := ls.(ExpiredLister); ok {
		r.list, r.every = l, ls.Lease()/4
	}
	r.t = circulation.Bind(nil, r.look)
	return r
}

// look is the reclaimer's Func: it offers the name of each job with an
// expired claim (each job's name, on a store that cannot list them) to a
// job of that name.
func (r *reclaimer) look(ctx context.Context) (time.Duration, bool) {
	r.mu.Lock()
	if len(r.jobs) == 0 {
		r.mu.Unlock()
		return 0, false
	}
	var names []string
	if r.list == nil {
		names = slices.Collect(maps.Keys(r.jobs))
	}
	r.mu.Unlock()
	if r.list != nil {
		var err error
		if names, err = r.list.Expired(ctx, expiredLimit); err != nil {
			names = nil // the store fails: look again later
		}
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

// offer asks j to take over the expired claims of its name. It reports
// whether j took them, or is taking claims over already; if j is busy,
// it looks for itself as soon as it is free (exitLocked).
func (j *Job) offer() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != jobStarted || j.paused() {
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
	ls := j.cfg.lease
	node := j.cfg.nodeName()
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
		lease := ls.Lease()
		// The runs held meanwhile wait one lease at most, even for a
		// Reclaim deaf to its context.
		unhold := time.AfterFunc(lease, func() {
			j.mu.Lock()
			held, _ := x.unholdLocked(claim)
			obs := j.submitHeldLocked(held)
			j.mu.Unlock()
			j.observe(obs)
		})
		since := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), lease)
		rec, err := ls.Reclaim(ctx, j.name, node)
		cancel()
		unhold.Stop()
		j.mu.Lock()
		held, holding := x.unholdLocked(claim) // holding: the job is as free as when it asked
		if err == nil && j.state == jobStarted && !j.paused() {
			if holding || j.freeLocked(x) {
				rec.Reason = Recovered
				x.runners++
				j.spawnLocked(x, pending{run: Run{Job: rec.Job, Due: rec.Due, Reason: Recovered},
					claim: &handover{rec: rec, since: since}}, nil, true)
			} else {
				x.look = true
			}
		}
		obs := j.submitHeldLocked(held)
		j.mu.Unlock()
		j.observe(obs)
		if err != nil {
			return
		}
	}
}

// unholdLocked ends the holding of runs for the Reclaim claim, if they are
// still held for it, and returns them, each call's as submitted, and
// whether they were. The caller holds the job's lock.
func (x *active) unholdLocked(claim uint64) (held [][]pending, holding bool) {
	if !x.claiming || x.r.claims != claim {
		return nil, false
	}
	x.claiming = false
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

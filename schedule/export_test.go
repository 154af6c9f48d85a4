package schedule

import "unsafe"

// SetReturnedHook makes f run after each run's Func has returned, before
// its outcome is recorded.
func SetReturnedHook(f func()) { testHookReturned = f }

// SetBeginHook makes f run as a renewal's first timer fires, before the
// renewal begins.
func SetBeginHook(f func()) { testHookBegin = f }

// Watches returns how many Schedulers have a shared watch.
func Watches() int {
	watches.mu.Lock()
	defer watches.mu.Unlock()
	return len(watches.m)
}

// Mutants are the mistakes the clock's explorer must catch, by name.
var Mutants = map[string]uint8{
	"wake ignores the generation":           mutantNoGeneration,
	"a timer whose Stop failed is replaced": mutantArmOverBusy,
	"a deferred wake arms no timer":         mutantDeferNoArm,
}

// ClusterMutants are the mistakes the tests of jobs across replicas must
// catch, by name.
var ClusterMutants = map[string]uint8{
	"the overlap policy per process":         mutantLocalOverlap,
	"a stopping job cancels, not hands over": mutantNoRelease,
}

// SetMutant breaks the clock with mutant m until restore is called.
func SetMutant(m uint8) (restore func()) {
	testMutant = m
	return func() { testMutant = mutantNone }
}

// Rare reports whether the job holds the part of its state few jobs need.
func (j *Job) Rare() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.x != nil && j.x.r != nil
}

// ActiveSize is the size of a started job's state.
const ActiveSize = unsafe.Sizeof(active{})

// Waits reports whether the job keeps a list of its runs waiting in its
// RunLimit, empty or not.
func (j *Job) Waits() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.x != nil && j.x.waiting != nil
}

// Kept counts the runs the RunLimit's queue still points to past its end.
func (l *RunLimit) Kept() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, w := range l.queue[len(l.queue):cap(l.queue)] {
		if w != nil {
			n++
		}
	}
	for _, w := range l.queue[:l.head] {
		if w != nil {
			n++
		}
	}
	return n
}

// SameConfig reports whether a and b hold one config.
func SameConfig(a, b *Job) bool { return a.cfg == b.cfg }

// Configs counts the settings whose config Jobs share.
func Configs() int {
	configs.mu.Lock()
	defer configs.mu.Unlock()
	return len(configs.m)
}

// Held counts the holds of slots the RunLimit keeps for their owners.
func (l *RunLimit) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}

// Active reports whether the job has made its state of a started job
// (active): it has handed a slot, or needed a store.
func (j *Job) Active() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.x != nil
}

package schedule

import "time"

// WithJitter spreads the job's Scheduled runs: each slot starts at its
// due time plus a delay in [0, d) that the job's name and the slot's due
// time decide (Jitter), so that every Job of the name with the same d and
// Schedule, on every replica, computes the same instant, and thousands of
// jobs due at 09:00 start through the minute after it with
// WithJitter(time.Minute). The slot is still its due time: its Run.Due,
// its claim, its record, and the job's Next. The delay stays within the
// first half of the time to the next slot: where that half is shorter
// than d, the delay is taken in [0, it). The grace period and the claim's
// retries count from the delayed start (Planned). A slot whose due time
// has passed when its start is not come yet starts at once if it is
// handed early: at a Start, a wake after the machine slept, a Pause (which
// records it Skipped), a SetSchedule or a RunNow (which run it first);
// catch-ups start at once too. The default, d <= 0, is no jitter.
// Temporal's jitter; Kubernetes has none.
func WithJitter(d time.Duration) Option {
	return optionFunc(func(c *config) { c.jitter = max(d, 0) })
}

// Jitter returns the delay in [0, d) of the slot due of the job named job:
// a hash of the two (the due time in Unix nanoseconds, exact in the years
// 1678 to 2262), the same on every machine and in every version of this
// package. It is 0 if d <= 0. A Job with WithJitter(d) delays a slot by
// Jitter(job, due, min(d, half the time to its next slot)).
func Jitter(job string, due time.Time, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	// FNV-1a of the name and the due time in Unix nanoseconds, through
	// SplitMix64's finalizer, as sqlstore's owners are chosen.
	h := uint64(14695981039346656037)
	for i := 0; i < len(job); i++ {
		h ^= uint64(job[i])
		h *= 1099511628211
	}
	n := uint64(due.UnixNano())
	for range 8 {
		h ^= n & 0xff
		h *= 1099511628211
		n >>= 8
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return time.Duration(h % uint64(d))
}

// Planned returns when the job starts its slot due, Scheduled: due plus
// its jitter (WithJitter), or due itself without one.
func (j *Job) Planned(due time.Time) time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.plannedLocked(j.sched, due)
}

// plannedOf returns the Record.Planned of r, a run about to be claimed:
// its slot's planned start, if later than its Due. The caller must not
// hold j.mu.
func (j *Job) plannedOf(r *Run) time.Time {
	if j.cfg.jitter <= 0 || (r.Reason != Scheduled && r.Reason != CatchUp) {
		return time.Time{}
	}
	j.mu.Lock()
	p := j.plannedLocked(j.sched, r.Due)
	j.mu.Unlock()
	if !p.After(r.Due) {
		return time.Time{}
	}
	return p
}

// plannedLocked is Planned, for the slot due of sched. The caller holds
// j.mu.
func (j *Job) plannedLocked(sched Schedule, due time.Time) time.Time {
	d := j.cfg.jitter
	if d <= 0 || due.IsZero() {
		return due
	}
	if n := next(sched, due); !n.IsZero() {
		d = min(d, n.Sub(due)/2)
	}
	return due.Add(Jitter(j.name, due, d))
}

package schedule

import (
	"slices"
	"sync"
	"time"
)

// ownKeep is how many of its latest slots a job without a Store of its
// own remembers.
const ownKeep = 16

// ownDues are the slots a job without a Store ran: the Due of its latest
// 16 claims, oldest first. Nothing reads its records but the job, which
// needs only to know that a slot ran: a wall clock set back, or a catch-up,
// must not run it twice. So it keeps 136 bytes of Dues, where a
// MemoryStore of the job's own kept up to 32 Records of 136 bytes each.
type ownDues struct {
	mu   sync.Mutex
	n    int
	dues [ownKeep]int64 // Unix ns; dues[:n], oldest first
}

// claim records the slot due, or returns ErrClaimed if it ran, or is older
// than every slot kept once ownKeep are: as a MemoryStore refuses such a
// claim, since its record may have been dropped.
func (o *ownDues) claim(due time.Time) error {
	d := due.UnixNano()
	o.mu.Lock()
	defer o.mu.Unlock()
	ds := o.dues[:o.n]
	i, found := slices.BinarySearch(ds, d)
	switch {
	case found, i == 0 && o.n == ownKeep:
		return ErrClaimed
	case o.n < ownKeep:
		o.n++
		ds = o.dues[:o.n]
		copy(ds[i+1:], ds[i:])
	default: // full: drop the oldest
		copy(ds[:i-1], ds[1:i])
		i--
	}
	ds[i] = d
	return nil
}

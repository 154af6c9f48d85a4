package wheel

// A slot holds the pending timers of one slot of one level of a shard, in
// the order they were placed: a deque, so that stopping the oldest timer,
// the usual case for timeouts, touches no other timer.
//
// Each timer knows its position as a virtual index, pos = base + i for
// items[i], counted modulo 2^32. Moving the live timers down the array
// adds to base instead of rewriting their pos, so no operation touches
// timers other than the one it is about, except that stopping a timer that
// is neither the oldest nor the newest moves the newest into its place.
//
// A slot belongs to its shard and is guarded by the shard's lock.
type slot struct {
	items []*timer // items[lo:] are the slot's timers, oldest first; items[:lo] are nil
	lo    int
	base  uint32
}

// len returns the number of timers in s.
func (s *slot) len() int { return len(s.items) - s.lo }

// push appends t and sets its pos.
func (s *slot) push(t *timer) {
	if len(s.items) == cap(s.items) && s.lo >= cap(s.items)/4 {
		s.compact() // reuse the space of stopped timers rather than grow
	}
	t.pos = s.base + uint32(len(s.items))
	s.items = append(s.items, t)
}

// remove takes t, which s holds, out of s.
func (s *slot) remove(t *timer) {
	i := int(t.pos - s.base)
	last := len(s.items) - 1
	switch i {
	case s.lo:
		s.items[i] = nil
		s.lo++
	case last:
		s.items[i] = nil
		s.items = s.items[:last]
	default:
		moved := s.items[last]
		s.items[i], moved.pos = moved, t.pos
		s.items[last] = nil
		s.items = s.items[:last]
	}
	if s.lo == len(s.items) {
		s.items, s.lo = s.items[:0], 0
	}
}

// compact moves the timers to the start of the array.
func (s *slot) compact() {
	n := copy(s.items, s.items[s.lo:])
	clear(s.items[n:])
	s.items = s.items[:n]
	s.base += uint32(s.lo)
	s.lo = 0
}

// keepSlot is the largest backing array a slot keeps for reuse once it is
// emptied by take; larger ones go back to the garbage collector, so that a
// burst of timers does not pin its memory.
const keepSlot = 1024

// take empties s and returns its timers, oldest first. The caller must
// clear the returned slice and hand it back with give before pushing to s
// again.
func (s *slot) take() []*timer {
	items := s.items[s.lo:]
	s.items, s.lo = nil, 0
	return items
}

// give lets s reuse the backing array of the slice take returned, unless
// it is large.
func (s *slot) give(items []*timer) {
	if cap(items) <= keepSlot {
		s.items = items[:0]
	}
}

package wheel

import (
	"iter"
	"unsafe"
)

// A slot holds the pending timers of one slot of one level of a shard, in
// the order they were placed: a deque, so that stopping the oldest timer,
// the usual case for timeouts, touches no other timer.
//
// The timers are kept in pages of pageSize. A slot grows a page at a time
// without copying its timers, and gives a page back as soon as its oldest
// timers have all gone. Each timer knows its position as a virtual index:
// the slot's timers are at positions lo to hi-1, counted modulo 2^32, and
// position p is entry (p-base)%pageSize of page (p-base)/pageSize. Every
// other entry of the pages is nil. No operation touches timers other than
// the one it is about, except that stopping a timer that is neither the
// oldest nor the newest moves the newest into its place.
//
// The slot keeps its first and last pages at hand, so that arming a timer
// and stopping the oldest touch the slot's own cache line and the entry,
// not the list of pages as well: with many slots in use, that list was as
// often out of the cache as the entry.
//
// A slot belongs to its shard and is guarded by the shard's lock.
type slot struct {
	head, tail   *page                                  // pages[0] and pages[len(pages)-1], nil if there are none
	pages        []*page                                // pages[i] holds the positions base+i*pageSize on, up to hi
	base, lo, hi uint32                                 // lo-base < pageSize, unless the slot is empty
	_            [52 - 5*unsafe.Sizeof(uintptr(0))]byte // one 64-byte cache line, with 8- or 4-byte pointers
}

// A page holds pageSize entries of a slot. Pages come from and go back to
// the shard's spares.
type page [pageSize]*timer

// pageSize is the number of timers a page holds.
const pageSize = 32

// len returns the number of timers in s.
func (s *slot) len() int { return int(s.hi - s.lo) }

// entry returns the address of the entry at position p.
func (s *slot) entry(p uint32) **timer {
	off := p - s.base
	return &s.pages[off/pageSize][off%pageSize]
}

// push appends t and sets its pos.
func (s *slot) push(t *timer, sp *spares) {
	off := s.hi - s.base
	if off%pageSize == 0 {
		// The last page is full, or there is none.
		s.tail = sp.get()
		s.pages = append(s.pages, s.tail)
		if len(s.pages) == 1 {
			s.head = s.tail
		}
	}
	s.tail[off%pageSize] = t
	t.pos = s.hi
	s.hi++
}

// remove takes t, which s holds, out of s.
func (s *slot) remove(t *timer, sp *spares) {
	switch p := t.pos; p {
	case s.lo:
		s.head[p-s.base] = nil
		s.lo++
		if s.lo-s.base == pageSize && s.lo != s.hi {
			// The first page is all gone.
			sp.put(s.head)
			s.pages[0] = nil
			s.pages = s.pages[1:]
			s.head = s.pages[0]
			s.base += pageSize
		}
	case s.hi - 1:
		s.pop(sp)
	default:
		moved := *s.entry(s.hi - 1)
		*s.entry(p), moved.pos = moved, p
		s.pop(sp)
	}
	if s.lo == s.hi {
		s.clear(sp)
	}
}

// pop drops the newest entry, and its page if that empties and is not the
// first.
func (s *slot) pop(sp *spares) {
	s.hi--
	off := s.hi - s.base
	s.tail[off%pageSize] = nil
	if off%pageSize == 0 && off > 0 {
		last := len(s.pages) - 1
		sp.put(s.tail)
		s.pages[last] = nil
		s.pages = s.pages[:last]
		s.tail = s.pages[last-1]
	}
}

// clear gives back the pages of s, which holds no timer.
func (s *slot) clear(sp *spares) {
	for i, pg := range s.pages {
		sp.put(pg)
		s.pages[i] = nil
	}
	s.pages = s.pages[:0]
	s.head, s.tail = nil, nil
	s.base, s.lo = s.hi, s.hi
}

// truncate drops the positions from hi on, whose entries must be nil, and
// gives back the pages it empties.
func (s *slot) truncate(hi uint32, sp *spares) {
	s.hi = hi
	if s.lo == s.hi {
		s.clear(sp)
		return
	}
	n := int((s.hi-s.base-1)/pageSize) + 1 // pages still in use
	for i := n; i < len(s.pages); i++ {
		sp.put(s.pages[i])
		s.pages[i] = nil
	}
	s.pages = s.pages[:n]
	s.tail = s.pages[n-1]
}

// take empties s and yields its timers, oldest first. The caller may push
// timers to s meanwhile, even to s: they go to new pages.
func (s *slot) take(sp *spares) iter.Seq[*timer] {
	pages := s.pages
	s.pages, s.head, s.tail = nil, nil, nil
	s.base, s.lo = s.hi, s.hi
	return func(yield func(*timer) bool) {
		stopped := false
		for _, pg := range pages {
			for i, t := range pg {
				// Only the entries of the slot's positions are not nil.
				if t == nil {
					continue
				}
				pg[i] = nil
				if !stopped {
					stopped = !yield(t)
				}
			}
			sp.put(pg)
		}
	}
}

// spares are a shard's empty pages, for its slots to reuse.
type spares struct {
	pages []*page // each all nil
}

// keepPages is the largest number of spare pages a shard keeps: the rest go
// back to the garbage collector, so that a burst of timers does not pin
// its memory.
const keepPages = 512

// get returns a page whose entries are all nil.
func (sp *spares) get() *page {
	if n := len(sp.pages); n > 0 {
		pg := sp.pages[n-1]
		sp.pages[n-1] = nil
		sp.pages = sp.pages[:n-1]
		return pg
	}
	return new(page)
}

// put keeps pg, whose entries are all nil, for reuse, if there is room.
func (sp *spares) put(pg *page) {
	if len(sp.pages) < keepPages {
		sp.pages = append(sp.pages, pg)
	}
}

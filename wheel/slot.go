package wheel

import "iter"

// A slot holds the pending timers of one slot of one level of a shard, in
// the order they were placed: a deque, so that stopping the oldest timer,
// the usual case for timeouts, touches no other timer.
//
// The timers are kept in pages of up to pageSize. A slot grows a page at a
// time without copying its timers, and gives a page back as soon as its
// oldest timers have all gone. Each timer knows its position as a virtual
// index: the slot's timers are at positions lo to hi-1, counted modulo
// 2^32, and position p is entry (p-base)%pageSize of page
// (p-base)/pageSize. No operation touches timers other than the one it is
// about, except that stopping a timer that is neither the oldest nor the
// newest moves the newest into its place.
//
// A slot belongs to its shard and is guarded by the shard's lock.
type slot struct {
	// pages[i] holds the timers at positions base+i*pageSize on, as many
	// as its length. Every page but the last is full. The entries of the
	// first page before lo are nil.
	pages        [][]*timer
	base, lo, hi uint32
}

// pageSize is the number of timers a page holds. A slot's first page
// starts at firstPage timers and doubles, so that a slot of a few timers
// costs little; the others come full-sized from the shard's spares.
const (
	pageSize  = 64
	firstPage = 4
)

// len returns the number of timers in s.
func (s *slot) len() int { return int(s.hi - s.lo) }

// entry returns the address of the entry at position p.
func (s *slot) entry(p uint32) **timer {
	off := p - s.base
	return &s.pages[off/pageSize][off%pageSize]
}

// push appends t and sets its pos.
func (s *slot) push(t *timer, sp *spares) {
	p := int((s.hi - s.base) / pageSize)
	if p == len(s.pages) {
		var page []*timer
		if p > 0 || len(sp.pages) > 0 {
			page = sp.get()
		} else {
			page = make([]*timer, 0, firstPage)
		}
		s.pages = append(s.pages, page)
	}
	s.pages[p] = append(s.pages[p], t) // grows only a small first page
	t.pos = s.hi
	s.hi++
}

// remove takes t, which s holds, out of s.
func (s *slot) remove(t *timer, sp *spares) {
	switch p := t.pos; p {
	case s.lo:
		*s.entry(p) = nil
		s.lo++
		if s.lo-s.base == pageSize && s.lo != s.hi {
			// The first page is all gone.
			sp.put(s.pages[0])
			s.pages[0] = nil
			s.pages = s.pages[1:]
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

// pop drops the newest entry, and its page if that empties.
func (s *slot) pop(sp *spares) {
	s.hi--
	last := len(s.pages) - 1
	page := s.pages[last]
	page[len(page)-1] = nil
	s.pages[last] = page[:len(page)-1]
	if len(page) == 1 && last > 0 {
		sp.put(s.pages[last])
		s.pages[last] = nil
		s.pages = s.pages[:last]
	}
}

// clear gives back the pages of s, which holds no timer.
func (s *slot) clear(sp *spares) {
	for i, page := range s.pages {
		sp.put(page)
		s.pages[i] = nil
	}
	s.pages = s.pages[:0]
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
		sp.put(s.pages[i][:0])
		s.pages[i] = nil
	}
	s.pages = s.pages[:n]
	s.pages[n-1] = s.pages[n-1][:int(s.hi-s.base)-(n-1)*pageSize]
}

// take empties s and yields its timers, oldest first. The caller may push
// timers to s meanwhile, even to s: they go to new pages.
func (s *slot) take(sp *spares) iter.Seq[*timer] {
	pages, first := s.pages, int(s.lo-s.base)
	s.pages, s.base, s.lo = nil, s.hi, s.hi
	return func(yield func(*timer) bool) {
		stopped := false
		for k, page := range pages {
			for i := range page {
				t := page[i]
				page[i] = nil
				if k == 0 && i < first || stopped {
					continue
				}
				stopped = !yield(t)
			}
			sp.put(page)
		}
	}
}

// spares are a shard's empty full-sized pages, for its slots to reuse.
type spares struct {
	pages [][]*timer // each empty, of capacity pageSize
}

// keepPages is the largest number of spare pages a shard keeps: the rest go
// back to the garbage collector, so that a burst of timers does not pin
// its memory.
const keepPages = 256

// get returns an empty page of capacity pageSize.
func (sp *spares) get() []*timer {
	if n := len(sp.pages); n > 0 {
		page := sp.pages[n-1]
		sp.pages[n-1] = nil
		sp.pages = sp.pages[:n-1]
		return page
	}
	return make([]*timer, 0, pageSize)
}

// put keeps page, whose entries are all nil, for reuse, if it is full-sized
// and there is room.
func (sp *spares) put(page []*timer) {
	if cap(page) == pageSize && len(sp.pages) < keepPages {
		sp.pages = append(sp.pages, page[:0])
	}
}

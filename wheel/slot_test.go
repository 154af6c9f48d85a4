package wheel

import (
	"math/rand/v2"
	"testing"
)

// A slot driven with random pushes, removes (oldest, newest, any) and
// takes, against a model: the timers in position order. After every step
// each timer's pos names its entry, every page but the last is full,
// nothing before the oldest timer or after the newest is kept, emptied
// pages go back to the spares and the spares hold only empty pages.
// Positions start just below 2^32, so they wrap around.
func TestSlotAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var sp spares
	const start = 1<<32 - 300
	s := slot{base: start, lo: start, hi: start}
	var model []*timer
	check := func(step int) {
		t.Helper()
		if s.len() != len(model) {
			t.Fatalf("step %d: len %d, model %d", step, s.len(), len(model))
		}
		for k, tm := range model {
			if tm.pos != s.lo+uint32(k) || *s.entry(tm.pos) != tm {
				t.Fatalf("step %d: timer %d of %d at pos %d, lo %d", step, k, len(model), tm.pos, s.lo)
			}
		}
		if want := (int(s.hi-s.base) + pageSize - 1) / pageSize; len(s.pages) != want {
			t.Fatalf("step %d: %d pages for %d positions from base", step, len(s.pages), s.hi-s.base)
		}
		if s.lo-s.base >= pageSize {
			t.Fatalf("step %d: a first page of dead entries is kept", step)
		}
		for p := s.base; p != s.base+uint32(len(s.pages))*pageSize; p++ {
			if in := p-s.lo < s.hi-s.lo; !in && *s.entry(p) != nil {
				t.Fatalf("step %d: entry %d, outside %d to %d, keeps a timer", step, p, s.lo, s.hi)
			}
		}
		if n := len(s.pages); n == 0 && (s.head != nil || s.tail != nil) || n > 0 && (s.head != s.pages[0] || s.tail != s.pages[n-1]) {
			t.Fatalf("step %d: head or tail is not the first or last of %d pages", step, n)
		}
		if len(sp.pages) > keepPages {
			t.Fatalf("step %d: %d spare pages", step, len(sp.pages))
		}
		for _, pg := range sp.pages {
			for _, tm := range pg {
				if tm != nil {
					t.Fatalf("step %d: a spare page keeps a timer", step)
				}
			}
		}
	}
	for step := range 5000 {
		switch op := rng.IntN(1000); {
		case op < 400 || len(model) == 0: // push a few
			for range 1 + rng.IntN(8) {
				tm := &timer{}
				s.push(tm, &sp)
				model = append(model, tm)
			}
		case op < 700: // remove the oldest
			s.remove(model[0], &sp)
			model = model[1:]
		case op < 800: // remove the newest
			s.remove(model[len(model)-1], &sp)
			model = model[:len(model)-1]
		case op < 995: // remove any: the newest takes its place
			i := rng.IntN(len(model))
			s.remove(model[i], &sp)
			if last := len(model) - 1; i == 0 {
				model = model[1:]
			} else {
				model[i] = model[last]
				model = model[:last]
			}
		case op < 998: // keep some, as shard.early does, and truncate
			var kept []*timer
			w := s.lo
			for p := s.lo; p != s.hi; p++ {
				e := s.entry(p)
				tm := *e
				*e = nil
				if rng.IntN(3) > 0 {
					*s.entry(w), tm.pos = tm, w
					w++
					kept = append(kept, tm)
				}
			}
			s.truncate(w, &sp)
			model = kept
		default: // take all, and push some back meanwhile
			var kept []*timer
			i := 0
			for tm := range s.take(&sp) {
				if tm != model[i] {
					t.Fatalf("step %d: take yielded timer %d out of order", step, i)
				}
				i++
				if rng.IntN(2) == 0 {
					s.push(tm, &sp)
					kept = append(kept, tm)
				}
			}
			if i != len(model) {
				t.Fatalf("step %d: take yielded %d of %d", step, i, len(model))
			}
			model = kept
		}
		check(step)
	}
}

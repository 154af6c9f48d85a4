package wheel

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The shard is a plain data structure driven by its callers under its
// lock; this test drives one directly with random adds, removes and
// advances, over geometries from 2 to 512 slots per level (so up to 64
// levels), with a tick of 4 ns and exact deadlines anywhere within a tick,
// and checks it against a model after every step: advance never fires a
// timer before its exact deadline, fires every timer whose tick has
// started, and fires a timer as soon as its exact deadline has passed
// unless its tick starts a span of a level above 0; remove succeeds
// exactly on pending timers; count is right; next is never later than
// the time the shard must act.
func TestShardAgainstModel(t *testing.T) {
	for _, slotBits := range []uint{1, 2, 3, 6, 9} {
		t.Run(fmt.Sprintf("slots=%d", 1<<slotBits), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(slotBits), 42))
			const tick = 4
			sh := newShard(slotBits, tick)
			exact := func(tm *timer) uint64 { return tm.at*tick - uint64(tm.off&offMask) }
			// spanStart reports whether tick at starts a span above level 0.
			spanStart := func(at uint64) bool { return at&sh.mask == 0 }
			pending := map[*timer]bool{}
			deadline := map[*timer]uint64{} // exact(tm) when added: fire changes at
			var all []*timer
			firedNow := map[*timer]int{}
			// span draws a distance with every magnitude equally likely,
			// so timers land on every level and on slot boundaries.
			// Times stay below 1<<63 + 1<<62 ns: a deadline is at most
			// the wheel's age plus a Duration.
			const limit = 1<<63 + 1<<62
			span := func() uint64 {
				v := rng.Uint64() >> rng.UintN(64)
				if rng.IntN(4) == 0 {
					v &^= 1<<rng.UintN(20) - 1 // round: a span start
				}
				return v
			}
			for step := range 4000 {
				switch op := rng.IntN(10); {
				case op < 5: // add
					tm := &timer{}
					tm.f = func() { firedNow[tm]++ }
					tm.at = sh.cur + max(1, min(span(), limit/tick-sh.cur))
					tm.off = uint32(rng.IntN(tick))
					wasNext := sh.next.Load()
					e, sooner := sh.add(tm)
					if e > tm.at*tick || e <= sh.cur*tick || sooner != (e < wasNext) || (sooner && sh.next.Load() != e) {
						t.Fatalf("step %d: add(at=%d) at cur=%d returned event=%d sooner=%v", step, tm.at, sh.cur, e, sooner)
					}
					pending[tm] = true
					deadline[tm] = exact(tm)
					all = append(all, tm)
				case op < 7 && len(all) > 0: // remove
					tm := all[rng.IntN(len(all))]
					ok := tm.f != nil
					if ok != pending[tm] {
						t.Fatalf("step %d: pending=%v but f=%v", step, pending[tm], ok)
					}
					if ok {
						sh.remove(tm)
						delete(pending, tm)
						if tm.f != nil {
							t.Fatalf("step %d: remove kept the callback", step)
						}
					}
				default: // advance
					nowTick := sh.cur + min(span()>>rng.UintN(64), limit/tick-1-sh.cur)
					now := nowTick*tick + uint64(rng.IntN(tick))
					due := sh.advance(now, nil)
					for _, f := range due {
						f()
					}
					for tm, n := range firedNow {
						if n != 1 || deadline[tm] > now || tm.at != started {
							t.Fatalf("step %d: timer due at %d fired %d times advancing to %d, at=%d", step, deadline[tm], n, now, tm.at)
						}
						delete(pending, tm)
					}
					for tm := range pending {
						if tm.at <= nowTick {
							t.Fatalf("step %d: timer of tick %d did not fire advancing to tick %d", step, tm.at, nowTick)
						}
						if exact(tm) <= now && !spanStart(tm.at) && tm.at == nowTick+1 {
							t.Fatalf("step %d: timer due at %d did not fire advancing to %d", step, exact(tm), now)
						}
					}
					clear(firedNow)
					if sh.cur != nowTick {
						t.Fatalf("step %d: cur=%d after advance to tick %d", step, sh.cur, nowTick)
					}
				}
				if sh.count != len(pending) {
					t.Fatalf("step %d: count=%d, %d pending", step, sh.count, len(pending))
				}
				for tm := range pending {
					if must := tm.at * tick; sh.next.Load() > must {
						t.Fatalf("step %d: next=%d passes the tick of a timer, %d", step, sh.next.Load(), must)
					}
					if must := exact(tm); !spanStart(tm.at) && tm.at == sh.cur+1 && sh.next.Load() > must {
						t.Fatalf("step %d: next=%d passes the deadline of a timer, %d", step, sh.next.Load(), must)
					}
				}
				if len(all) > 1000 {
					all = all[500:]
				}
			}
			if n := sh.drop(); n != len(pending) {
				t.Fatalf("drop returned %d, %d pending", n, len(pending))
			}
			for tm := range pending {
				if tm.f != nil || tm.at != dropped {
					t.Fatal("drop left a timer pending or unmarked")
				}
			}
		})
	}
}

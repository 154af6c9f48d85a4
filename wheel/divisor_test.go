package wheel

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// div agrees with the division instruction, at the edges and at random.
func TestDivisor(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	ds := []uint64{1, 2, 3, 7, 1000, 999_983, 1_000_000, 1 << 32, 1<<32 + 1, math.MaxInt64, math.MaxUint64}
	for range 100 {
		ds = append(ds, rng.Uint64()>>rng.UintN(64)+1)
	}
	for _, d := range ds {
		v := newDivisor(d)
		ns := []uint64{0, 1, d - 1, d, d + 1, 2*d - 1, math.MaxUint64, math.MaxUint64 - 1, math.MaxInt64}
		for range 1000 {
			ns = append(ns, rng.Uint64()>>rng.UintN(64))
		}
		for _, n := range ns {
			if q, r := v.div(n); q != n/d || r != n%d {
				t.Fatalf("div(%d) by %d = %d, %d; want %d, %d", n, d, q, r, n/d, n%d)
			}
		}
	}
}

// deadline's offset fits the bits that timer.off leaves it beside the
// generation, and the deadline it gives back is never before end and,
// with a tick up to 2^offBits ns, exact; with a longer one, less than a
// unit later.
func TestDeadlineOffsetFits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	ticks := []uint64{1, 1000, 1_000_000, offMask, offMask + 1, offMask + 2, 1e9, 1 << 32, 1<<32 + 1, 1 << 40}
	for _, tick := range ticks {
		w := &Wheel{tick: time.Duration(tick), perTick: newDivisor(tick)}
		sh := newShard(9, tick)
		for range 10000 {
			end := rng.Uint64() >> rng.UintN(64) >> 1
			at, off := w.deadline(end, sh.unit)
			if off > offMask {
				t.Fatalf("tick %d, end %d: offset %d does not fit %d bits", tick, end, off, offBits)
			}
			tm := &timer{at: at, off: lastGen<<offBits | off}
			got := sh.exact(tm)
			if got < end || got-end >= sh.unit || (tick <= offMask+1 && got != end) {
				t.Fatalf("tick %d (unit %d), end %d: deadline %d", tick, sh.unit, end, got)
			}
		}
	}
}

package wheel

import (
	"math"
	"math/rand/v2"
	"testing"
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

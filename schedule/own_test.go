package schedule

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// ownDues against a model, a sorted list of every Due it accepted: it
// accepts a Due it has not accepted among its latest ownKeep, unless older
// than all of those once it keeps ownKeep; it never accepts a Due twice
// while it keeps it.
func TestOwnDues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var o ownDues
		var kept []int64 // the model: the latest ownKeep accepted, sorted
		for range 300 {
			d := int64(r.IntN(60)) // near and far, new and repeated
			if round%2 == 1 {
				d += int64(len(kept)) * 3 // mostly increasing, as slots are
			}
			err := o.claim(time.Unix(0, d))
			_, found := slices.BinarySearch(kept, d)
			want := !found && !(len(kept) == ownKeep && d < kept[0])
			if (err == nil) != want {
				t.Fatalf("round %d: claim(%d) = %v, model keeps %v", round, d, err, kept)
			}
			if err == nil {
				kept = append(kept, d)
				slices.Sort(kept)
				if len(kept) > ownKeep {
					kept = kept[1:]
				}
			}
			if got := o.dues[:o.n]; !slices.Equal(got, kept) {
				t.Fatalf("round %d: keeps %v, model %v", round, got, kept)
			}
		}
	}
}

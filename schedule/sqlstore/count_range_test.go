package sqlstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// A range whose step times n overflows is refused, not counted as a few
// nanoseconds.
func TestCountRunsOverflowingRange(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, b, b.dsn(t))
		from := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
		for _, d := range []time.Duration{0, time.Hour} {
			r := schedule.Record{Job: "a", Due: from.Add(d), Status: schedule.Running, Node: "n", Attempt: 1, Start: from.Add(d)}
			require.NoError(t, s.Claim(ctx, r))
		}
		for _, step := range []time.Duration{1 << 62, 1<<62 + 1} {
			counts, err := s.CountRuns(ctx, from, step, 4) // step*4 wraps to 0, or to 4ns
			assert.Error(t, err, "%d ranges of %v: past what a Due holds; got %v", 4, step, counts)
		}
	})
}

package circulation_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
)

// TestSupersededTimersDoNotAccumulate: a superseded FireAfter stops its
// timer, so a million of them on one Trigger leave the heap flat. (Keeping
// every superseded task queued until its deadline, as a scheduled executor
// does, costs about 100 MB here.)
func TestSupersededTimersDoNotAccumulate(t *testing.T) {
	for _, sc := range schedulers {
		t.Run(sc.name, func(t *testing.T) {
			if sc.name == "chaos" {
				t.Skip("chaos never stops a timer, by design")
			}
			tr := circulation.Bind(sc.new(t), func(context.Context) (time.Duration, bool) { return 0, false })
			before := liveHeap()
			for range 1_000_000 {
				tr.FireAfter(time.Hour)
			}
			grown := liveHeap() - before
			require.NoError(t, tr.Stop(context.Background()))
			t.Logf("heap grew by %d bytes", grown)
			require.Less(t, grown, int64(1<<20), "superseded timers accumulate")
		})
	}
}

package circulation_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
)

// The allocation claims of the Fire path, as tests: the benchmarks report
// the same figures, but only a test fails when they stop holding.
func TestFireAllocatesNothing(t *testing.T) {
	t.Run("WhileRunning", func(t *testing.T) {
		started, release := make(chan struct{}), make(chan struct{})
		var runs atomic.Int32
		tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) {
			if runs.Add(1) == 1 {
				close(started)
				<-release
			}
			return 0, false
		})
		tr.Fire()
		<-started
		assert.Zero(t, testing.AllocsPerRun(100, tr.Fire), "a Fire that reserves a run after the one in flight")
		close(release)
		require.NoError(t, tr.Stop(context.Background()))
	})
	t.Run("Coalesced", func(t *testing.T) {
		fs := &fakeScheduler{} // holds its callbacks: the first arming stays unstarted
		tr := circulation.Bind(fs, func(context.Context) (time.Duration, bool) { return 0, false })
		tr.Fire()
		assert.Zero(t, testing.AllocsPerRun(100, tr.Fire), "a Fire that rides on an unstarted arming")
		require.Len(t, fs.armed(), 1)
		require.NoError(t, tr.Stop(context.Background()))
	})
	t.Run("SupersededOnRuntimeScheduler", func(t *testing.T) {
		tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) { return 0, false })
		fireAfterHour := func() { tr.FireAfter(time.Hour) }
		fireAfterHour()
		assert.Zero(t, testing.AllocsPerRun(100, fireAfterHour), "a FireAfter that re-arms the timer it supersedes")
		require.NoError(t, tr.Stop(context.Background()))
	})
}

package circulation_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
)

// A run is superseded by every call made after it began, however many: the
// version may have gone all the way round the version space, or more than
// half of it, and come back to the value the run began with or pass it.
// SkipVersions stands for the calls (a whole turn of them would take
// seconds of real Fires).
func TestRunOutlivesVersionWrap(t *testing.T) {
	for _, tt := range []struct {
		name  string
		calls uint32 // calls made while the run is in flight, before the last one
	}{
		{"a whole turn", circulation.VersionSpace - 1}, // with the Suspend, the version is back where the run began
		{"half a turn", circulation.VersionSpace / 2},
		{"half a turn and one", circulation.VersionSpace/2 + 1},
		{"just under half a turn", circulation.VersionSpace/2 - 1},
	} {
		t.Run("Suspend after "+tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var runs atomic.Int32
				release := make(chan struct{})
				ctxErr := make(chan error, 1)
				tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
					if runs.Add(1) == 1 {
						<-release
						ctxErr <- ctx.Err()
					}
					return time.Millisecond, true
				})
				tr.Fire()
				synctest.Wait() // the first run is in flight
				v := circulation.Version(tr)
				circulation.SkipVersions(tr, tt.calls)
				tr.Suspend()
				if tt.calls == circulation.VersionSpace-1 {
					require.Equal(t, v, circulation.Version(tr), "the version is back where the run began")
				}
				close(release)
				time.Sleep(100 * time.Millisecond)
				assert.ErrorIs(t, <-ctxErr, context.Canceled, "Suspend did not cancel the run's context")
				assert.EqualValues(t, 1, runs.Load(), "the superseded run's (1ms, true) was acted on")
				require.NoError(t, tr.Stop(context.Background()))
			})
		})
	}

	// FireAfter calls alone: the run's answer is ignored, and the run goes
	// on uncancelled.
	t.Run("FireAfter a whole turn", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var runs atomic.Int32
			release := make(chan struct{})
			ctxErr := make(chan error, 1)
			tr := circulation.Bind(nil, func(ctx context.Context) (time.Duration, bool) {
				if runs.Add(1) == 1 {
					<-release
					ctxErr <- ctx.Err()
				}
				return time.Millisecond, true
			})
			tr.Fire()
			synctest.Wait()
			v := circulation.Version(tr)
			circulation.SkipVersions(tr, circulation.VersionSpace)
			require.Equal(t, v, circulation.Version(tr))
			close(release)
			time.Sleep(100 * time.Millisecond)
			assert.NoError(t, <-ctxErr, "FireAfter cancels no run")
			assert.EqualValues(t, 1, runs.Load(), "the superseded run's (1ms, true) was acted on")
			require.NoError(t, tr.Stop(context.Background()))
		})
	})
}

package circulation_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation"
)

// TestPanicWithoutHandlerRestoresState: a panic in the Func propagates to the
// Scheduler's callback, but only after the Trigger has given up the running
// bit and re-armed the fire reserved during the failed run.
func TestPanicWithoutHandlerRestoresState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &recoveringScheduler{}
		e := &env{t: t, s: s, start: time.Now()}
		var tr *circulation.Trigger
		tr, r := e.bind(func(_ context.Context, k int) (time.Duration, bool) {
			if k == 1 {
				time.Sleep(time.Second)
				tr.Fire() // reserved while running, then the run panics
				panic("boom")
			}
			return 0, false
		})
		tr.Fire()
		time.Sleep(time.Hour)
		tr.Fire() // not wedged
		time.Sleep(time.Hour)
		e.runsAt(r, 0, time.Second, time.Hour)
		assert.Equal(t, []any{"boom"}, s.panics())
	})
}

// TestPanicWithoutHandlerCrashes checks that an unhandled panic in the Func
// crashes the program, as one in a time.AfterFunc callback does.
func TestPanicWithoutHandlerCrashes(t *testing.T) {
	if os.Getenv("CIRCULATION_CRASH") == "1" {
		tr := circulation.Bind(nil, func(context.Context) (time.Duration, bool) {
			panic("boom from the task")
		})
		tr.Fire()
		time.Sleep(time.Minute)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicWithoutHandlerCrashes$")
	cmd.Env = append(os.Environ(), "CIRCULATION_CRASH=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the program survived a panic in the task:\n%s", out)
	assert.Contains(t, string(out), "panic: boom from the task")
}

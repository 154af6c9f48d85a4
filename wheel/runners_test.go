package wheel

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// Callbacks that block never hold up the ones queued behind them: each
// blocked callback ends up with a runner of its own.
func TestRunnersBlockedCallbacksHoldUpNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRunners()
		release := make(chan struct{})
		var began atomic.Int32
		fs := make([]func(), 100)
		for i := range fs {
			fs[i] = func() { began.Add(1); <-release }
		}
		r.submit(fs[:50])
		r.submit(fs[50:])
		synctest.Wait()
		if n := began.Load(); n != 100 {
			t.Fatalf("%d of 100 blocking callbacks began", n)
		}
		close(release)
	})
}

// Quick callbacks share a few runners instead of a goroutine each.
func TestRunnersQuickCallbacksShareRunners(t *testing.T) {
	r := newRunners()
	var wg sync.WaitGroup
	fs := make([]func(), 10000)
	wg.Add(len(fs))
	for i := range fs {
		fs[i] = wg.Done
	}
	r.submit(fs)
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spawned >= len(fs)/10 {
		t.Fatalf("%d runners for %d quick callbacks", r.spawned, len(fs))
	}
	t.Logf("%d runners for %d quick callbacks", r.spawned, len(fs))
}

// drain returns only once every submitted callback has been taken by a
// runner.
func TestRunnersDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRunners()
		release := make(chan struct{})
		fs := make([]func(), 1000)
		for i := range fs {
			fs[i] = func() { <-release }
		}
		r.submit(fs)
		r.drain()
		r.mu.Lock()
		left := len(r.queue) - r.head
		r.mu.Unlock()
		if left != 0 {
			t.Fatalf("drain returned with %d callbacks queued", left)
		}
		close(release)
	})
}

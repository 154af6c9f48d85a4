package cron_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/cron"
	"github.com/circulation-go/circulation/schedule"
)

// On the real clock and scheduler, under -race: goroutines apply random
// sets of tasks as fast as they can, changing their misfire policies (so
// their jobs) and times, handlers apply sets of their own, and Stop comes
// in the middle of it all. No Apply fails but with ErrTableStopped once
// Stop has begun, no task overlaps itself, even across the jobs that
// replace each other, no slot runs twice, and Stop leaves nothing running.
func TestTableApplyStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	names := []string{"a", "b", "c", "d", "e", "f"}
	random := func(r *rand.Rand) []cron.Task {
		var defs []cron.Task
		for _, name := range names {
			if r.IntN(4) == 0 {
				continue
			}
			d := task(name, []string{"quick", "slow", "reload"}[r.IntN(3)], []string{"* * * * * *", "*/2 * * * * *", "@every 1s"}[r.IntN(3)])
			d.Misfire = []string{"run-once", "skip", "run-all"}[r.IntN(3)]
			d.BusinessID = fmt.Sprint(r.IntN(3))
			defs = append(defs, d)
		}
		// One task that never changes: it runs every second, whatever
		// the others do.
		return append(defs, task("steady", "quick", "* * * * * *"))
	}

	var mu sync.Mutex
	inFlight := map[string]int{}
	ran := map[string]map[time.Time]int{}
	var overlaps, runs atomic.Int64
	var stopping atomic.Bool
	var tab *cron.Table
	enter := func(r schedule.Run) func() {
		runs.Add(1)
		mu.Lock()
		inFlight[r.Job]++
		if inFlight[r.Job] > 1 {
			overlaps.Add(1)
		}
		if ran[r.Job] == nil {
			ran[r.Job] = map[time.Time]int{}
		}
		ran[r.Job][r.Due]++
		mu.Unlock()
		return func() {
			mu.Lock()
			inFlight[r.Job]--
			mu.Unlock()
		}
	}
	handlers := map[string]cron.Handler{
		"quick": func(ctx context.Context, _ string, r schedule.Run) error { defer enter(r)(); return nil },
		"slow": func(ctx context.Context, _ string, r schedule.Run) error {
			defer enter(r)()
			select {
			case <-time.After(time.Duration(rand.IntN(1500)) * time.Millisecond):
			case <-ctx.Done():
			}
			return nil
		},
		"reload": func(ctx context.Context, _ string, r schedule.Run) error {
			defer enter(r)()
			_, err := tab.Apply(ctx, random(rand.New(rand.NewPCG(rand.Uint64(), 1))))
			if err != nil && !(errors.Is(err, cron.ErrTableStopped) && stopping.Load()) {
				t.Errorf("Apply from a handler: %v", err)
			}
			return nil
		},
	}
	tab = cron.NewTable(handlers, cron.WithLocation(time.UTC))
	ctx := context.Background()
	var wg sync.WaitGroup
	var applies atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 11))
			for {
				_, err := tab.Apply(ctx, random(r))
				if errors.Is(err, cron.ErrTableStopped) && stopping.Load() {
					return
				}
				if !assert.NoError(t, err) {
					return
				}
				applies.Add(1)
				time.Sleep(time.Duration(r.IntN(10)) * time.Millisecond)
			}
		})
	}
	// At least 2.5s of storm, and as long as it takes a busy machine to
	// run the steady task twice meanwhile, up to a minute.
	time.Sleep(2500 * time.Millisecond)
	steady := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(ran["steady"])
	}
	for deadline := time.Now().Add(time.Minute); steady() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	stopping.Store(true)
	require.NoError(t, tab.Stop(ctx))
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for job, n := range inFlight {
		assert.Zero(t, n, "%s: runs in flight after Stop", job)
	}
	for job, slots := range ran {
		for due, n := range slots {
			assert.Equal(t, 1, n, "%s: slot %v ran %d times", job, due, n)
		}
	}
	t.Logf("%d applies, %d runs", applies.Load(), runs.Load())
	assert.GreaterOrEqual(t, len(ran["steady"]), 2, "the steady task ran at most once in a minute of storm")
	assert.Zero(t, overlaps.Load(), "runs of a task that forbids overlaps overlapped")
}

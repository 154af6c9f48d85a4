package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/circulation-go/circulation/examples/internal/cmdtest"
)

func TestMain(m *testing.M) {
	cmdtest.RunMainIfChild(main)
	goleak.VerifyTestMain(m)
}

const u = 100 * time.Millisecond

// The story's flushes come exactly when the rules say: 5u after the
// batch's first write (later writes do not postpone it), at 8u for the
// full batch (3u after flush 1 began, not at once, and not at 10.5u), and
// at 10u for Close (not at 14u). Every accepted write is stored with its
// latest value, the write after Close is refused, and the database never
// saw two writes at once.
func TestStory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := run(context.Background(), new(bytes.Buffer), config{unit: u})
		require.NoError(t, err)
		var at []time.Duration
		for _, f := range r.flushes {
			at = append(at, f.at)
		}
		assert.Equal(t, []time.Duration{5 * u, 8 * u, 10 * u}, at)
		assert.Equal(t, []string{"user:1", "user:2", "user:3"}, r.flushes[0].keys)
		assert.Len(t, r.flushes[1].keys, 9, "user:4 and the burst of 8")
		assert.Equal(t, []string{"user:1"}, r.flushes[2].keys)
		assert.Equal(t, r.accepted, r.stored)
		assert.Equal(t, "e", r.stored["user:1"], "the latest value")
		assert.Equal(t, []string{"user:5"}, r.refused)
		assert.Zero(t, r.overlaps)
	})
}

func TestOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		_, err := run(context.Background(), &out, config{unit: u})
		require.NoError(t, err)
		assert.Equal(t, `a write-behind cache: flush within 5u of a batch's first write, at once at 8 keys, flushes at least 3u apart; a batch takes 1u to write (u = 100ms)
  0.0u  put user:1: the batch is due by 5u
  1.0u  put user:2, user:3: they ride on user:1's deadline
  5.0u  flush 1: 3 keys [user:1 user:2 user:3]
  5.5u  put user:4 while flush 1 writes: due by 10.5u
  7.0u  a burst of 8 writes from 4 goroutines: the batch is full, FireWithin(0), but flush 1 began at 5u: flush 2 waits for 8u
  8.0u  flush 2: 9 keys [order:10 order:11 order:12 ... 6 more]
  9.0u  put user:1 again: due by 14u
 10.0u  Close: the pending batch is flushed now, not at 14u
 10.0u  flush 3: 1 key [user:1]
 11.0u  closed
 11.5u  put user:5 after Close
 11.5u  put user:5: writebehind: cache closed

3 flushes; 12 keys stored, 1 writes refused after Close, 0 accepted writes lost, 0 overlapping database writes
`, out.String())
	})
}

// TestNoWriteLostAtClose writes from 8 goroutines on the real clock while
// the cache closes at a random moment: every write Put accepted is stored,
// every write it refused is not, and flushes never overlap.
func TestNoWriteLostAtClose(t *testing.T) {
	for round := range 20 {
		db := &slowDB{latency: 50 * time.Microsecond, stored: map[string]string{}}
		c := NewCache(db, time.Millisecond, 100*time.Microsecond, 16)
		var accepted, refused sync.Map
		var n atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := 0; ; i++ {
					key := fmt.Sprintf("%d/%d", g, i)
					if err := c.Put(key, "v"); err != nil {
						refused.Store(key, true)
						return
					}
					accepted.Store(key, true)
					n.Add(1)
					if rand.IntN(8) == 0 {
						time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
					}
				}
			})
		}
		time.Sleep(time.Duration(rand.IntN(5000)) * time.Microsecond)
		require.NoError(t, c.Close(context.Background()))
		wg.Wait()
		db.mu.Lock()
		accepted.Range(func(k, _ any) bool {
			require.Contains(t, db.stored, k, "round %d: an accepted write was lost", round)
			return true
		})
		refused.Range(func(k, _ any) bool {
			require.NotContains(t, db.stored, k, "round %d: a refused write was stored", round)
			return true
		})
		require.Zero(t, db.overlaps, "round %d: flushes overlapped", round)
		db.mu.Unlock()
	}
}

func TestInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 6*u)
		defer cancel()
		var out bytes.Buffer
		r, err := run(ctx, &out, config{unit: u})
		require.NoError(t, err)
		assert.Contains(t, out.String(), "interrupted")
		assert.Equal(t, r.accepted, r.stored, "Close after the interrupt flushes what was accepted")
	})
}

func TestBadInputExitsWithStatus2(t *testing.T) {
	cmdtest.BadInput{
		"-unit 1ms":  "writebehind: -unit must be between 10ms and 500ms, got 1ms (see -h)",
		"-unit soon": "writebehind: invalid value \"soon\" for flag -unit: parse error (see -h)",
		"go":         "writebehind: unexpected argument \"go\" (see -h)",
	}.Check(t)
}

func TestRunsFromTheCommandLine(t *testing.T) {
	stdout, stderr, code := cmdtest.Run(t, "-unit", "10ms")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "0 accepted writes lost, 0 overlapping database writes\n")
}

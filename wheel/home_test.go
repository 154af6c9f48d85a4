package wheel

import (
	"sync/atomic"
	"testing"
	"time"
)

// A goroutine whose home shard another goroutine holds does not wait for
// it: its bucket moves to the next shard, and stays there.
func TestLockBucketMovesOnContention(t *testing.T) {
	w := New(WithShards(3))
	defer w.Stop()
	b := &w.homes[7]
	// shardOf returns the shard lockBucket locks for b, unlocked again.
	shardOf := func(b *atomic.Uint32) *shard {
		sh := w.lockBucket(b)
		sh.mu.Unlock()
		return sh
	}
	home := shardOf(b)
	if shardOf(b) != home {
		t.Fatal("the bucket moved without contention")
	}

	home.mu.Lock() // as another goroutine would
	returned := make(chan struct{})
	waited := make(chan bool, 1)
	go func() {
		select {
		case <-returned:
			waited <- false
		case <-time.After(5 * time.Second):
			waited <- true
			home.mu.Unlock() // let lockBucket go on
		}
	}()
	moved := shardOf(b)
	close(returned)
	if <-waited {
		t.Fatal("lockBucket waited for the shard another goroutine holds")
	}
	home.mu.Unlock()
	if moved == home {
		t.Fatal("lockBucket used the shard another goroutine holds")
	}
	if shardOf(b) != moved {
		t.Fatal("the bucket did not stay on the shard it moved to")
	}

	// From the last shard, the bucket wraps around to the first.
	b.Store(2)
	got := func() *shard {
		w.shards[2].mu.Lock()
		defer w.shards[2].mu.Unlock()
		return shardOf(b)
	}()
	if got != w.shards[0] {
		t.Fatal("the bucket did not wrap around to the first shard")
	}
}

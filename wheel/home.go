package wheel

import (
	"sync/atomic"
	"unsafe"
)

// Every goroutine that arms timers has a home shard, where AfterFunc puts
// them: a goroutine that arms and stops its own timers, as a server's
// connection does with its timeouts, then keeps using one shard, whose
// lock and slots stay in its processor's cache, and goroutines that run at
// the same time use different shards and do not contend.
//
// Go has no goroutine-local storage; the address of a variable on the
// calling goroutine's stack stands in for the goroutine. The address picks
// a bucket (a goroutine whose stack grows gets another one, which only
// moves its later timers), and homes maps buckets to shards. When
// AfterFunc finds the home shard locked by another goroutine, it moves the
// bucket on to the next shard and uses that one: two goroutines that share
// a shard and run at once part after their first collision, and stay
// apart.
//
// It costs a load where a sync.Pool of per-processor hints cost a Get and
// a Put, and a goroutine that the scheduler moves to another processor
// keeps its shard; doc.go has the measurements.
type homes [homeBuckets]atomic.Uint32 // homes[b] is the index in Wheel.shards of bucket b's shard

// homeBuckets is the number of buckets, 1<<homeBits. Two goroutines in
// one bucket share a shard for good; with 256 buckets, a pair does so one
// time in 256.
const (
	homeBits    = 8
	homeBuckets = 1 << homeBits
)

// init spreads the buckets over n shards.
func (h *homes) init(n int) {
	for b := range h {
		h[b].Store(uint32(b % n))
	}
}

// lockHome locks the calling goroutine's home shard and returns it, or, if
// another goroutine holds it, moves the goroutine's bucket to the next
// shard and locks that one.
func (w *Wheel) lockHome() *shard {
	var here byte
	// Stacks are at least 2 KB; the multiplication spreads neighbouring
	// stacks, which are often aligned alike, over all the buckets, and
	// its top homeBits bits pick one.
	return w.lockBucket(&w.homes[uint64(uintptr(unsafe.Pointer(&here))>>11)*0x9E3779B97F4A7C15>>(64-homeBits)])
}

// lockBucket locks the shard of bucket b and returns it, or, if another
// goroutine holds it, moves b to the next shard and locks that one.
func (w *Wheel) lockBucket(b *atomic.Uint32) *shard {
	i := b.Load()
	sh := w.shards[i]
	if sh.mu.TryLock() {
		return sh
	}
	j := i + 1
	if int(j) == len(w.shards) {
		j = 0
	}
	b.CompareAndSwap(i, j)
	sh = w.shards[j]
	sh.mu.Lock()
	return sh
}

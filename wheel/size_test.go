package wheel

import (
	"testing"
	"unsafe"
)

// The package documentation promises slots of one 64-byte cache line; a
// field added must change the doc too. (A timer's 32 bytes are checked
// when the package compiles: see timerSize.)
func TestSizes(t *testing.T) {
	if s := unsafe.Sizeof(slot{}); s != 64 {
		t.Errorf("slot is %d bytes, not 64", s)
	}
}

// Timers are reused only if their batches are aligned as handle needs:
// on this Go release they are, and new timers start at generation 0.
func TestBatchesAreAligned(t *testing.T) {
	sh := newShard(9, 1e6)
	for range 100 * timerBatch {
		tm := sh.batch.next(sh)
		if uintptr(unsafe.Pointer(tm))%timerSize != 0 || tm.gen() != 0 {
			t.Fatalf("timer at %p has generation %d", tm, tm.gen())
		}
	}
}

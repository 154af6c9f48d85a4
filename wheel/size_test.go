package wheel

import (
	"testing"
	"unsafe"
)

// The package documentation promises 32-byte timers and slots of one
// 64-byte cache line; a field added to either must change the doc too.
func TestSizes(t *testing.T) {
	if s := unsafe.Sizeof(timer{}); s != 32 {
		t.Errorf("timer is %d bytes, not 32", s)
	}
	if s := unsafe.Sizeof(slot{}); s != 64 {
		t.Errorf("slot is %d bytes, not 64", s)
	}
}

package schedule_test

import (
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	go watchHeap(heapCeiling)
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/circulation-go/circulation/schedule_test.watchHeap"))
}

// heapCeiling is far above what the package's tests hold at once (a few
// hundred MB under the race detector).
const heapCeiling = 3 << 30

// watchHeap ends the process with every goroutine's stack, the tests'
// among them, once the heap holds more than limit bytes: a test that runs
// away (a loop that never ends, under synctest's clock that never waits)
// would otherwise grow until the machine kills the process, which names
// no test.
func watchHeap(limit uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	for range time.Tick(time.Second) {
		metrics.Read(s)
		if n := s[0].Value.Uint64(); n > limit {
			debug.SetTraceback("all")
			panic(fmt.Sprintf("schedule_test: the heap holds %d MB, past %d MB: a test ran away; the stacks below name it", n>>20, limit>>20))
		}
	}
}

package schedule_test

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule"
)

// A run stays on its goroutine's first stack, and its Func has room to
// spare there: the frames the job keeps under the Func are small, and the
// record is a call of its own, made after it, so that a Func that uses
// little stack does not make each run copy its stack. Each probe uses some
// stack and says whether the stack grew: a Func that uses 256 bytes finds
// room, and one that uses 1 KB makes the first stack grow, which it would
// not if the stack had grown before the Func ran; so does one that uses
// 1 KB in the next run of the same runner, after the first run's record.
//
// The job has no Store: claiming a slot in a Store is a call the Store
// makes as deep as it needs, before the Func.
func TestRunsStayOnTheFirstStack(t *testing.T) {
	if race {
		t.Skip("the race detector adds to every frame")
	}
	firstStack := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/stack/starting-size:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	// A collection may change the size new goroutines start with, from
	// the stacks it scans: none runs during the test.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if n := firstStack(); n != 2048 {
		t.Skipf("goroutines start with %d bytes of stack, not 2048", n)
	}
	for _, probe := range []struct {
		name  string
		use   func() bool // reports whether the stack grew
		grows bool
		next  bool // the probe is in the second run of the runner
	}{
		{"Func uses 256 bytes", use256Bytes, false, false},
		{"Func uses 1 KB", use1KB, true, false},
		{"Func of the next run uses 256 bytes", use256Bytes, false, true},
		{"Func of the next run uses 1 KB", use1KB, true, true},
	} {
		t.Run(probe.name, func(t *testing.T) {
			// A runner that waits for the job's lock (the test's RunNow
			// holds it as the runner starts) grows its stack in the wait,
			// before the Func: on a loaded machine, now and then. A probe
			// that must find the first stack is tried up to five times.
			tries := 1
			if probe.grows {
				tries = 5
			}
			var grew bool
			for range tries {
				if grew = stackProbe(t, probe.use, probe.next); grew == probe.grows {
					break
				}
			}
			assert.Equal(t, probe.grows, grew, "the stack grew (tries: %d)", tries)
			require.EqualValues(t, 2048, firstStack(), "the size of first stacks changed during the test")
		})
	}
}

// stackProbe runs a job whose Func calls use, in its first run or, if
// next, in the next run of the same runner, and returns what use said.
func stackProbe(t *testing.T, use func() bool, next bool) bool {
	grew := make(chan bool, 1)
	first, release := make(chan struct{}), make(chan struct{})
	runs := 0
	j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error {
		runs++
		if next && runs == 1 {
			close(first)
			<-release
			return nil
		}
		grew <- use()
		return nil
	},
		// A Scheduler of its own: the job's runs start on goroutines no
		// other job's run grew.
		schedule.WithScheduler(new(countingScheduler)),
		// A RunNow during a run follows it, in its runner.
		schedule.WithOverlap(schedule.OverlapBufferOne),
	)
	start(t, j)
	j.RunNow()
	if next {
		<-first
		j.RunNow()
		close(release)
	}
	g := <-grew
	stop(t, j)
	return g
}

// use256Bytes uses 256 bytes of stack, with use, and reports whether
// the stack grew meanwhile.
func use256Bytes() bool { return grewWhile(use256) }

// use1KB is use256Bytes with 1 KB.
func use1KB() bool { return grewWhile(use1024) }

// grewWhile calls f, and reports whether the stack grew meanwhile: a stack
// that grows is copied elsewhere.
//
//go:noinline
func grewWhile(f func()) bool {
	var x byte
	before := uintptr(unsafe.Pointer(&x))
	f()
	return uintptr(unsafe.Pointer(&x)) != before
}

// use256 uses 256 bytes of stack: its frame, with its return address and
// frame pointer.
//
//go:noinline
func use256() {
	var b [256 - 32]byte
	fill(b[:])
}

//go:noinline
func use1024() {
	var b [1024 - 32]byte
	fill(b[:])
}

//go:noinline
func fill(b []byte) {
	for i := range b {
		b[i] = byte(i)
	}
}

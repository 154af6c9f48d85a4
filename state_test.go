package circulation

import (
	"fmt"
	"testing"
)

// st builds a packed state for the tables below.
func st(v uint32, run, res bool) uint32 {
	s := v & versionMask
	if run {
		s |= runningBit
	}
	if res {
		s |= reservedBit
	}
	return s
}

func TestTransitionTables(t *testing.T) {
	const top = versionMask // the last version before the wrap
	tests := []struct {
		name      string
		got, want uint32
	}{
		{"advance idle", advance(st(7, false, false)), st(8, false, false)},
		{"advance keeps running", advance(st(7, true, false)), st(8, true, false)},
		{"advance drops reservation", advance(st(7, true, true)), st(8, true, false)},
		{"advance wraps", advance(st(top, true, true)), st(0, true, false)},
		{"reserve", reserve(st(7, true, false)), st(8, true, true)},
		{"reserve again", reserve(st(7, true, true)), st(8, true, true)},
		{"reserve wraps", reserve(st(top, true, false)), st(0, true, true)},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, fmtState(tt.got), fmtState(tt.want))
		}
	}

	enters := []struct {
		s, v  uint32
		want  uint32
		entry entry
	}{
		{st(7, false, false), 7, st(7, true, false), entryRun},
		{st(7, false, false), 6, st(7, false, false), entryStale},
		{st(7, true, false), 7, st(7, true, true), entryDeferred},
		{st(7, true, true), 7, st(7, true, true), entryDeferred},
		{st(7, true, false), 6, st(7, true, false), entryStale},
		{st(0, false, false), top, st(0, false, false), entryStale},
	}
	for _, tt := range enters {
		if got, e := enter(tt.s, tt.v); got != tt.want || e != tt.entry {
			t.Errorf("enter(%s, %d) = %s, %d; want %s, %d", fmtState(tt.s), tt.v, fmtState(got), e, fmtState(tt.want), tt.entry)
		}
	}

	finishes := []struct {
		s, v uint32
		ok   bool
		want uint32
		exit exit
	}{
		{st(7, true, false), 7, true, st(8, false, false), exitArm},
		{st(7, true, false), 7, false, st(7, false, false), exitIdle},
		{st(8, true, false), 7, true, st(8, false, false), exitIdle}, // superseded: result ignored
		{st(8, true, true), 7, true, st(8, true, false), exitAgain},
		{st(8, true, true), 7, false, st(8, true, false), exitAgain},
		{st(top, true, false), top, true, st(0, false, false), exitArm},
	}
	for _, tt := range finishes {
		if got, x := finish(tt.s, tt.v, tt.ok); got != tt.want || x != tt.exit {
			t.Errorf("finish(%s, %d, %v) = %s, %d; want %s, %d", fmtState(tt.s), tt.v, tt.ok, fmtState(got), x, fmtState(tt.want), tt.exit)
		}
	}

	aborts := []struct {
		s, want uint32
		exit    exit
	}{
		{st(7, true, false), st(7, false, false), exitIdle},
		{st(7, true, true), st(8, false, false), exitArm},
		{st(top, true, true), st(0, false, false), exitArm},
	}
	for _, tt := range aborts {
		if got, x := abort(tt.s); got != tt.want || x != tt.exit {
			t.Errorf("abort(%s) = %s, %d; want %s, %d", fmtState(tt.s), fmtState(got), x, fmtState(tt.want), tt.exit)
		}
	}
}

func TestNewer(t *testing.T) {
	tests := []struct {
		a, b uint32
		want bool
	}{
		{1, 0, true},
		{0, 1, false},
		{5, 5, false},
		{0, versionMask, true}, // across the wrap
		{versionMask, 0, false},
		{1<<29 - 1, 0, true},
		{1 << 29, 0, false}, // half the space ahead: treated as behind
	}
	for _, tt := range tests {
		if got := newer(tt.a, tt.b); got != tt.want {
			t.Errorf("newer(%#x, %#x) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// model is the reference for the transitions: the same rules written with an
// unbounded version and two booleans instead of packed bits.
type model struct {
	version           uint64
	running, reserved bool
}

func (m model) pack() uint32 {
	return st(uint32(m.version%(1<<30)), m.running, m.reserved)
}

// FuzzTransitions drives the transitions of state.go with a random sequence
// of operations, in the order the Trigger may call them, and compares every
// step with the model.
func FuzzTransitions(f *testing.F) {
	f.Add([]byte{0, 2, 3, 1, 3, 4}, uint32(0))
	f.Add([]byte{0, 2, 1, 1, 2, 5, 3, 4, 0, 2}, uint32(versionMask-1))
	f.Add([]byte{0, 2, 0, 0x12, 0x23, 0x33, 1, 0x43, 2, 0x52}, uint32(12345))
	f.Add([]byte{0, 2, 1, 4, 0, 2, 0x10, 0x20, 0x30}, uint32(versionMask))
	f.Fuzz(func(t *testing.T, ops []byte, start uint32) {
		m := model{version: uint64(start & versionMask)}
		s := m.pack()
		var runV uint64 // the version the iteration in flight runs for
		for i, op := range ops {
			arg := op >> 3
			switch op & 7 {
			case 0: // FireAfter(d > 0), Fire on an idle Trigger, Suspend
				s = advance(s)
				m.version++
				m.reserved = false
			case 1: // Fire while running
				if !m.running {
					continue
				}
				s = reserve(s)
				m.version++
				m.reserved = true
			case 2, 5: // a timer callback: current, stale, or wrapped all the way round
				v := m.version
				switch arg % 4 {
				case 1:
					v--
				case 2:
					v += 1 << 30 // same packed version: indistinguishable, and current
				case 3:
					v -= uint64(arg)
				}
				n, e := enter(s, uint32(v%(1<<30)))
				want := entryStale
				if v%(1<<30) == m.version%(1<<30) {
					want = entryRun
					if m.running {
						want = entryDeferred
						m.reserved = true
					} else {
						m.running = true
						runV = m.version
					}
				}
				if e != want {
					t.Fatalf("step %d: enter = %d, want %d", i, e, want)
				}
				s = n
			case 3, 6: // the iteration in flight returns
				if !m.running {
					continue
				}
				ok := arg%2 == 0
				n, x := finish(s, uint32(runV%(1<<30)), ok)
				var want exit
				switch {
				case m.reserved:
					m.reserved = false
					runV = m.version
					want = exitAgain
				case ok && runV == m.version:
					m.running = false
					m.version++
					want = exitArm
				default:
					m.running = false
					want = exitIdle
				}
				if x != want {
					t.Fatalf("step %d: finish = %d, want %d", i, x, want)
				}
				s = n
			case 4, 7: // the iteration in flight panics
				if !m.running {
					continue
				}
				n, x := abort(s)
				want := exitIdle
				if m.reserved {
					m.version++
					want = exitArm
				}
				m.running, m.reserved = false, false
				if x != want {
					t.Fatalf("step %d: abort = %d, want %d", i, x, want)
				}
				s = n
			}
			if s != m.pack() {
				t.Fatalf("step %d (op %#x): state %s, model %s", i, op, fmtState(s), fmtState(m.pack()))
			}
			if reserved(s) && !running(s) {
				t.Fatalf("step %d: reserved without running: %s", i, fmtState(s))
			}
		}
	})
}

// fmtState renders a packed state for failure messages.
func fmtState(s uint32) string {
	flags := ""
	if running(s) {
		flags += "R"
	}
	if reserved(s) {
		flags += "V"
	}
	return fmt.Sprintf("{v=%#x %s}", version(s), flags)
}

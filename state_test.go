package circulation

import (
	"fmt"
	"testing"
)

// Flags for st.
const (
	fRun = 1 << iota
	fRes
	fSup
	fCan
)

// st builds a packed state for the tables below.
func st(v uint32, flags int) uint32 {
	s := v & versionMask
	if flags&fRun != 0 {
		s |= runningBit
	}
	if flags&fRes != 0 {
		s |= reservedBit
	}
	if flags&fSup != 0 {
		s |= supersededBit
	}
	if flags&fCan != 0 {
		s |= canceledBit
	}
	return s
}

func TestTransitionTables(t *testing.T) {
	const top = versionMask // the last version before the wrap
	tests := []struct {
		name      string
		got, want uint32
	}{
		{"advance idle", advance(st(7, 0)), st(8, 0)},
		{"advance supersedes the run", advance(st(7, fRun)), st(8, fRun|fSup)},
		{"advance drops reservation", advance(st(7, fRun|fRes|fSup)), st(8, fRun|fSup)},
		{"advance keeps the cancel", advance(st(7, fRun|fSup|fCan)), st(8, fRun|fSup|fCan)},
		{"advance wraps", advance(st(top, fRun|fRes|fSup)), st(0, fRun|fSup)},
		{"advance idle wraps", advance(st(top, 0)), st(0, 0)},
		{"suspend idle", suspend(st(7, 0)), st(8, 0)},
		{"suspend cancels the run", suspend(st(7, fRun)), st(8, fRun|fSup|fCan)},
		{"suspend drops reservation", suspend(st(top, fRun|fRes|fSup)), st(0, fRun|fSup|fCan)},
		{"reserve", reserve(st(7, fRun)), st(8, fRun|fRes|fSup)},
		{"reserve again", reserve(st(7, fRun|fRes|fSup)), st(8, fRun|fRes|fSup)},
		{"reserve after suspend", reserve(st(7, fRun|fSup|fCan)), st(8, fRun|fRes|fSup|fCan)},
		{"reserve wraps", reserve(st(top, fRun)), st(0, fRun|fRes|fSup)},
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
		{st(7, 0), 7, st(7, fRun), entryRun},
		{st(7, 0), 6, st(7, 0), entryStale},
		{st(7, fRun|fSup), 7, st(7, fRun|fRes|fSup), entryDeferred},
		{st(7, fRun|fRes|fSup), 7, st(7, fRun|fRes|fSup), entryDeferred},
		{st(7, fRun), 6, st(7, fRun), entryStale},
		{st(0, 0), top, st(0, 0), entryStale},
	}
	for _, tt := range enters {
		if got, e := enter(tt.s, tt.v); got != tt.want || e != tt.entry {
			t.Errorf("enter(%s, %d) = %s, %d; want %s, %d", fmtState(tt.s), tt.v, fmtState(got), e, fmtState(tt.want), tt.entry)
		}
	}

	finishes := []struct {
		s    uint32
		ok   bool
		want uint32
		exit exit
	}{
		{st(7, fRun), true, st(8, 0), exitArm},
		{st(7, fRun), false, st(7, 0), exitIdle},
		{st(8, fRun|fSup), true, st(8, 0), exitIdle},          // superseded: result ignored
		{st(8, fRun|fSup|fCan), true, st(8, 0), exitIdle},     // suspended: likewise
		{st(7, fRun|fSup), true, st(7, 0), exitIdle},          // superseded a whole wrap ago: still ignored
		{st(8, fRun|fRes|fSup), true, st(8, fRun), exitAgain}, // a fresh iteration: not superseded
		{st(8, fRun|fRes|fSup|fCan), false, st(8, fRun), exitAgain},
		{st(top, fRun), true, st(0, 0), exitArm},
	}
	for _, tt := range finishes {
		if got, x := finish(tt.s, tt.ok); got != tt.want || x != tt.exit {
			t.Errorf("finish(%s, %v) = %s, %d; want %s, %d", fmtState(tt.s), tt.ok, fmtState(got), x, fmtState(tt.want), tt.exit)
		}
	}

	aborts := []struct {
		s, want uint32
		exit    exit
	}{
		{st(7, fRun), st(7, 0), exitIdle},
		{st(7, fRun|fSup|fCan), st(7, 0), exitIdle},
		{st(7, fRun|fRes|fSup), st(8, 0), exitArm},
		{st(top, fRun|fRes|fSup|fCan), st(0, 0), exitArm},
	}
	for _, tt := range aborts {
		if got, x := abort(tt.s); got != tt.want || x != tt.exit {
			t.Errorf("abort(%s) = %s, %d; want %s, %d", fmtState(tt.s), fmtState(got), x, fmtState(tt.want), tt.exit)
		}
	}
}

// model is the reference for the transitions: the same rules written with an
// unbounded version, booleans instead of packed bits, and the number of
// calls since the iteration in flight began instead of a superseded bit.
type model struct {
	version           uint64
	running, reserved bool
	since             uint64 // Fire, FireAfter and Suspend calls published since the iteration in flight began
	suspended         bool   // one of them was a Suspend
}

func (m model) pack() uint32 {
	flags := 0
	if m.running {
		flags |= fRun
	}
	if m.reserved {
		flags |= fRes
	}
	if m.running && m.since > 0 {
		flags |= fSup
	}
	if m.running && m.suspended {
		flags |= fCan
	}
	return st(uint32(m.version)&versionMask, flags)
}

// call is a Fire, FireAfter or Suspend in the model.
func (m *model) call(reserve, suspend bool) {
	m.version++
	m.reserved = reserve
	if m.running {
		m.since++
		m.suspended = m.suspended || suspend
	}
}

// begin is the start of an iteration in the model.
func (m *model) begin() { m.running, m.reserved, m.since, m.suspended = true, false, 0, false }

// stop is the end of the last iteration of a loop in the model.
func (m *model) stop() { m.running, m.reserved, m.since, m.suspended = false, false, 0, false }

// FuzzTransitions drives the transitions of state.go with a random sequence
// of operations, in the order the Trigger may call them, and compares every
// step with the model. A storm stands for any number of calls at once, up
// to several times round the version space, while a run is in flight.
func FuzzTransitions(f *testing.F) {
	f.Add([]byte{0, 2, 3, 1, 3, 4}, uint32(0))
	f.Add([]byte{0, 2, 1, 1, 2, 5, 3, 4, 0, 2}, uint32(versionMask-1))
	f.Add([]byte{0, 2, 0, 0x12, 0x23, 0x33, 1, 0x43, 2, 0x52}, uint32(12345))
	f.Add([]byte{0, 2, 1, 4, 0, 2, 0x10, 0x20, 0x30}, uint32(versionMask))
	f.Add([]byte{0, 2, 0x07, 0x13, 2, 0x0f, 6}, uint32(3))  // a run outlives a whole wrap, then one more
	f.Add([]byte{0, 2, 0x1f, 0x3, 0x27, 0xb, 3}, uint32(0)) // storms ending in a Suspend
	f.Fuzz(func(t *testing.T, ops []byte, start uint32) {
		m := model{version: uint64(start & versionMask)}
		s := m.pack()
		for i, op := range ops {
			arg := op >> 3
			switch op & 7 {
			case 0: // FireAfter(d > 0), Fire on an idle Trigger
				s = advance(s)
				m.call(false, false)
			case 1: // Fire while running, or Suspend
				if m.running && arg%2 == 0 {
					s = reserve(s)
					m.call(true, false)
				} else {
					s = suspend(s)
					m.call(false, true)
				}
			case 2, 5: // a timer callback: current, stale, or wrapped all the way round
				v := m.version
				switch arg % 4 {
				case 1:
					v--
				case 2:
					v += uint64(versionMask) + 1 // same packed version: indistinguishable, and current
				case 3:
					v -= uint64(arg)
				}
				if m.running && m.since == 0 && v&uint64(versionMask) == m.version&uint64(versionMask) {
					// No such callback exists: the one shot of the
					// version of a run that nothing superseded has
					// started that run.
					continue
				}
				n, e := enter(s, uint32(v&uint64(versionMask)))
				want := entryStale
				if v&uint64(versionMask) == m.version&uint64(versionMask) {
					want = entryRun
					if m.running {
						want = entryDeferred
						m.reserved = true
					} else {
						m.begin()
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
				n, x := finish(s, ok)
				var want exit
				switch {
				case m.reserved:
					m.begin()
					want = exitAgain
				case ok && m.since == 0:
					m.stop()
					m.version++
					want = exitArm
				default:
					m.stop()
					want = exitIdle
				}
				if x != want {
					t.Fatalf("step %d: finish = %d, want %d", i, x, want)
				}
				s = n
			case 4: // the iteration in flight panics
				if !m.running {
					continue
				}
				n, x := abort(s)
				want := exitIdle
				if m.reserved {
					m.version++
					want = exitArm
				}
				m.stop()
				if x != want {
					t.Fatalf("step %d: abort = %d, want %d", i, x, want)
				}
				s = n
			case 7: // a storm: k·2^26 + arg FireAfter calls, then a Suspend if arg is odd
				k := uint64(arg%4) * (uint64(versionMask) + 1)
				n := k + uint64(arg)
				if n == 0 {
					continue
				}
				for range n % (uint64(versionMask) + 1) {
					s = advance(s)
				}
				// The whole turns of the version space leave the
				// packed state as one turn less would: apply one, as
				// the state cannot tell how many there were.
				if k > 0 {
					s = advanceBy(s, uint64(versionMask)+1)
				}
				m.version += n
				if m.running {
					m.since += n
				}
				m.reserved = false
				if n > 0 && arg%2 == 1 {
					s = suspend(s)
					m.call(false, true)
				}
			}
			if s != m.pack() {
				t.Fatalf("step %d (op %#x): state %s, model %s", i, op, fmtState(s), fmtState(m.pack()))
			}
			if s&runFlags != 0 && !running(s) {
				t.Fatalf("step %d: a run flag without the running bit: %s", i, fmtState(s))
			}
			if canceled(s) && !superseded(s) || reserved(s) && !superseded(s) {
				t.Fatalf("step %d: cancelled or reserved, yet not superseded: %s", i, fmtState(s))
			}
		}
	})
}

// advanceBy is n calls of advance, for any n, in closed form.
func advanceBy(s uint32, n uint64) uint32 {
	if n == 0 {
		return s
	}
	s = advance(s)
	return s&^versionMask | (s+uint32(n-1))&versionMask
}

// fmtState renders a packed state for failure messages.
func fmtState(s uint32) string {
	flags := ""
	for _, f := range []struct {
		bit  uint32
		name string
	}{{runningBit, "R"}, {reservedBit, "V"}, {supersededBit, "S"}, {canceledBit, "C"}} {
		if s&f.bit != 0 {
			flags += f.name
		}
	}
	return fmt.Sprintf("{v=%#x %s}", version(s), flags)
}

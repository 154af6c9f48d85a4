package circulation

// SkipVersions moves t's version on by n, as n calls of Suspend would, in one
// step. Tests use it to wrap the 30-bit version around while a stale callback
// is held, which real calls would need a billion steps for.
func SkipVersions(t *Trigger, n uint32) {
	for {
		s := t.state.Load()
		next := s&runningBit | (s+n)&versionMask
		if t.state.CompareAndSwap(s, next) {
			t.disarm(version(next))
			return
		}
	}
}

// Version reports t's current version.
func Version(t *Trigger) uint32 { return version(t.state.Load()) }

// SetCoalesceHook makes f run inside a coalescing Fire, between its first
// look at the pending arming and the second load of the state that
// validates it.
func SetCoalesceHook(f func()) { testHookCoalesce = f }

// SetSuspendHook makes f run inside a Suspend that found a run in flight,
// after it published its version and before it cancels the run's context.
func SetSuspendHook(f func()) { testHookSuspend = f }

// SetLoopEndHook makes f run in a run loop that has just given up the running
// bit, before it drops what a Suspend recorded for an iteration to come.
func SetLoopEndHook(f func()) { testHookLoopEnd = f }

// SetBeginHook makes f run before each iteration publishes its context.
func SetBeginHook(f func()) { testHookBegin = f }

package circulation

// SkipVersions moves t's version on by n, as n calls of FireAfter whose
// timers were all superseded would, in one step. Tests use it to wrap the
// 26-bit version around while a stale callback or a run is held, which real
// calls would need hundreds of millions of steps for.
func SkipVersions(t *Trigger, n uint32) {
	if n == 0 {
		return
	}
	for {
		s := t.state.Load()
		next := advance(s)
		next = next&^versionMask | (next+n-1)&versionMask
		if t.state.CompareAndSwap(s, next) {
			t.disarm()
			return
		}
	}
}

// Version reports t's current version.
func Version(t *Trigger) uint32 { return version(t.state.Load()) }

// VersionSpace is the number of versions: a version comes back to where it
// was after that many calls.
const VersionSpace = versionMask + 1

// SetCoalesceHook makes f run inside a coalescing Fire, between its first
// look at the pending arming and the second load of the state that
// validates it.
func SetCoalesceHook(f func()) { testHookCoalesce = f }

// SetSuspendHook makes f run inside a Suspend that found a run in flight,
// after it published its version and before it cancels the run's context.
func SetSuspendHook(f func()) { testHookSuspend = f }

// SetLoopEndHook makes f run in a run loop that has just given up the running
// bit.
func SetLoopEndHook(f func()) { testHookLoopEnd = f }

// SetBeginHook makes f run before each iteration publishes its context.
func SetBeginHook(f func()) { testHookBegin = f }

// SetKeepHook makes f run inside FireWithin after it found no pending
// arming due sooner to keep, before it publishes its own.
func SetKeepHook(f func()) { testHookKeep = f }

// SetFlushHook makes f run in Shutdown before the compare-and-swap that
// closes the Trigger.
func SetFlushHook(f func()) { testHookFlush = f }

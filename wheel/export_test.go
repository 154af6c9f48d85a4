package wheel

// Scans returns how many times w's goroutine has looked at its shards: once
// per wake-up.
func Scans(w *Wheel) uint64 { return w.scans.Load() }

// Submitted returns how many callbacks w's goroutine has handed to its
// runners.
func Submitted(w *Wheel) uint64 {
	w.run.mu.Lock()
	defer w.run.mu.Unlock()
	return w.run.submitted
}

// SetDispatchHook makes every wheel's goroutine call f after it has
// collected due callbacks and before it dispatches them.
func SetDispatchHook(f func()) { testHookDispatch = f }

package schedule

// SetReturnedHook makes f run after each run's Func has returned, before
// its outcome is recorded.
func SetReturnedHook(f func()) { testHookReturned = f }

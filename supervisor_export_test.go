package circulation

// SetRoundHook makes f run at the start of each round of every Supervisor,
// before its attempt begins. Tests that set it must not run in parallel.
func SetRoundHook(f func()) { testHookRound = f }

// SetEndHook makes f run as each attempt of every Supervisor ends, after
// the task returned and before the attempt is accounted for. Tests that set
// it must not run in parallel.
func SetEndHook(f func()) { testHookEnd = f }

// SetStopHook makes f run inside every Supervisor's Stop, after its
// Suspend and before it stops the main Trigger. Tests that set it must not
// run in parallel.
func SetStopHook(f func()) { testHookStop = f }

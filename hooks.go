package circulation

// Test hooks, set only by tests (export_test.go), to stop a goroutine at a
// point where another call must come in for a test to see an interleaving
// that is otherwise rare. Each is a nil check where it is not set.
var (
	// testHookCoalesce runs in coalesce between the first look at the
	// pending shot and the second load of the state that validates it.
	testHookCoalesce func()
	// testHookSuspend runs in Suspend after it found a run in flight and
	// before it cancels that run's context.
	testHookSuspend func()
	// testHookLoopEnd runs in loop after it gave up the running bit.
	testHookLoopEnd func()
	// testHookBegin runs in begin before the iteration publishes its
	// context.
	testHookBegin func()
	// testHookKeep runs in fireWithin after keep found no arming to keep
	// and before the compare-and-swap that supersedes the pending one.
	testHookKeep func()
	// testHookFlush runs in Shutdown's flush before the compare-and-swap
	// that closes the Trigger.
	testHookFlush func()
	// testHookDelay runs in delay once it has re-armed the timer of the
	// shot it holds busy, before it hands the shot back.
	testHookDelay func(sh *shot)
)

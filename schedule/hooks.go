package schedule

// Test hooks, set only by tests (export_test.go). Each is a nil or zero
// check where it is not set.
var (
	// testHookReturned runs in a run's goroutine after its Func has
	// returned and before its outcome is recorded: a test calls Stop
	// there.
	testHookReturned func()

	// testHookBegin runs in the callback of a renewal's first timer
	// before it takes the renewal's lock: a test ends the run there.
	testHookBegin func()

	// testMutant breaks the clock's protocol, or a promise across
	// replicas, on purpose, so that its tests are seen to fail. It is
	// mutantNone in production.
	testMutant uint8
)

const (
	mutantNone         uint8 = iota
	mutantNoGeneration       // wake runs whatever arming its callback belongs to
	mutantArmOverBusy        // a timer whose Stop reports false is replaced, not left to its callback
	mutantLocalOverlap       // a claim asks nothing of the job's runs on other nodes: the overlap policy per process
	mutantNoRelease          // Stop and Shutdown record the runs they cut short Canceled, not Released
	mutantDeferNoArm         // a wake that defers a slot to the end of its hand-off arms no timer
)

package cron

// Test hooks, set only by tests (export_test.go), to stop a goroutine at a
// point where another call must come in for a test to see an interleaving
// that is otherwise rare. Each is a nil check where it is not set.
var (
	// testHookHold runs in hold, with the task's name: with "start"
	// before it looks at the entry, and with "pause" between its look and
	// the Pause of the job.
	testHookHold func(where, name string)

	// testHookSort runs in sortedNames, between its read of the names and
	// its keeping of them sorted.
	testHookSort func()
)

package admin

// Test hooks, set only by tests (export_test.go). Each is a nil check
// where it is not set.
var (
	// testHookRead runs at the start of each reading of a snapshot.
	testHookRead func()

	// testHookCensus runs at the start of each reading of a census.
	testHookCensus func()
)

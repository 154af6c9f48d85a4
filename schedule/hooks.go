package schedule

// testHookReturned, set only by tests (export_test.go), runs in a run's
// goroutine after its Func has returned and before its outcome is
// recorded: a test calls Stop there.
var testHookReturned func()

package circulation

// testHookRound runs at the start of each round of a Supervisor, on the main
// Trigger's goroutine, before the attempt begins. It is set only by tests
// (supervisor_export_test.go), to hold a round that the main Trigger has
// started while a Fire, FireAfter or Suspend comes in; it is a nil check
// where it is not set.
var testHookRound func()

// testHookEnd runs in end after the task has returned and its context has
// been cancelled, before the attempt is accounted for: a Fire, FireAfter or
// Suspend made there comes after the return and before the accounting.
var testHookEnd func()

// testHookStop runs in Stop after it has suspended the Supervisor and
// before it stops the main Trigger: a Fire made there is concurrent with
// Stop.
var testHookStop func()

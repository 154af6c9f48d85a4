package schedule

// testMutant, set only by tests (export_test.go), breaks the clock's
// protocol on purpose, so that its explorer is seen to fail. It is
// mutantNone in production.
var testMutant uint8

const (
	mutantNone         uint8 = iota
	mutantNoGeneration       // wake runs whatever arming its callback belongs to
	mutantArmOverBusy        // a timer whose Stop reports false is replaced, not left to its callback
)

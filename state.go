package circulation

// The state of a Trigger is one uint32, read and written only with atomic
// loads and compare-and-swap:
//
//	 31         30        29                                        0
//	+----------+---------+-------------------------------------------+
//	| reserved | running |                  version                  |
//	+----------+---------+-------------------------------------------+
//
// The functions below are the only transitions. Each is pure: it takes the
// state a goroutine observed and returns the state it wants to publish, and
// the Trigger publishes it with one CompareAndSwap, retrying from a fresh
// load if another goroutine published first. Keeping them free of side
// effects lets state_test.go check them against a reference model and
// explore_test.go explore their interleavings exhaustively.
const (
	// versionMask selects the version: the identity of the latest arming.
	// Every Fire, FireAfter and Suspend advances it, and so does a run that
	// reschedules itself; a timer callback may start f only while its
	// version is still the latest. It counts modulo 1<<30.
	versionMask uint32 = 1<<30 - 1

	// runningBit is set while an iteration of f is in flight. Only enter
	// sets it and only finish and abort clear it, all on the goroutine that
	// runs f, so at most one goroutine is ever inside f.
	runningBit uint32 = 1 << 30

	// reservedBit says that one more iteration is owed when the current one
	// ends. It is set only while runningBit is set, by reserve or by enter,
	// and cleared by advance, finish and abort.
	reservedBit uint32 = 1 << 31
)

func version(s uint32) uint32 { return s & versionMask }
func running(s uint32) bool   { return s&runningBit != 0 }
func reserved(s uint32) bool  { return s&reservedBit != 0 }

// advance supersedes every earlier arming: it moves the version on by one,
// wrapping at 1<<30, and drops a reservation. The running bit is kept: a run
// in flight goes on, but its result will be ignored (see finish).
// Used by FireAfter, by Fire on an idle Trigger and by Suspend.
func advance(s uint32) uint32 {
	return s&runningBit | (s+1)&versionMask
}

// reserve is Fire while a run is in flight: it supersedes every earlier
// arming like advance and reserves the next iteration, so that the running
// goroutine starts it as soon as f returns. No timer is needed.
// It requires running(s).
func reserve(s uint32) uint32 {
	return advance(s) | reservedBit
}

// entry is what a timer callback does after enter.
type entry uint8

const (
	entryStale    entry = iota // the callback's version is not the latest: do nothing
	entryDeferred              // a run is in flight: it will run once more (reservation set)
	entryRun                   // the callback owns the running bit: run f now
)

// enter is the first step of a timer callback armed with version v. A stale
// callback changes nothing. A current one either takes the running bit or,
// if a run is in flight, leaves a reservation for it; in both cases one
// iteration of f follows, never two at once.
func enter(s, v uint32) (uint32, entry) {
	switch {
	case version(s) != v:
		return s, entryStale
	case running(s):
		return s | reservedBit, entryDeferred
	default:
		return s | runningBit, entryRun
	}
}

// exit is what the running goroutine does after finish or abort.
type exit uint8

const (
	exitIdle  exit = iota // running bit cleared: nothing more to do
	exitAgain             // reservation taken: run f again now with the state's version
	exitArm               // running bit cleared and version advanced: arm a timer with it
)

// finish is the last step of an iteration that ran with version v and whose
// f returned ok (it asked to run again). A reservation wins over everything:
// the goroutine keeps the running bit and runs again with the version the
// reservation was made for. Otherwise it clears the running bit, and if
// nothing superseded the run while it was in flight (the version is still v)
// and f asked for more, it advances the version for the timer it will arm.
// The result of a superseded run is ignored.
func finish(s, v uint32, ok bool) (uint32, exit) {
	switch {
	case reserved(s):
		return s &^ reservedBit, exitAgain
	case ok && version(s) == v:
		return advance(s) &^ runningBit, exitArm
	default:
		return s &^ runningBit, exitIdle
	}
}

// abort replaces finish when f panics or calls runtime.Goexit and the
// running goroutine cannot loop again. It clears the running bit so that
// the Trigger is never wedged; a reservation turns into a timer armed with
// no delay under a new version, so that a fire made during the failed run
// is not lost.
func abort(s uint32) (uint32, exit) {
	if reserved(s) {
		return advance(s) &^ runningBit, exitArm
	}
	return s &^ runningBit, exitIdle
}

// newer reports whether version a was armed after version b, comparing them
// as serial numbers modulo 1<<30 (RFC 1982): a is newer if it is less than
// half the version space ahead of b. Versions in use at one time are never
// that far apart, because every advance also replaces the Trigger's pending
// timer.
func newer(a, b uint32) bool {
	d := (a - b) & versionMask
	return d != 0 && d < 1<<29
}

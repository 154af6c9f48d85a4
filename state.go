package circulation

// The state of a Trigger is one uint32, read and written only with atomic
// loads and compare-and-swap:
//
//	 31         30        29         28           27                      0
//	+----------+---------+----------+------------+-------------------------+
//	| reserved | running | canceled | superseded |         version         |
//	+----------+---------+----------+------------+-------------------------+
//
// The functions below are the only transitions. Each is pure: it takes the
// state a goroutine observed and returns the state it wants to publish, and
// the Trigger publishes it with one CompareAndSwap, retrying from a fresh
// load if another goroutine published first. Keeping them free of side
// effects lets state_test.go check them against a reference model and
// explore_test.go explore their interleavings exhaustively.
//
// Whether the iteration in flight was superseded, and whether a Suspend
// cancelled it, are bits of their own, not comparisons of versions: a run
// may outlive any number of calls, and a version that has gone all the way
// round the version space would compare equal to the one it began with.
const (
	// versionMask selects the version: the identity of the latest arming.
	// Every Fire, FireAfter and Suspend advances it, and so does a run that
	// reschedules itself; a timer callback may start f only while its
	// version is still the latest. It counts modulo 1<<28.
	versionMask uint32 = 1<<28 - 1

	// supersededBit says that a Fire, FireAfter or Suspend was published
	// since the iteration in flight began: its answer will be ignored. It
	// is set only while runningBit is set, by advance, and cleared when an
	// iteration begins and when the running bit is cleared.
	supersededBit uint32 = 1 << 28

	// canceledBit says that a Suspend was published since the iteration in
	// flight began: its context is cancelled (see Trigger.cancelRun). It is
	// set only with supersededBit, by suspend, and cleared with it.
	canceledBit uint32 = 1 << 29

	// runningBit is set while an iteration of f is in flight. Only enter
	// sets it and only finish and abort clear it, all on the goroutine that
	// runs f, so at most one goroutine is ever inside f.
	runningBit uint32 = 1 << 30

	// reservedBit says that one more iteration is owed when the current one
	// ends. It is set only while runningBit is set, by reserve or by enter,
	// and cleared by advance, finish and abort.
	reservedBit uint32 = 1 << 31

	// runFlags are the bits that describe the iteration in flight; all of
	// them are clear while runningBit is.
	runFlags = reservedBit | runningBit | canceledBit | supersededBit
)

func version(s uint32) uint32  { return s & versionMask }
func running(s uint32) bool    { return s&runningBit != 0 }
func reserved(s uint32) bool   { return s&reservedBit != 0 }
func superseded(s uint32) bool { return s&supersededBit != 0 }
func canceled(s uint32) bool   { return s&canceledBit != 0 }

// advance supersedes every earlier arming: it moves the version on by one,
// wrapping at 1<<28, and drops a reservation. A run in flight goes on, but
// it is marked superseded, so that its answer will be ignored (see finish).
// Used by FireAfter and by Fire on an idle Trigger.
func advance(s uint32) uint32 {
	return s&(runningBit|canceledBit) | (s&runningBit)>>2 | (s+1)&versionMask
}

// suspend is advance for Suspend: a run in flight is also marked cancelled.
func suspend(s uint32) uint32 {
	return advance(s) | (s&runningBit)>>1
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
// iteration of f follows, never two at once. The iteration it begins is not
// superseded: the flags are clear while the running bit is.
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

// finish is the last step of an iteration whose f returned ok (it asked to
// run again). A reservation wins over everything: the goroutine keeps the
// running bit and begins a new iteration, not superseded, with the version
// the reservation was made for. Otherwise it clears the running bit, and if
// nothing superseded the run while it was in flight and f asked for more,
// it advances the version for the timer it will arm. The answer of a
// superseded run is ignored, however many calls it outlived.
func finish(s uint32, ok bool) (uint32, exit) {
	switch {
	case reserved(s):
		return s &^ (reservedBit | canceledBit | supersededBit), exitAgain
	case ok && !superseded(s):
		return (s + 1) & versionMask, exitArm
	default:
		return s & versionMask, exitIdle
	}
}

// abort replaces finish when f panics or calls runtime.Goexit and the
// running goroutine cannot loop again. It clears the running bit so that
// the Trigger is never wedged; a reservation turns into a timer armed with
// no delay under a new version, so that a fire made during the failed run
// is not lost.
func abort(s uint32) (uint32, exit) {
	if reserved(s) {
		return (s + 1) & versionMask, exitArm
	}
	return s & versionMask, exitIdle
}

package circulation

// The state of a Trigger is one uint32, read and written only with atomic
// loads and compare-and-swap:
//
//	 31         30        29         28           27       26       25          0
//	+----------+---------+----------+------------+--------+--------+-------------+
//	| reserved | running | canceled | superseded | closed | within |   version   |
//	+----------+---------+----------+------------+--------+--------+-------------+
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
	// Every Fire, FireAfter, FireWithin that arms and Suspend advances it,
	// and so does a run that reschedules itself; a timer callback may start
	// f only while its version is still the latest. It counts modulo 1<<26.
	versionMask uint32 = 1<<26 - 1

	// withinBit says that the latest arming was made by FireWithin (or by
	// an arming that FireWithin superseded and that took its place back
	// because it was due sooner; see Trigger.reassert): a later FireWithin
	// keeps it if it is due sooner, and an arming it superseded before that
	// arming could be compared with it asks again. It is cleared by every
	// other arming, by Suspend, and when the arming starts.
	withinBit uint32 = 1 << 26

	// closedBit says that Close or Shutdown was called: Fire, FireAfter and
	// FireWithin change nothing, and a run's request to run again is
	// dropped. It is never cleared.
	closedBit uint32 = 1 << 27

	// supersededBit says that a Fire, FireAfter, FireWithin or Suspend was
	// published since the iteration in flight began: its answer will be
	// ignored (a FireWithin then lets the answer compete; see finish). It is
	// set only while runningBit is set, by advance, and cleared when an
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
func closed(s uint32) bool     { return s&closedBit != 0 }
func within(s uint32) bool     { return s&withinBit != 0 }

// advance supersedes every earlier arming: it moves the version on by one,
// wrapping at 1<<26, and drops a reservation and the within bit. A run in
// flight goes on, but it is marked superseded, so that its answer will be
// ignored (see finish). Used by FireAfter and by Fire on an idle Trigger.
func advance(s uint32) uint32 {
	return s&(runningBit|canceledBit|closedBit) | (s&runningBit)>>2 | (s+1)&versionMask
}

// advanceWithin is advance for FireWithin, which arms a timer of its own:
// the new arming is marked as FireWithin's, and a run in flight is not
// superseded by it (see finish), unless an earlier call did.
func advanceWithin(s uint32) uint32 {
	return s&(runningBit|canceledBit|closedBit|supersededBit) | withinBit | (s+1)&versionMask
}

// suspend is advance for Suspend: a run in flight is also marked cancelled.
func suspend(s uint32) uint32 {
	return advance(s) | (s&runningBit)>>1
}

// closeNow is suspend for Close: the Trigger is also closed.
func closeNow(s uint32) uint32 {
	return suspend(s) | closedBit
}

// shutdown is the transition of Shutdown. It closes the Trigger and lets
// what was already arranged run once, at once: hurry says that the caller
// found the current version's arming pending and not yet started. On an
// idle Trigger that arming is superseded, and the caller arms a run with
// no delay for the new version instead. While a run is in flight, a
// reservation takes its place, and a reservation already made stays. The
// run in flight is not cancelled, but its answer is ignored.
func shutdown(s uint32, hurry bool) uint32 {
	switch {
	case hurry && running(s):
		return reserve(s) | closedBit
	case hurry:
		return advance(s) | closedBit
	default:
		return s | closedBit | (s&runningBit)>>2
	}
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
// iteration of f follows, never two at once, and the arming is no longer
// pending (the within bit is cleared). The iteration it begins is not
// superseded: the flags are clear while the running bit is. A closed
// Trigger runs the arming Shutdown left current.
func enter(s, v uint32) (uint32, entry) {
	switch {
	case version(s) != v:
		return s, entryStale
	case running(s):
		// Only an arming made after the run began can be current, so the
		// run is superseded already, unless FireWithin made it: then the
		// reservation, sooner than any answer, supersedes the run.
		return s&^withinBit | reservedBit | supersededBit, entryDeferred
	default:
		return s&^withinBit | runningBit, entryRun
	}
}

// exit is what the running goroutine does after finish or abort.
type exit uint8

const (
	exitIdle    exit = iota // running bit cleared: nothing more to do
	exitAgain               // reservation taken: run f again now with the state's version
	exitArm                 // running bit cleared and version advanced: arm a timer with it
	exitCompete             // running bit cleared; a FireWithin's arming is pending: keep the sooner of it and the answer (see Trigger.reassert)
)

// finish is the last step of an iteration whose f returned ok (it asked to
// run again). A reservation wins over everything: the goroutine keeps the
// running bit and begins a new iteration, not superseded, with the version
// the reservation was made for. Otherwise it clears the running bit, and if
// nothing superseded the run while it was in flight and f asked for more,
// it advances the version for the timer it will arm. The answer of a
// superseded run is ignored, however many calls it outlived, and so is the
// answer of any run on a closed Trigger. A FireWithin does not supersede the
// run in flight: if every call since the run began was a FireWithin, the
// answer competes with their arming, and the sooner one is kept.
func finish(s uint32, ok bool) (uint32, exit) {
	switch {
	case reserved(s):
		return s &^ (reservedBit | canceledBit | supersededBit), exitAgain
	case ok && !superseded(s) && !closed(s) && within(s):
		return s & (versionMask | withinBit), exitCompete
	case ok && !superseded(s) && !closed(s):
		return (s + 1) & versionMask, exitArm
	default:
		return s & (versionMask | closedBit | withinBit), exitIdle
	}
}

// abort replaces finish when f panics or calls runtime.Goexit and the
// running goroutine cannot loop again. It clears the running bit so that
// the Trigger is never wedged; a reservation turns into a timer armed with
// no delay under a new version, so that a fire made during the failed run
// is not lost.
func abort(s uint32) (uint32, exit) {
	if reserved(s) {
		return s&closedBit | (s+1)&versionMask, exitArm
	}
	return s & (versionMask | closedBit | withinBit), exitIdle
}

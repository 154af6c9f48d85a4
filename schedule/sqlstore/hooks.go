package sqlstore

// testMutant breaks a promise across replicas on purpose, so that its
// tests are seen to fail; tests set it (export_test.go), in their helper
// processes too. It is mutantNone in production.
var testMutant uint8

const (
	mutantNone         uint8 = iota
	mutantLocalOverlap       // ClaimRun ignores its Concurrency: each replica's overlap policy is its own
	mutantNoRelease          // Release records the run Canceled: no replica takes it over
	mutantNoClaimLock        // claims under a limit count in their statement's snapshot: no lanes, no locks of {t}_claim_counted when a Store makes it
	mutantNoNotify           // writes of definitions notify no listener: other Stores' followers see them at their polls
	mutantNoCatchUp          // a listener that (re)connects does not read the Version: a change made while it was down waits for the poll
)

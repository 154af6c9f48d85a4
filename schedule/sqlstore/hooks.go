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
)

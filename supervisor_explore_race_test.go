//go:build race

package circulation

// svRace reports whether the tests run under the race detector, which slows
// the Supervisor's explorer tenfold and has nothing to find in it: it runs
// on one goroutine.
const svRace = true

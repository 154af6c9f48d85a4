//go:build !race

package circulation

// svRace reports whether the tests run under the race detector.
const svRace = false

//go:build race

package circulation

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true

//go:build race

package cron_test

// race is set under the race detector, which adds to every allocation.
const race = true

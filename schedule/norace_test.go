//go:build !race

package schedule_test

const race = false

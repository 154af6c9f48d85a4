//go:build !race

package cron_test

const race = false

//go:build !race

package sqlstore_test

const race = false

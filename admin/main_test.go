package admin_test

import (
	"testing"
	_ "time/tzdata" // the zones of the tests, wherever the host has none

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

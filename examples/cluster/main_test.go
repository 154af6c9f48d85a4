package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if node := os.Getenv(envNode); node != "" {
		// The test binary is the replica program too.
		if err := replica(node, os.Getenv(envDSN)); err != nil {
			fmt.Fprintf(os.Stderr, "replica %s: %v\n", node, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// TestRun runs the demonstration on SQLite: no two runs were in flight at
// once on the three replicas, every slot has one record, and the slots of
// the replica restarted and of the one killed were taken over and run to
// their end. (How long it takes is a busy machine's to say: the program
// bounds its own wait.)
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out, ""); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"is restarted mid-run", "hands its run over", "after the stop",
		"is killed (SIGKILL) mid-run", "once its lease expired", "No two runs in flight at once",
		"handed over: Succeeded", "killed: Succeeded", "attempt 2, reason Recovered"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	t.Log("\n" + out.String())
}

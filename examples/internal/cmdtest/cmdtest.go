// Package cmdtest lets the test of an example program run the program's
// main function as a child process, to check what it prints on bad input
// and with which exit code, without compiling it again.
//
// The child is the test binary itself, started with an environment
// variable that makes TestMain call main instead of running the tests:
//
//	func TestMain(m *testing.M) {
//		cmdtest.RunMainIfChild(main)
//		goleak.VerifyTestMain(m)
//	}
package cmdtest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const childEnv = "CIRCULATION_EXAMPLE_CHILD"

// RunMainIfChild calls main and exits with status 0 if this process was
// started by Run; otherwise it returns at once. Call it first in TestMain,
// before the test flags are parsed: the child's arguments are the
// program's, not the test binary's.
func RunMainIfChild(main func()) {
	if os.Getenv(childEnv) != "1" {
		return
	}
	main()
	os.Exit(0)
}

// Run runs the program with args in a child process and returns what it
// wrote to stdout and stderr and its exit code. The child is killed if it
// has not finished within a minute.
func Run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	// Under -race, a child that exits with status 0 would first sleep for
	// a second, waiting for reports from other goroutines: it has none.
	race := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), childEnv+"=1", "GORACE="+race)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("running %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// BadInput maps command lines to the one line each must print on stderr.
type BadInput map[string]string

// Check runs the program with each command line in b (split at spaces)
// and fails t unless the program prints exactly the expected line on
// stderr, nothing on stdout, and exits with status 2.
func (b BadInput) Check(t *testing.T) {
	t.Helper()
	for line, want := range b {
		stdout, stderr, code := Run(t, strings.Fields(line)...)
		if code != 2 || stderr != want+"\n" || stdout != "" {
			t.Errorf("%s\n got exit %d, stderr %q, stdout %q\nwant exit 2, stderr %q, no stdout", line, code, stderr, stdout, want+"\n")
		}
	}
}

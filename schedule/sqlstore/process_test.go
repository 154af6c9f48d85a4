package sqlstore_test

import (
	"bufio"
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// The test binary doubles as the replica program: run with helperEnv set
// to a role, TestMain runs helperMain instead of the tests. The settings
// travel in environment variables named below.
const (
	helperEnv = "SQLSTORE_HELPER" // the role
	envDriver = "SQLSTORE_HELPER_DRIVER"
	envDSN    = "SQLSTORE_HELPER_DSN"
	envTable  = "SQLSTORE_HELPER_TABLE"
	envNode   = "SQLSTORE_HELPER_NODE"
	envArg    = "SQLSTORE_HELPER_ARG"
	envMutant = "SQLSTORE_HELPER_MUTANT" // a name of sqlstore.Mutants: the helper runs a broken store
)

func helperMain(role string) int {
	if m := os.Getenv(envMutant); m != "" {
		sqlstore.SetMutant(sqlstore.Mutants[m])
	}
	var err error
	switch role {
	case "claimer":
		err = claimer()
	case "replica":
		err = replica()
	case "herd":
		err = herdReplica()
	case "follower":
		err = follower()
	case "deploy":
		err = deploy()
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v\n", role, os.Getenv(envNode), err)
		return 1
	}
	return 0
}

// helperStore opens the Store the environment describes.
func helperStore(opts ...sqlstore.Option) (*sqlstore.Store, *sql.DB, error) {
	driver := os.Getenv(envDriver)
	db, err := sql.Open(driver, os.Getenv(envDSN))
	if err != nil {
		return nil, nil, err
	}
	d := sqlstore.SQLite
	if driver == "pgx" {
		d = sqlstore.PostgreSQL
	}
	opts = append([]sqlstore.Option{sqlstore.WithTable(os.Getenv(envTable))}, opts...)
	if node := os.Getenv(envNode); node != "" {
		opts = append(opts, sqlstore.WithNode(node))
	}
	s, err := sqlstore.New(ctx, db, d, opts...)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return s, db, nil
}

// claimer claims slots 0 to envArg-1 of job "c" and prints the ones it won.
func claimer() error {
	n, err := strconv.Atoi(os.Getenv(envArg))
	if err != nil {
		return err
	}
	s, db, err := helperStore()
	if err != nil {
		return err
	}
	defer db.Close()
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for i := range n {
		switch err := s.Claim(ctx, running("c", i, os.Getenv(envNode))); {
		case err == nil:
			fmt.Fprintln(w, i)
		case !errors.Is(err, schedule.ErrClaimed):
			return err
		}
	}
	return nil
}

// helper is a replica process of this test binary.
type helper struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
}

func startHelper(t testing.TB, role string, b backend, dsn, table, node, arg string) *helper {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: exec.Command(exe)}
	h.cmd.Env = append(os.Environ(),
		helperEnv+"="+role, envDriver+"="+b.driver, envDSN+"="+dsn, envTable+"="+table,
		envNode+"="+node, envArg+"="+arg)
	h.cmd.Stdout, h.cmd.Stderr = &h.stdout, &h.stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
	})
	return h
}

func (h *helper) wait(t testing.TB) {
	t.Helper()
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("%v: %v\n%s", h.cmd.Env[len(h.cmd.Env)-2], err, h.stderr.Bytes())
	}
}

// TestClaimProcesses claims the same slots from three processes on one
// database, SQLite file or PostgreSQL: each slot is won by exactly one.
func TestClaimProcesses(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		newStore(t, b, dsn) // creates the schema once: New in three processes at once is TestMigrateRace's
		const n = 300
		var hs []*helper
		for i := range 3 {
			hs = append(hs, startHelper(t, "claimer", b, dsn, tableFor(t), fmt.Sprint("p", i), fmt.Sprint(n)))
		}
		wins := make([]int, n)
		for _, h := range hs {
			h.wait(t)
			for _, f := range strings.Fields(h.stdout.String()) {
				i, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				wins[i]++
			}
		}
		for i, k := range wins {
			if k != 1 {
				t.Errorf("slot %d won %d times", i, k)
			}
		}
	})
}

// TestMigrateProcesses starts three processes on a database without the
// schema: each creates or finds it (New) while the others do, then they
// claim the same slots, each won once.
func TestMigrateProcesses(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		const n = 50
		var hs []*helper
		for i := range 3 {
			hs = append(hs, startHelper(t, "claimer", b, dsn, tableFor(t), fmt.Sprint("p", i), fmt.Sprint(n)))
		}
		wins := 0
		for _, h := range hs {
			h.wait(t)
			wins += len(strings.Fields(h.stdout.String()))
		}
		if wins != n {
			t.Errorf("%d slots won, want %d", wins, n)
		}
		var v int
		if err := openDB(t, b.driver, dsn).QueryRow("SELECT version FROM " + tableFor(t) + "_schema").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != sqlstore.SchemaVersion() {
			t.Errorf("schema version %d, want %d", v, sqlstore.SchemaVersion())
		}
	})
}

// Circulation manages the task definitions and reads the run records that
// circulation's schedule/sqlstore keeps in PostgreSQL or SQLite, from a
// shell: what an operator or a deploy script does beside the admin page.
//
// Usage:
//
//	circulation [-dsn URL | -db FILE] [-table NAME] [-json] COMMAND [ARGS]
//
// The commands:
//
//	migrate [-print [-from N]]      create or migrate the tables; -print prints the SQL instead
//	tasks list                      every task definition, with its last run
//	tasks show NAME                 a definition, its spec in words, its last runs
//	tasks create NAME FLAGS         a new definition (flags below), or -f FILE, a JSON file
//	tasks edit NAME FLAGS           change the fields given; -version N refuses a stale edit
//	tasks pause NAME [-note TEXT] [-for DURATION | -until TIME]
//	tasks resume NAME
//	tasks run NAME -admin URL       ask a service's admin page to run the task now
//	tasks delete NAME [-version N]
//	tasks import FILE [-sync]       create or replace every task of FILE (- for stdin), all or none
//	tasks export [-o FILE]          every definition, as a JSON file that import reads
//	describe SPEC                   a cron spec in words
//	next SPEC [-n 10] [-zone Z] [-from TIME]   a spec's next times
//	history TASK [-n 20] [-zone Z]  a task's (or job's) latest runs, newest first
//	nodes                           the nodes that ran jobs on the tables in the last day
//
// -dsn is a PostgreSQL URL (postgres://user@host/db), -db a SQLite file;
// each defaults to $CIRCULATION_DSN or $CIRCULATION_DB. -table is the
// Store's table (sqlstore.WithTable), schedule_runs by default. The flags
// may come before the command or after it, among its arguments. Output is
// a table for people, or JSON with -json, for scripts. Commands other
// than migrate refuse a database whose tables are missing or at an older
// schema version, rather than change it.
//
// The flags of a definition, for create and edit, are the fields of a
// cron.Task, named as in its JSON: -handler, -business-id, -spec, -zone,
// -start and -end (RFC 3339 times), -permanent, -once, -max-runs,
// -calendars (names, comma-separated), -paused, -pause-note,
// -paused-until, -pause-on-failures, -overlap, -misfire, -timeout,
// -retry-attempts, -retry-backoff, -catch-up-window, -jitter (durations
// such as 90s). A JSON file of definitions is an array of cron.Task
// objects, as cron.DecodeTasks reads it; export writes one.
//
// Exit status: 0 when the command did what it was asked, 1 when it could
// not (a definition refused, naming its field; a task not found; the
// database unreachable), 2 for a usage error (an unknown command or flag,
// a missing argument). Errors go to standard error, as "circulation: ...".
//
// docs/cli.md has examples of each command.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// The exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command of args and returns its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, common: common{
		dsn: os.Getenv("CIRCULATION_DSN"), db: os.Getenv("CIRCULATION_DB"), table: "schedule_runs", user: os.Getenv("CIRCULATION_USER")}}
	err := c.dispatch(args)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "circulation: %v\n", ue.err)
		if ue.usage != "" {
			fmt.Fprintf(stderr, "usage: %s\n", ue.usage)
		}
		return exitUsage
	default:
		fmt.Fprintf(stderr, "circulation: %v\n", err)
		return exitFailed
	}
}

// A usageError is a command line that does not read: exit status 2.
type usageError struct {
	err   error
	usage string // the command's usage line, or ""
}

func (e *usageError) Error() string { return e.err.Error() }

func usagef(usage, format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...), usage: usage}
}

// errHelp is returned once -h has printed a command's usage.
var errHelp = errors.New("help printed")

// A cli is one run of the command: its streams and its common flags.
type cli struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	common
}

const topUsage = `circulation [-dsn URL | -db FILE] [-table NAME] [-json] COMMAND [ARGS]

commands:
  migrate [-print [-from N]]
  tasks list | show NAME | create NAME | edit NAME | pause NAME | resume NAME
        | run NAME -admin URL | delete NAME | import FILE [-sync] | export [-o FILE]
  describe SPEC
  next SPEC [-n 10] [-zone Z] [-from TIME]
  history TASK [-n 20] [-zone Z]
  nodes
"circulation COMMAND -h" gives a command's flags.`

// dispatch parses the common flags before the command, and runs it.
func (c *cli) dispatch(args []string) error {
	fs := c.flags("")
	rest, err := parseFlags(fs, args, true)
	if err != nil {
		return c.flagError(err, topUsage)
	}
	if len(rest) == 0 {
		return usagef(topUsage, "no command")
	}
	cmd, rest := rest[0], rest[1:]
	switch cmd {
	case "migrate":
		return c.migrate(rest)
	case "tasks":
		return c.tasks(rest)
	case "describe":
		return c.describe(rest)
	case "next":
		return c.next(rest)
	case "history":
		return c.history(rest)
	case "nodes":
		return c.nodes(rest)
	case "help":
		fmt.Fprintln(c.stdout, "usage: "+topUsage)
		return nil
	}
	return usagef(topUsage, "unknown command %q", cmd)
}

// tasks runs a tasks subcommand.
func (c *cli) tasks(args []string) error {
	const usage = "circulation tasks list | show | create | edit | pause | resume | run | delete | import | export"
	if len(args) == 0 {
		return usagef(usage, "tasks: no subcommand")
	}
	sub := map[string]func([]string) error{
		"list": c.tasksList, "show": c.tasksShow, "create": c.tasksCreate, "edit": c.tasksEdit,
		"pause": c.tasksPause, "resume": c.tasksResume, "run": c.tasksRun, "delete": c.tasksDelete,
		"import": c.tasksImport, "export": c.tasksExport,
	}[args[0]]
	if sub == nil {
		return usagef(usage, "tasks: unknown subcommand %q", args[0])
	}
	return sub(args[1:])
}

// Command usertasks tells the story of a service whose users define their
// own scheduled tasks, as it happens.
//
// The definitions live in a SQLite file, in the definitions table of
// schedule/sqlstore (Store.Definitions). The service registers one Handler
// in code, "report", which every task names: the task's business id says
// which shop to report on. A cron.Table follows the definitions table
// (Table.Follow): it runs every task, and applies each change within its
// poll interval, whoever made it. service.go holds what a service copies;
// story.go tells the story.
//
// The story, with times in seconds from its 0s, the whole second before
// the program started:
//
//  1. An admin tool, with a connection of its own as another process
//     would have, saves five definitions read from tasks.json with
//     cron.DecodeTasks. A definition with a typo in a field name, and one
//     whose spec can never run (February 30), are refused with an error
//     naming the field.
//  2. The service starts and runs them. report-shop-7 fails its first
//     attempt, and its retry policy runs it again within the slot;
//     report-shop-9 outlasts its timeout. The inventory (Table.Tasks)
//     shows each task's next run, last outcome, runs in flight, and spec
//     in words (cron.Describe).
//  3. Users change the definitions while the tasks run: the admin adds a
//     task that runs once, changes a spec and deletes a task, which the
//     Table sees at its next look; a user pauses report-shop-2, runs
//     report-weekly now (RunNow) and resumes report-shop-2 through the
//     service, which acts at once. Each change is shown applied, and how
//     long that took.
//  4. The inventory again, and the run records as a person reads them in
//     sqlite3, from the view schedule_runs_readable.
//  5. The service stops. While it is down, the admin adds a task to run
//     once a second later. When the service starts again, over a second
//     after that time, the task runs at once, caught up, as does the latest
//     slot each task missed.
//
// It ends within 10 seconds:
//
//	cd examples/usertasks && go run .
//	cd examples/usertasks && go run . -db /tmp/tasks.db -poll 500ms
//	sqlite3 -header -column /tmp/tasks.db 'SELECT * FROM schedule_runs_readable'
//
// It is a module of its own, so that the library needs neither SQLite nor
// the cron parser.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/circulation-go/circulation/cron"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "usertasks: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err = run(ctx, os.Stdout, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "usertasks: %v\n", err)
		os.Exit(1)
	}
}

// seedJSON holds the story's definitions, as users would have typed them.
//
//go:embed tasks.json
var seedJSON []byte

type config struct {
	db    string        // the SQLite file; empty for one in a temporary folder
	poll  time.Duration // how often the Table looks at the definitions' version
	tasks []cron.Task   // definitions to seed beside the story's (-tasks)
}

// The story's changes come a poll interval or so apart: a longer one
// would jumble them.
const minPoll, maxPoll = 50 * time.Millisecond, 500 * time.Millisecond

// parseFlags parses the command line. It returns flag.ErrHelp, after
// printing the usage to stderr, if asked for help; any other error is for
// main to print in one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{poll: 250 * time.Millisecond}
	var tasks string
	fs := flag.NewFlagSet("usertasks", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.db, "db", "", "the SQLite `file` to create; empty for one in a temporary folder, removed at the end")
	fs.DurationVar(&cfg.poll, "poll", cfg.poll,
		fmt.Sprintf("how often the Table looks for changed definitions, `d` (%v to %v)", minPoll, maxPoll))
	fs.StringVar(&tasks, "tasks", "", "a JSON `file` of more definitions to seed, beside the story's (see tasks.json)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.poll < minPoll || cfg.poll > maxPoll {
		return cfg, fmt.Errorf("-poll must be between %v and %v, got %v", minPoll, maxPoll, cfg.poll)
	}
	if cfg.db != "" {
		// The story starts from an empty database: a task that ran in an
		// earlier story would not run again as told.
		if _, err := os.Stat(cfg.db); err == nil {
			return cfg, fmt.Errorf("-db %s: the file exists; name a new one", cfg.db)
		}
	}
	if tasks != "" {
		b, err := os.ReadFile(tasks)
		if err != nil {
			return cfg, fmt.Errorf("-tasks: %w", err)
		}
		// DecodeTasks refuses a field name it does not know, so that a
		// typo is an error here rather than a field left at its default.
		if cfg.tasks, err = cron.DecodeTasks(bytes.NewReader(b)); err != nil {
			return cfg, fmt.Errorf("-tasks %s: %w", tasks, err)
		}
	}
	return cfg, nil
}

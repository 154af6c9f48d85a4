// Command cluster runs one scheduled job on three replicas, processes of
// itself sharing a store, and shows that the three are one job:
//
//   - its runs last longer than two of its periods, and under the default
//     overlap policy (skip) no two of them are in flight at once on the
//     three replicas: a slot that falls due while one replica runs the job
//     is Skipped by all of them, and recorded so once;
//   - a replica restarted mid-run, as a deploy does, hands its run over: it
//     stops (Stop), and another replica takes the slot over at once and runs
//     it again, Recovered, Attempt 2;
//   - a replica killed with SIGKILL mid-run has its slot taken over once the
//     run's lease has expired, by the database's clock.
//
// The store is a SQLite file in a temporary folder by default, or
// PostgreSQL with -dsn:
//
//	go run .
//	go run . -dsn postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
//
// The program ends in a few seconds, with a summary read from the store.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// The settings of the demonstration; a replica gets them in its
// environment.
const (
	job     = "report"
	every   = 200 * time.Millisecond
	lease   = time.Second
	runTime = 500 * time.Millisecond // longer than two periods: slots fall due while a run is in flight
)

func main() {
	if node := os.Getenv(envNode); node != "" {
		if err := replica(node, os.Getenv(envDSN)); err != nil {
			fmt.Fprintf(os.Stderr, "replica %s: %v\n", node, err)
			os.Exit(1)
		}
		return
	}
	dsn := flag.String("dsn", "", "a PostgreSQL URL (postgres://...); empty for a SQLite file in a temporary folder")
	flag.Parse()
	if err := run(os.Stdout, *dsn); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

// open opens the store at dsn: PostgreSQL for a postgres:// URL, SQLite
// otherwise.
func open(ctx context.Context, dsn string, opts ...sqlstore.Option) (*sqlstore.Store, *sql.DB, error) {
	driver, dialect := "sqlite", sqlstore.SQLite
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		driver, dialect = "pgx", sqlstore.PostgreSQL
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, err
	}
	s, err := sqlstore.New(ctx, db, dialect, opts...)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return s, db, nil
}

const (
	envNode = "CLUSTER_REPLICA" // set in a replica: its name
	envDSN  = "CLUSTER_DSN"
)

// replica runs the job until its standard input closes, then stops it,
// handing a run in flight over. It prints a line for each run that starts
// and returns, with the wall-clock time: "<unixnano> start|end|quit <due>
// <reason> <attempt>".
func replica(node, dsn string) error {
	ctx := context.Background()
	s, db, err := open(ctx, dsn, sqlstore.WithLease(lease), sqlstore.WithTable("cluster_runs"),
		sqlstore.WithHistory(1000, 1000))
	if err != nil {
		return err
	}
	defer db.Close()
	say := func(what string, r schedule.Run) {
		fmt.Printf("%d %s %d %d %d\n", time.Now().UnixNano(), what, r.Due.UnixNano(), r.Reason, r.Attempt)
	}
	j := schedule.NewJob(job, schedule.Every(every), func(ctx context.Context, r schedule.Run) error {
		say("start", r)
		select {
		case <-time.After(runTime):
			say("end", r)
			return nil
		case <-ctx.Done():
			say("quit", r)
			return context.Cause(ctx)
		}
	}, schedule.WithStore(s), schedule.WithNode(node)) // OverlapSkip, the default
	if err := j.Start(ctx); err != nil {
		return err
	}
	fmt.Printf("%d ready 0 0 0\n", time.Now().UnixNano())
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return j.Stop(stop) // a deploy: the run in flight is handed over
}

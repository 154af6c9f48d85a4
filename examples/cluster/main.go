// Command cluster runs one scheduled job on three replicas, processes of
// itself sharing a store: each slot runs once, on one of them. Halfway, one
// replica is killed with SIGKILL in the middle of a run; once the run's
// lease has expired, by the database's clock, another replica takes the
// slot over and runs it again, as Recovered.
//
// The store is a SQLite file in a temporary folder by default, or
// PostgreSQL with -dsn:
//
//	go run .
//	go run . -dsn postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
//
// The program ends within 10 seconds, with a summary read from the store.
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
	runTime = 300 * time.Millisecond // longer than a period: runs overlap, on different replicas
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

// replica runs the job until its standard input closes, and prints a line
// for each run that starts and ends: "start|end <due> <reason>".
func replica(node, dsn string) error {
	ctx := context.Background()
	s, db, err := open(ctx, dsn, sqlstore.WithLease(lease), sqlstore.WithTable("cluster_runs"))
	if err != nil {
		return err
	}
	defer db.Close()
	say := func(what string, r schedule.Run) {
		fmt.Printf("%s %d %d\n", what, r.Due.UnixNano(), r.Reason)
	}
	j := schedule.NewJob(job, schedule.Every(every), func(ctx context.Context, r schedule.Run) error {
		say("start", r)
		select {
		case <-time.After(runTime):
			say("end", r)
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}, schedule.WithStore(s), schedule.WithNode(node), schedule.WithOverlap(schedule.OverlapAllow))
	if err := j.Start(ctx); err != nil {
		return err
	}
	fmt.Println("ready 0 0")
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return j.Stop(stop)
}

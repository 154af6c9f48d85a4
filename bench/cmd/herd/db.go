package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
	"github.com/circulation-go/circulation/wheel"
)

// prepare makes a fresh table for the herd, or River's (prepareRiver),
// and returns a pool on its database.
func prepare(o options) (*sql.DB, error) {
	if o.Lib == "river" {
		return prepareRiver(o)
	}
	if o.Store == "postgres" {
		db, err := sql.Open("pgx", o.DSN)
		if err != nil {
			return nil, err
		}
		if err := sqlstore.Drop(context.Background(), db, sqlstore.PostgreSQL, table); err != nil {
			db.Close()
			return nil, err
		}
		db.Close()
	}
	store, db, err := openStore(o)
	if err != nil {
		return nil, err
	}
	_ = store
	return db, nil
}

// recordedSQL counts the herd's runs recorded Succeeded.
const recordedSQL = "SELECT COUNT(*) FROM " + table + " WHERE status = 1"

// awaitRecorded waits until count, a query of one number, finds every job
// done (recordedSQL, or River's completedSQL), and returns how long after
// the due time that was.
func awaitRecorded(db *sql.DB, o options, due time.Time, count string) (time.Duration, error) {
	time.Sleep(time.Until(due))
	deadline := due.Add(o.Timeout)
	for {
		var n int
		if err := db.QueryRow(count).Scan(&n); err != nil {
			return 0, err
		}
		if n >= o.Jobs {
			return time.Since(due), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d runs recorded %v after the due time", n, o.Jobs, o.Timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// idle holds o.Jobs idle jobs on the store for o.Idle, none of them due,
// and reports the statements the Store sent per second meanwhile, and the
// transactions PostgreSQL counted.
func idle(o options) error {
	store, db, err := openStore(o)
	if err != nil {
		return err
	}
	defer db.Close()
	w := wheel.New()
	defer w.Stop()
	first := time.Now().Add(time.Hour)
	jobs := make([]*schedule.Job, o.Jobs)
	for i := range jobs {
		jobs[i] = schedule.NewJob("idle"+strconv.Itoa(i), schedule.EveryFrom(first, 24*time.Hour),
			func(context.Context, schedule.Run) error { return nil },
			schedule.WithStore(store), schedule.WithScheduler(w))
	}
	begin := time.Now()
	start := func() error { return schedule.StartAll(context.Background(), jobs...) }
	if o.Each {
		start = func() error {
			return each(jobs, func(j *schedule.Job) error { return j.Start(context.Background()) })
		}
	}
	if err := start(); err != nil {
		return err
	}
	setup := time.Since(begin)
	time.Sleep(3 * time.Second) // the starts' looks for expired claims settle
	before, xacts := store.Stats().Statements, commits(db)
	time.Sleep(o.Idle)
	after, xacts2 := store.Stats().Statements, commits(db)
	fmt.Printf("herd: %d idle jobs on %s, none due, for %v (started in %.1f s)\n", o.Jobs, o.Store, o.Idle, setup.Seconds())
	fmt.Printf("statements sent per second: %.2f (the store's count)\n", float64(after-before)/o.Idle.Seconds())
	if xacts >= 0 {
		fmt.Printf("transactions per second:    %.2f (the server's count, this measurement's own reads included)\n", float64(xacts2-xacts-1)/o.Idle.Seconds())
	}
	fmt.Printf("peak RSS, MB: %.0f\n", float64(peakRSS())/1e6)
	return each(jobs, func(j *schedule.Job) error { return j.Stop(context.Background()) })
}

// commits returns the transactions PostgreSQL committed in the current
// database, or -1 on SQLite.
func commits(db *sql.DB) int64 {
	var n int64
	if err := db.QueryRow("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").Scan(&n); err != nil {
		return -1
	}
	return n
}

var _ = sqlstore.SQLite

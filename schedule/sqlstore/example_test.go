package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"

	"github.com/circulation-go/circulation/schedule"
	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// Two nodes claim the same slot of a job on one SQLite file: one wins.
func Example() {
	dir, _ := os.MkdirTemp("", "sqlstore-example-")
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(filepath.Join(dir, "jobs.db")))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	store, err := sqlstore.New(ctx, db, sqlstore.SQLite)
	if err != nil {
		panic(err)
	}

	due := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, node := range []string{"a", "b"} {
		err := store.Claim(ctx, schedule.Record{Job: "report", Due: due, Node: node})
		switch {
		case err == nil:
			fmt.Println(node, "runs the slot")
			err = store.Finish(ctx, schedule.Record{Job: "report", Due: due, Node: node, Status: schedule.Succeeded})
			if err != nil {
				panic(err)
			}
		case errors.Is(err, schedule.ErrClaimed):
			fmt.Println(node, "finds it claimed")
		default:
			panic(err)
		}
	}
	last, err := store.Last(ctx, "report")
	if err != nil {
		panic(err)
	}
	fmt.Println(last.Due.UTC().Format(time.TimeOnly), last.Node, last.Status == schedule.Succeeded, last.Attempt)
	// Output:
	// a runs the slot
	// b finds it claimed
	// 12:00:00 a true 1
}

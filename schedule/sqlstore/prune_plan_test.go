package sqlstore_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// TestPruneReadsEachJob: on PostgreSQL, a batch of prunings reads the
// records of its jobs from the index, not the whole table, even while
// the table has no statistics (a herd's table, just filled): pruning
// costs what the pruned jobs hold, whatever the table holds.
func TestPruneReadsEachJob(t *testing.T) {
	b := backends()[1]
	dsn := b.dsn(t)
	s := newStore(t, b, dsn)
	db := openDB(t, "pgx", dsn)
	tb := tableFor(t)
	for _, q := range []string{
		"ALTER TABLE " + tb + " SET (autovacuum_enabled = off)",
		"INSERT INTO " + tb + " (job, due, reason, status, node, err, attempt) " +
			"SELECT 'j' || (i % 20000), i, 0, 1, 'n', '', 1 FROM generate_series(1, 100000) i",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 100)
	for i := range names {
		names[i] = "j" + strconv.Itoa(i*7)
	}
	water, del, args := sqlstore.PruneStatements(s, names...)
	for name, q := range map[string]string{"watermarks": water, "records": del} {
		rows, err := db.QueryContext(ctx, "EXPLAIN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if strings.Contains(plan.String(), "Seq Scan on "+tb+" ") {
			t.Errorf("the pruning of the %s reads the whole table:\n%s", name, plan.String())
		}
	}
	// Five Succeeded records a job, of which the Store keeps three.
	for _, q := range []string{water, del} {
		res, err := db.ExecContext(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		if q == del {
			if n, _ := res.RowsAffected(); n != 2*int64(len(names)) {
				t.Errorf("pruned %d records of %d jobs; want 2 a job", n, len(names))
			}
		}
	}
}

// BenchmarkPruneBatch measures a batch of prunings of 1,000 jobs on
// PostgreSQL, in a table of a million records that has no statistics
// (100,000 under -short), one record a job, as a herd of jobs due once
// leaves it: each job read, none pruned. One op is one batch, both its
// statements.
func BenchmarkPruneBatch(b *testing.B) {
	be := backends()[1]
	dsn := be.dsn(b)
	s := newStore(b, be, dsn)
	db := openDB(b, "pgx", dsn)
	tb := tableFor(b)
	records := 1_000_000
	if testing.Short() {
		records = 100_000
	}
	for _, q := range []string{
		"ALTER TABLE " + tb + " SET (autovacuum_enabled = off)",
		"INSERT INTO " + tb + " (job, due, reason, status, node, err, attempt) " +
			"SELECT 'j' || i, 1, 0, 1, 'n', '', 1 FROM generate_series(1, " + strconv.Itoa(records) + ") i",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	names := make([]string, 1000)
	for i := range names {
		names[i] = "j" + strconv.Itoa(1+i*997%records)
	}
	water, del, args := sqlstore.PruneStatements(s, names...)
	b.ResetTimer()
	for b.Loop() {
		for _, q := range []string{water, del} {
			if _, err := db.ExecContext(ctx, q, args...); err != nil {
				b.Fatal(err)
			}
		}
	}
}

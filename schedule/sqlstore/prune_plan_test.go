package sqlstore_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/circulation-go/circulation/schedule/sqlstore"
)

// TestPruneReadsEachJob: on PostgreSQL, a batch of prunings reads the
// records of its jobs from the index, not the whole table, even while
// the table has no statistics (a herd's table, just filled): pruning
// costs what the pruned jobs hold, whatever the table holds.
func TestPruneReadsEachJob(t *testing.T) {
	s, db, tb := unanalyzed(t, 100_000, 20_000)
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
		p := plan.String()
		if strings.Contains(p, "Seq Scan on "+tb+" ") || !strings.Contains(p, "(job = x.j)") {
			t.Errorf("the pruning of the %s does not read each job through the key:\n%s", name, p)
		}
		if name == "records" && !strings.Contains(p, "Tid Scan on "+tb) {
			t.Errorf("the pruning of the records does not delete by row address:\n%s", p)
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

// unanalyzed returns a Store on PostgreSQL, a pool and the Store's table,
// which it fills with records Succeeded records of jobs jobs (j0, j1,
// ...), record i of job "j" + i%jobs due at i, and keeps PostgreSQL from
// gathering its statistics.
func unanalyzed(t testing.TB, records, jobs int) (*sqlstore.Store, *sql.DB, string) {
	t.Helper()
	b := backends()[1]
	dsn := b.dsn(t)
	s := newStore(t, b, dsn)
	db := openDB(t, "pgx", dsn)
	table := tableFor(t)
	for _, q := range []string{
		"ALTER TABLE " + table + " SET (autovacuum_enabled = off)",
		"INSERT INTO " + table + " (job, due, reason, status, node, err, attempt) SELECT 'j' || (i % " +
			strconv.Itoa(jobs) + "), i, 0, 1, 'n', '', 1 FROM generate_series(1, " + strconv.Itoa(records) + ") i",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return s, db, table
}

// BenchmarkPruneBatch measures a batch of prunings of 1,000 jobs on
// PostgreSQL, in a table of a million records that has no statistics
// (100,000 under -short), one record a job, as a herd of jobs due once
// leaves it: each job read, none pruned. One op is one batch, both its
// statements.
func BenchmarkPruneBatch(b *testing.B) {
	records := 1_000_000
	if testing.Short() {
		records = 100_000
	}
	s, db, _ := unanalyzed(b, records, records)
	names := make([]string, 1000)
	for i := range names {
		names[i] = "j" + strconv.Itoa(i*997%records)
	}
	water, del, args := sqlstore.PruneStatements(s, names...)
	for b.Loop() {
		for _, q := range []string{water, del} {
			if _, err := db.ExecContext(ctx, q, args...); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestPruneBatchAsOne: on PostgreSQL, a batch of prunings leaves exactly
// the records that pruning each job alone (Store.Prune) leaves, over
// random histories: statuses of every kind, runs in flight among them,
// records both sides of the retention's cutoff, jobs named twice in the
// batch and jobs with no record.
func TestPruneBatchAsOne(t *testing.T) {
	b := backends()[1]
	dsn := b.dsn(t)
	db := openDB(t, "pgx", dsn)
	tb := tableFor(t)
	batch := newStore(t, b, dsn, sqlstore.WithTable(tb+"_batch"), sqlstore.WithHistory(2, 1), sqlstore.WithRetention(time.Hour))
	alone := newStore(t, b, dsn, sqlstore.WithTable(tb+"_alone"), sqlstore.WithHistory(2, 1), sqlstore.WithRetention(time.Hour))
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now().UnixNano()
	read := func(table string) []string {
		rows, err := db.QueryContext(ctx, "SELECT job, due FROM "+table+" ORDER BY job, due")
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var job string
			var due int64
			require.NoError(t, rows.Scan(&job, &due))
			out = append(out, job+"@"+strconv.FormatInt(due, 10))
		}
		require.NoError(t, rows.Err())
		return out
	}
	pruned := 0
	for round := range 30 {
		var names []string
		for _, table := range []string{tb + "_batch", tb + "_alone"} {
			_, err := db.ExecContext(ctx, "DELETE FROM "+table)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, "DELETE FROM "+table+"_jobs")
			require.NoError(t, err)
		}
		var values []string
		for j := range 6 {
			job := fmt.Sprintf("j%d", j)
			names = append(names, job)
			if j%3 == 0 {
				names = append(names, job) // named twice
			}
			for k := range rng.IntN(40) {
				// Slots from two hours ago to now, a minute apart: the
				// older half before the cutoff.
				due := now - int64(2*time.Hour) + int64(k)*int64(time.Minute)*int64(1+rng.IntN(3))
				values = append(values, fmt.Sprintf("('%s', %d, 0, %d, 'n', '', 1)", job, due, rng.IntN(6)))
			}
		}
		if len(values) > 0 {
			for _, table := range []string{tb + "_batch", tb + "_alone"} {
				_, err := db.ExecContext(ctx, "INSERT INTO "+table+" (job, due, reason, status, node, err, attempt) VALUES "+
					strings.Join(values, ", ")+" ON CONFLICT DO NOTHING")
				require.NoError(t, err)
			}
		}
		before := len(read(tb + "_batch"))
		water, del, args := sqlstore.PruneStatements(batch, names...)
		for _, q := range []string{water, del} {
			_, err := db.ExecContext(ctx, q, args...)
			require.NoError(t, err)
		}
		pruned += before - len(read(tb+"_batch"))
		for _, job := range names {
			_, err := alone.Prune(ctx, job)
			require.NoError(t, err)
		}
		require.Equal(t, read(tb+"_alone"), read(tb+"_batch"), "round %d", round)
	}
	t.Logf("%d records pruned", pruned)
	require.Greater(t, pruned, 100, "records pruned in all")
}

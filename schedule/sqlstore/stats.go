package sqlstore

import (
	"context"
	"database/sql"
	"sync/atomic"
)

// maxBatch is the most calls a statement carries.
const maxBatch = 1000

// lanes returns how many statements of batched calls a Store on db keeps
// in flight at most: one on SQLite, which runs one writer at a time; on
// PostgreSQL four, or one fewer than the pool holds, so that the reads of
// Last, History and Reclaim find a connection.
func lanes(db *sql.DB, d Dialect) int {
	if d == SQLite {
		return 1
	}
	n := 4
	if m := db.Stats().MaxOpenConnections; m > 0 {
		n = max(1, min(n, m-1))
	}
	return n
}

// Stats counts what a Store sent to its database since New.
type Stats struct {
	// Statements counts every statement the Store sent, each retry of
	// one that found SQLite busy included: its round trips.
	Statements uint64
	// Claims, Finishes, Renewals and Prunes count the calls carried out
	// in batches (a Prune counts each job pruned), and the Batches fields
	// the statements that carried them.
	Claims, ClaimBatches     uint64
	Finishes, FinishBatches  uint64
	Renewals, RenewalBatches uint64
	Prunes, PruneBatches     uint64
}

// counters are a Store's Stats, counted as it goes.
type counters struct {
	statements atomic.Uint64
	calls      [nOps]atomic.Uint64
	batches    [nOps]atomic.Uint64
}

func (c *counters) add(bt *batch) {
	c.calls[bt.op].Add(uint64(len(bt.reqs)))
	c.batches[bt.op].Add(1)
}

// Stats returns what s sent to its database since New. It is safe to call
// at any time.
func (s *Store) Stats() Stats {
	s.mustBeMade()
	c := &s.stats
	return Stats{
		Statements:     c.statements.Load(),
		Claims:         c.calls[opClaim].Load(),
		ClaimBatches:   c.batches[opClaim].Load(),
		Finishes:       c.calls[opFinish].Load(),
		FinishBatches:  c.batches[opFinish].Load(),
		Renewals:       c.calls[opRenew].Load(),
		RenewalBatches: c.batches[opRenew].Load(),
		Prunes:         c.calls[opPrune].Load(),
		PruneBatches:   c.batches[opPrune].Load(),
	}
}

// execOnce, queryRow and queryRows send one statement on s's database,
// counting it.
func (s *Store) execOnce(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s.stats.statements.Add(1)
	return s.db.ExecContext(ctx, query, args...)
}

func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	s.stats.statements.Add(1)
	return s.db.QueryRowContext(ctx, query, args...)
}

func (s *Store) queryRows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s.stats.statements.Add(1)
	return s.db.QueryContext(ctx, query, args...)
}

package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// SetNewTimeout makes New give up after d when its context has no
// deadline, until restore is called.
func SetNewTimeout(d time.Duration) (restore func()) {
	newTimeout = d
	return func() { newTimeout = NewTimeout }
}

// SetListenIdle makes the listeners check their connection after d
// without a notification, until restore is called.
func SetListenIdle(d time.Duration) (restore func()) {
	listenIdle = d
	return func() { listenIdle = defaultListenIdle }
}

// NewAtVersion is New, migrating the schema to version at most: a
// database of an earlier version, for the tests of migrations.
func NewAtVersion(ctx context.Context, db *sql.DB, d Dialect, version int, opts ...Option) (*Store, error) {
	return newAt(ctx, db, d, version, opts...)
}

// Mutants are the mistakes the tests across replicas must catch, by name.
var Mutants = map[string]uint8{
	"overlap per replica":       mutantLocalOverlap,
	"release records Canceled":  mutantNoRelease,
	"claims without a lock":     mutantNoClaimLock,
	"writes notify no one":      mutantNoNotify,
	"listeners do not catch up": mutantNoCatchUp,
}

// SetMutant breaks the store with mutant m until restore is called.
func SetMutant(m uint8) (restore func()) {
	testMutant = m
	return func() { testMutant = mutantNone }
}

// ClaimBatch sends recs as one batch of claims under Max max, as the
// batcher does for claims that come together, and returns the outcome of
// each: "won", "busy", "taken" or an error.
func ClaimBatch(s *Store, recs []schedule.Record, max int) []string {
	rs := make([]*request, len(recs))
	for i, r := range recs {
		w, err := toRow(r)
		if err != nil {
			panic(err)
		}
		rs[i] = newRequest(opClaim, w)
		rs[i].m = int64(max)
	}
	s.send(&batch{op: opClaim, reqs: slices.Clone(rs)})
	out := make([]string, len(rs))
	for i, r := range rs {
		switch {
		case r.err != nil:
			out[i] = "err: " + r.err.Error()
		case r.ok:
			out[i] = "won"
		case r.busy:
			out[i] = "busy"
		default:
			out[i] = "taken"
		}
	}
	return out
}

// OwnerOf returns the owner of job among nodes, by rendezvous hashing.
func OwnerOf(job string, nodes []string) string {
	ms := make([]member, len(nodes))
	for i, n := range nodes {
		ms[i] = member{name: n}
	}
	owner, _ := ownerOf(job, ms)
	return owner
}

// Heartbeat sends the Store's heartbeat and reads the nodes, as a look for
// expired claims does.
func (s *Store) Heartbeat(ctx context.Context) error { return s.heartbeat(ctx) }

// KeptStreak is keptStreak, for a test that it is schedule's count.
const KeptStreak = keptStreak

// WithMaxRetained sets the bound of WithRetention, MaxRetained, lower, for
// a test that it holds.
func WithMaxRetained(n int) Option {
	return optionFunc(func(o *options) { o.retained = n })
}

// Owns reports whether node claims job at once among nodes, live, those
// named in full at their run limit.
func Owns(job, node string, nodes []string, full ...string) bool {
	ms := make([]member, len(nodes))
	for i, n := range nodes {
		ms[i] = member{name: n, full: slices.Contains(full, n)}
	}
	return owns(job, node, ms)
}

// PruneStatements returns the statements and arguments with which s
// prunes the jobs of names in one batch: the watermarks, then the
// records.
func PruneStatements(s *Store, names ...string) (water, del string, args []any) {
	rs := make([]*request, len(names))
	for i, n := range names {
		rs[i] = &request{op: opPrune, w: row{job: n}}
	}
	args = []any{string(appendJobs(nil, rs)), s.opts.succeeded, s.opts.failed, s.cutoff(), s.opts.retained}
	return s.bq.pruneWater, s.bq.pruneDel, args
}

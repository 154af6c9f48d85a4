// Package sqlstore keeps the execution records of package schedule in a SQL
// database: SQLite on one machine, PostgreSQL for replicas on many.
//
// A Store is a schedule.SharedStore on a *sql.DB the caller opens with the
// driver of its choice (modernc.org/sqlite, pgx's stdlib):
//
//	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN("jobs.db"))
//	...
//	store, err := sqlstore.New(ctx, db, sqlstore.SQLite)
//	...
//	j := schedule.NewJob("report", schedule.Every(time.Hour), report,
//		schedule.WithStore(store))
//
// A slot is claimed by inserting the row (job, due), the table's primary
// key, with ON CONFLICT DO NOTHING: of all the Jobs with the same name on
// one database, in one process or many, exactly one claims each slot. The
// same statement counts the job's runs in flight on every replica, so
// that its overlap policy holds for the job, not the process. A claim
// holds a lease that the Job renews while the run is in flight; when the
// lease expires, by the database's clock, because the claiming node died,
// another node takes the slot over with Reclaim, and a node that stops
// hands its runs over at once (Release). Each retry of a slot is a new
// attempt of its claim, fenced like a takeover; the slots that did not run
// are recorded, and so is since when each job is scheduled.
//
// The replicas share the jobs (schedule.Sharer): each Store that runs jobs
// sends a heartbeat with its look for expired claims, and each job has an
// owner among the live nodes (Nodes, Owns), which claims its slots at once,
// while the others claim a slot only if it is still unclaimed a hand-off
// later. WithSharing(false) makes them race for every slot instead.
//
// Beside the run records, a Store keeps task definitions (Definitions), a
// cron.Source that the cron.Tables of every replica follow:
//
//	defs := store.Definitions()
//	v, err := defs.Create(ctx, cron.Task{Name: "report", Handler: "mail",
//		Spec: "0 9 * * 1-5", Permanent: true})
//	...
//	err = defs.SetPaused(ctx, "report", true) // every replica pauses it
//
// On PostgreSQL, with pgx's stdlib, every replica's Table applies a
// change at once: each write notifies the Stores that listen on the
// table's channel (LISTEN/NOTIFY; Definitions.Changes); elsewhere, at its
// next poll. Close stops the listening.
//
// People read the records with psql or sqlite3 through the view
// {table}_readable, with readable times and the names of statuses and
// reasons. DESIGN.md beside this file gives the schema, the protocol, what
// is guaranteed under which failures, and the measured costs.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/circulation-go/circulation/schedule"
)

// A Dialect names the SQL a database speaks.
type Dialect uint8

const (
	// SQLite is SQLite 3.35 or later (RETURNING), as served by
	// modernc.org/sqlite. Leases are read from the clock of the machine
	// that holds the file.
	SQLite Dialect = iota + 1
	// PostgreSQL is PostgreSQL 12 or later, as served by pgx's stdlib.
	// Leases are read from the server's clock.
	PostgreSQL
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "SQLite"
	case PostgreSQL:
		return "PostgreSQL"
	}
	return fmt.Sprintf("Dialect(%d)", uint8(d))
}

// ErrSchemaTooNew is returned by New when the database holds a schema of a
// later version than this package knows.
var ErrSchemaTooNew = errors.New("sqlstore: schema newer than this package")

// A Store keeps execution records in a table of a SQL database. It
// implements schedule.SharedStore. A Store is safe for concurrent use, as
// are several Stores, in one process or many, on one database and table.
// The zero value is not usable: call New.
type Store struct {
	db      *sql.DB
	dialect Dialect
	opts    options
	q       queries

	finishes atomic.Uint64 // Finish calls, to prune every pruneEvery
	b        batcher       // the claims, finishes, renewals and prunings of many jobs, sent together
	limit    *schedule.RunLimit
	bq       batchQueries
	countSQL string // CountRuns's statement
	stats    counters
	slow     slowLog // the lines of slow statements, one a minute at most
	defs     *Definitions
	members  atomic.Pointer[members] // the live nodes at the latest heartbeat
	beats    atomic.Uint64           // heartbeats sent

	// unsure holds the claims made through this Store whose statement
	// failed: the connection may have broken after the commit, leaving
	// a claim in the table that its caller does not run. The next Claim
	// of that slot through this Store adopts it (adopt), unless the Store
	// holds the slot meanwhile. held holds the slots whose claim this
	// Store made, adopted or took over, and has not seen finished, with
	// when it last knew the claim alive (its claim, or a renewal): a slot
	// is held for a Lease() after that. Both are guarded by mu.
	mu      sync.Mutex
	unsure  map[slotKey]unsureClaim
	held    map[slotKey]time.Time
	sweepAt int // the size of held at which hold sweeps it
}

type slotKey struct {
	job string
	due int64
}

type unsureClaim struct {
	node    string
	attempt int64
	at      time.Time
}

// maxUnsure bounds the claims a Store remembers as unsure; past it, those
// older than a lease are forgotten, then new ones are not remembered (the
// slot then waits for its lease to expire and a takeover).
const maxUnsure = 1024

var _ schedule.SharedStore = (*Store)(nil)

// New returns a Store on db, creating its tables, or migrating them to
// this package's schema version, if needed. Several processes may call New
// on one database at once.
//
// New returns an error, and no Store, if db is nil, the dialect is
// unknown, an option is out of range, the database cannot be reached, or
// its schema is newer than this package's (ErrSchemaTooNew). An in-memory
// SQLite database belongs to one connection: New refuses one that the
// pool's other connections would not see, unless db.SetMaxOpenConns(1)
// was called.
//
// If ctx has no deadline, New gives up after NewTimeout: a server that
// accepts connections but never answers would otherwise hold it for good.
func New(ctx context.Context, db *sql.DB, d Dialect, opts ...Option) (*Store, error) {
	return newAt(ctx, db, d, len(migrations), opts...)
}

// newAt is New, migrating the schema to version at most: tests make a
// database of an earlier version with it.
func newAt(ctx context.Context, db *sql.DB, d Dialect, version int, opts ...Option) (*Store, error) {
	if db == nil {
		return nil, errors.New("sqlstore: New with a nil *sql.DB")
	}
	if d != SQLite && d != PostgreSQL {
		return nil, fmt.Errorf("sqlstore: unknown dialect %d", uint8(d))
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		opt.apply(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	bounded := false
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, newTimeout)
		defer cancel()
		bounded = true
	}
	s := &Store{db: db, dialect: d, opts: o, q: buildQueries(d, o.table),
		unsure: make(map[slotKey]unsureClaim), held: make(map[slotKey]time.Time), sweepAt: maxUnsure}
	s.bq = buildBatchQueries(d, o.table)
	s.countSQL = queries{dialect: d, table: o.table}.rewrite(countRunsSQL)
	s.b = batcher{exec: s.send, lanes: lanes(db, d), max: maxBatch}
	s.limit = schedule.NewRunLimit(o.runs)
	s.defs = newDefinitions(s)
	if err := s.migrate(ctx, version); err != nil {
		if bounded && ctx.Err() != nil {
			return nil, fmt.Errorf("%w (no answer within %v; New's context had no deadline)", err, newTimeout)
		}
		return nil, err
	}
	return s, nil
}

// NewTimeout bounds New when its context has no deadline.
const NewTimeout = 30 * time.Second

// newTimeout is NewTimeout, shortened by tests.
var newTimeout = NewTimeout

// mustBeMade panics if s is nil or was not made by New: misuse, where a
// nil *sql.DB would otherwise panic deep inside database/sql.
func (s *Store) mustBeMade() {
	if s == nil || s.db == nil {
		panic("sqlstore: Store not made by New")
	}
}

// RunLimit returns the RunLimit that the jobs on s share by default
// (WithRunLimit).
func (s *Store) RunLimit() *schedule.RunLimit { return s.limit }

// Lease returns the length of a claim's lease (WithLease).
func (s *Store) Lease() time.Duration { return s.opts.lease }

// Dialect returns the dialect the Store was made with.
func (s *Store) Dialect() Dialect { return s.dialect }

// Close stops what the Store runs of its own: the listener of its
// Definitions, on PostgreSQL, with its connection (see
// Definitions.Changes); it waits for its goroutine to end. It does not
// close the *sql.DB, which the caller opened: call Close first. The Store
// still works after Close, but the followers of its Definitions then see
// other Stores' writes at their polls only. Close is safe to call more
// than once, and concurrently with the Store's other methods. It returns
// nil; the error is io.Closer's.
func (s *Store) Close() error {
	s.mustBeMade()
	s.defs.close()
	return nil
}

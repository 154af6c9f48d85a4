package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// The herd on River (-lib river, PostgreSQL only).
//
// River has no job that waits in each process for its instant: a job due
// later is a row inserted ahead with InsertOpts.ScheduledAt, in state
// scheduled. So the parent migrates River's schema (prepareRiver) and,
// once the due instant is fixed, inserts the -jobs rows, each with
// ScheduledAt at that instant (insertRiver), before the replicas start;
// every replica is then a river.Client on its own pgxpool (riverReplica)
// working the default queue. The leader among them moves the rows that
// are due within its scheduler's interval (5 s, River's fixed default) to
// available, 10,000 a statement with a pause of 50 ms to 1 s between
// them, and the producers lock them, at most MaxWorkers at once per
// replica, once they are due by the database's clock. The parent waits
// until every row is completed (completedSQL), as it waits for the
// Succeeded records of package schedule (awaitRecorded).

// River's settings are those of its own benchmark (cmd/river/riverbench)
// where they matter, for its reasons:
//
//   - FetchCooldown 2 ms and FetchPollInterval 20 ms (River's defaults are
//     100 ms and 1 s). The scheduler sends no notification for rows it
//     makes available ahead of their ScheduledAt, so a producer finds a
//     due herd by polling: the poll interval bounds the first start's
//     lateness, and the cooldown between fetches the pace at which a
//     replica takes the rest.
//   - MaxWorkers 2,000 on the default queue, per replica, unless -runs
//     sets it: River's benchmark found 1,000 to 2,000 fastest, and far
//     more (its maximum is 10,000) slower. It plays the part of the
//     Store's RunLimit, as -runs does for package schedule.
//   - Jobs inserted in batches of 5,000, River's benchmark's batch, but
//     with InsertManyFast (COPY FROM): their insertion is not measured.
//
// The rest are River's defaults, the pool's size -pool's.
const (
	riverFetchCooldown     = 2 * time.Millisecond
	riverFetchPollInterval = 20 * time.Millisecond
	riverMaxWorkers        = 2_000
	riverInsertBatch       = 5_000
)

// riverArgs are the arguments of a herd job on River: its index.
type riverArgs struct {
	Job int32 `json:"job"`
}

// Kind implements river.JobArgs.
func (riverArgs) Kind() string { return "herd" }

// A riverWorker records each start of a herd job in starts, as replica's
// Func does: its index and its lateness after due.
type riverWorker struct {
	river.WorkerDefaults[riverArgs]
	due    time.Time
	starts []start
	n      atomic.Int64
}

// Work records the start and returns at once.
func (w *riverWorker) Work(_ context.Context, job *river.Job[riverArgs]) error {
	if k := w.n.Add(1) - 1; int(k) < len(w.starts) {
		w.starts[k] = start{job: job.Args.Job, late: int64(time.Since(w.due))}
	}
	return nil
}

// riverLogger returns River's logger for herd: warnings and errors, on
// standard error. River's default logger writes to standard output, which
// carries a replica's report.
func riverLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// riverPool opens a pool of o.Pool connections on o.DSN, counting what
// it sends in c if c is not nil.
func riverPool(ctx context.Context, o options, c *riverCounter) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(o.Pool)
	if c != nil {
		cfg.ConnConfig.Tracer = c
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// prepareRiver migrates River's schema up on o.DSN, empties its job
// table, and returns a pool on the database.
func prepareRiver(o options) (*sql.DB, error) {
	ctx := context.Background()
	pool, err := riverPool(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: riverLogger()})
	if err != nil {
		return nil, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return nil, err
	}
	return sql.Open("pgx", o.DSN)
}

// insertRiver inserts o.Jobs herd jobs on River, each scheduled at due,
// in batches of riverInsertBatch.
func insertRiver(o options, due time.Time) error {
	ctx := context.Background()
	pool, err := riverPool(ctx, o, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: riverLogger()})
	if err != nil {
		return err
	}
	opts := &river.InsertOpts{ScheduledAt: due}
	batch := make([]river.InsertManyParams, 0, riverInsertBatch)
	for i := 0; i < o.Jobs; i += riverInsertBatch {
		batch = batch[:0]
		for j := i; j < min(i+riverInsertBatch, o.Jobs); j++ {
			batch = append(batch, river.InsertManyParams{Args: riverArgs{Job: int32(j)}, InsertOpts: opts})
		}
		n, err := client.InsertManyFast(ctx, batch)
		if err != nil {
			return err
		}
		if n != len(batch) {
			return fmt.Errorf("river: inserted %d of %d jobs", n, len(batch))
		}
	}
	return nil
}

// completedSQL counts the herd's jobs River completed, for awaitRecorded.
const completedSQL = "SELECT COUNT(*) FROM river_job WHERE state = 'completed'"

// riverReplica works the herd's jobs on River until its standard input
// closes; then it stops its client, gracefully, and prints its result,
// as replica does.
func riverReplica(o options) error {
	begin := time.Now()
	ctx := context.Background()
	counter := new(riverCounter)
	pool, err := riverPool(ctx, o, counter)
	if err != nil {
		return err
	}
	defer pool.Close()
	w := &riverWorker{due: time.Unix(0, o.Due), starts: make([]start, 2*o.Jobs)}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	maxWorkers := riverMaxWorkers
	if o.Runs > 0 {
		maxWorkers = o.Runs
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		FetchCooldown:     riverFetchCooldown,
		FetchPollInterval: riverFetchPollInterval,
		Logger:            riverLogger(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		Workers:           workers,
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	setup := time.Since(begin)
	h, endProfile, err := hold(o)
	if err != nil {
		return err
	}
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		return err
	}
	endProfile()
	r := result{Node: o.Node, Setup: setup, RSS: peakRSS(), Heap: h.heap, Routines: h.routines, Stacks: h.stacks,
		PeakHeap: h.peakHeap, CPU: cpuTime(), Stats: counter.stats()}
	return send(r, w.starts[:min(int(w.n.Load()), len(w.starts))])
}

// A riverCounter is a pgx tracer that counts the statements a replica's
// River client sends, as sqlstore.Stats counts the Store's: Statements,
// every query, batch and copy (a round trip each; BEGIN and COMMIT
// included, the preparations of pgx's statement cache not); Fetches,
// Completes and Schedules, the queries among them that lock available
// jobs for the producers (JobGetAvailable), set the outcomes of a batch
// of worked jobs (JobSetStateIfRunningMany) and move scheduled jobs to
// available (JobSchedule, the leader's). Its methods are safe for
// concurrent use.
type riverCounter struct {
	statements, fetches, completes, schedules atomic.Uint64
}

var (
	_ pgx.QueryTracer    = (*riverCounter)(nil)
	_ pgx.BatchTracer    = (*riverCounter)(nil)
	_ pgx.CopyFromTracer = (*riverCounter)(nil)
)

// TraceQueryStart counts a query, by its sqlc name when River's.
func (c *riverCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.statements.Add(1)
	if name, ok := strings.CutPrefix(d.SQL, "-- name: "); ok {
		name, _, _ = strings.Cut(name, " ")
		switch name {
		case "JobGetAvailable":
			c.fetches.Add(1)
		case "JobSetStateIfRunningMany":
			c.completes.Add(1)
		case "JobSchedule":
			c.schedules.Add(1)
		}
	}
	return ctx
}

// TraceQueryEnd does nothing.
func (c *riverCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts a batch, one round trip.
func (c *riverCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.statements.Add(1)
	return ctx
}

// TraceBatchQuery does nothing.
func (c *riverCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd does nothing.
func (c *riverCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TraceCopyFromStart counts a copy.
func (c *riverCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.statements.Add(1)
	return ctx
}

// TraceCopyFromEnd does nothing.
func (c *riverCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// stats returns c's counts by name, for a result's Stats.
func (c *riverCounter) stats() map[string]uint64 {
	return map[string]uint64{
		"Statements": c.statements.Load(),
		"Fetches":    c.fetches.Load(),
		"Completes":  c.completes.Load(),
		"Schedules":  c.schedules.Load(),
	}
}

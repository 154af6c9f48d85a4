package sqlstore

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// WithLogger makes the Store log to l what an operator needs to know of
// its database; by default, to slog.Default() at the time of each line.
// Nothing is logged while all goes well. One message, constant, with the
// facts as attributes (docs/logging.md lists every message):
//
//   - "sqlstore: slow statement" (Warn): a statement of claims, finishes,
//     renewals or prunings took more than a quarter of the lease, from
//     the moment it was sent, with op ("claim", "finish", "renew",
//     "prune"), calls (the calls it carried), took, node (the Store's,
//     WithNode) and err if it failed. At most one line a minute: the slow
//     statements in between are counted, and the next line says how many
//     (unlogged).
//   - "sqlstore: not listening" (Warn): on PostgreSQL, the connection on
//     which the Store's Definitions listen for other Stores' writes
//     (Definitions.Changes) could not be made, or was lost, with channel,
//     node and err; once as the outage begins. Meanwhile its followers see
//     other Stores' writes at their polls.
//   - "sqlstore: listening again" (Warn): the connection is made again
//     after that, with channel, node, failed (the connection lost and
//     the attempts that failed) and took (since the outage began); the
//     changes made meanwhile are signalled.
//
// The jobs on the Store log their own lines (store outages, claims taken
// over, leases lost) to the logger of schedule.WithLogger, or of
// cron.WithLogger for a Table's. A nil l means the default.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) { o.log = l })
}

// The messages of WithLogger.
const (
	msgSlow         = "sqlstore: slow statement"
	msgNotListening = "sqlstore: not listening"
	msgListening    = "sqlstore: listening again"
)

// slowEvery is the least time between two slow statement lines.
const slowEvery = time.Minute

var opNames = [nOps]string{opRenew: "renew", opFinish: "finish", opClaim: "claim", opPrune: "prune"}

// slowLog holds back the lines of slow statements to one per slowEvery.
type slowLog struct {
	mu       sync.Mutex
	logged   time.Time // the latest line
	unlogged int       // the slow statements since that were not logged
}

// logger returns the Store's logger: WithLogger's, or slog.Default().
func (s *Store) logger() *slog.Logger {
	if s.opts.log != nil {
		return s.opts.log
	}
	return slog.Default()
}

// slowStatement logs, unless a line was logged less than slowEvery ago,
// that the statement of bt took took, and failed with err if not nil.
func (s *Store) slowStatement(bt *batch, took time.Duration, err error) {
	now := time.Now()
	s.slow.mu.Lock()
	if !s.slow.logged.IsZero() && now.Sub(s.slow.logged) < slowEvery {
		s.slow.unlogged++
		s.slow.mu.Unlock()
		return
	}
	s.slow.logged = now
	unlogged := s.slow.unlogged
	s.slow.unlogged = 0
	s.slow.mu.Unlock()
	l := s.logger()
	ctx := context.Background()
	if !l.Enabled(ctx, slog.LevelWarn) {
		return
	}
	attrs := []slog.Attr{slog.String("op", opNames[bt.op]), slog.Int("calls", len(bt.reqs)),
		slog.Duration("took", took), slog.String("node", s.opts.node), slog.Int("unlogged", unlogged)}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	l.LogAttrs(ctx, slog.LevelWarn, msgSlow, attrs...)
}

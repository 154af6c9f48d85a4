package sqlstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A listener makes the followers of a Store's Definitions learn of the
// writes of every Store on the table at once, on PostgreSQL: each write
// notifies its version on the channel named as the change marker, in its
// transaction, so that it is heard only once it commits (bump), and the
// listener, on a connection of its own, LISTENs on that channel and
// signals Changes for each version later than any signalled before
// (Definitions.heard).
//
// A notification is lost while no connection listens. So each time the
// listener's connection is made, first or again, it reads the Version
// once it listens, and signals it if it is later: every change committed
// before that read is in the version read, and every one committed after
// the LISTEN is notified. A lost connection is made again after a delay
// that starts at listenRetry and doubles, with jitter, up to
// listenRetryMax; meanwhile, and with any driver but pgx's stdlib, the
// followers see other Stores' writes at their polls. A connection that
// hears nothing for listenIdle is asked whether it still listens (LISTEN
// again, which also keeps the last statement that pg_stat_activity shows
// for it "LISTEN {channel}"), so that a silently broken one is made
// again.
//
// The connection is not one of the pool's: the listener borrows a pool
// connection only to copy its configuration (pgx's *pgx.ConnConfig, as
// the driver made it), then connects with that. It holds no connection
// of the pool, and the pool's limits do not count it.
type listener struct {
	d      *Definitions
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
}

const (
	// listenRetry is the first delay before the listener connects again
	// after a failure; each failure in a row doubles it, up to
	// listenRetryMax. A connection made and LISTENing starts again from
	// listenRetry.
	listenRetry    = 100 * time.Millisecond
	listenRetryMax = 10 * time.Second
	// defaultListenIdle is how long the listener waits for a
	// notification before it checks its connection.
	defaultListenIdle = 30 * time.Second
	// listenTimeout bounds the making of a connection, with its LISTEN,
	// and each check of it.
	listenTimeout = 30 * time.Second
)

// listenIdle is defaultListenIdle, shortened by tests.
var listenIdle = defaultListenIdle

// errNotPgx ends a listener whose pool is not pgx's stdlib.
var errNotPgx = errors.New("sqlstore: the driver is not pgx's stdlib")

// listen starts d's listener. The caller holds d.mu.
func (d *Definitions) listen() *listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{d: d, cancel: cancel, done: make(chan struct{})}
	go l.run(ctx)
	return l
}

// close stops d's listener, if any, and waits for it; no listener starts
// after it.
func (d *Definitions) close() {
	d.mu.Lock()
	d.closed = true
	l := d.listening
	d.mu.Unlock()
	if l != nil {
		l.cancel()
		<-l.done
	}
}

// run makes the listener's connection, hears its notifications until it
// is lost, and makes it again, until ctx ends or the driver is not pgx's.
// It logs the first failure of an outage, and the connection made again
// after it (WithLogger).
func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	var (
		failures int       // in a row
		down     time.Time // when the outage began; zero while none
	)
	for {
		conn, err := l.connect(ctx)
		if errors.Is(err, errNotPgx) {
			return
		}
		if err == nil {
			if !down.IsZero() {
				l.d.s.logger().Warn(msgListening, "channel", l.d.channel, "node", l.d.s.opts.node,
					"failed", failures, "took", time.Since(down))
			}
			failures, down = 0, time.Time{}
			err = l.hear(ctx, conn)
			closing, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(closing)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		if down.IsZero() {
			down = time.Now()
			l.d.s.logger().Warn(msgNotListening, "channel", l.d.channel, "node", l.d.s.opts.node, "err", err)
		}
		t := time.NewTimer(retryDelay(failures))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// retryDelay returns the delay before the listener's next attempt after
// failures in a row: listenRetry doubled for each failure after the
// first, at most listenRetryMax, less a random part of up to a half.
func retryDelay(failures int) time.Duration {
	d := listenRetry << min(failures-1, 16)
	d = min(d, listenRetryMax)
	return d - rand.N(d/2+1)
}

// connect makes a connection as the pool's are made, LISTENs on the
// channel, then reads the Version and signals it if it is later than any
// signalled before. It returns errNotPgx if the pool's connections are
// not pgx's.
func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, listenTimeout)
	defer cancel()
	cfg, err := l.config(ctx)
	if err != nil {
		return nil, err
	}
	// The pool's connection installed its own handler of notifications
	// in the configuration it keeps, which would take this connection's:
	// without one, pgx installs this connection's, which
	// WaitForNotification reads.
	cfg.OnNotification = nil
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, l.listenSQL()); err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	if testMutant != mutantNoCatchUp {
		v, err := l.d.Version(ctx)
		if err != nil {
			_ = conn.Close(ctx)
			return nil, err
		}
		l.d.heard(v)
	}
	return conn, nil
}

// listenSQL is the statement that listens on the channel, a name of
// [a-z0-9_] (WithTable's, and a suffix).
func (l *listener) listenSQL() string { return "LISTEN " + l.d.channel }

// config returns the configuration of a connection of the pool, or
// errNotPgx if it is not pgx's.
func (l *listener) config(ctx context.Context) (*pgx.ConnConfig, error) {
	c, err := l.d.s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var cfg *pgx.ConnConfig
	err = c.Raw(func(dc any) error {
		pc, ok := dc.(interface{ Conn() *pgx.Conn })
		if !ok {
			return errNotPgx
		}
		cfg = pc.Conn().Config()
		return nil
	})
	return cfg, err
}

// hear signals Changes for each notification on conn, until ctx ends or
// conn fails. A notification whose payload is not a version (a NOTIFY
// sent by hand) signals Changes whatever was signalled before.
func (l *listener) hear(ctx context.Context, conn *pgx.Conn) error {
	for {
		wait, cancel := context.WithTimeout(ctx, listenIdle)
		n, err := conn.WaitForNotification(wait)
		cancel()
		if n != nil {
			l.heard(n.Payload)
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return ctx.Err()
		case pgconn.Timeout(err):
			check, cancel := context.WithTimeout(ctx, listenTimeout)
			_, err = conn.Exec(check, l.listenSQL())
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// heard signals Changes for a notification with payload p: the version
// it notifies, if later than any signalled before, or, if p is not a
// version (a NOTIFY sent by hand), whatever was signalled before.
func (l *listener) heard(p string) {
	if v, err := strconv.ParseInt(p, 10, 64); err == nil {
		l.d.heard(v)
		return
	}
	l.d.mu.Lock()
	l.d.send()
	l.d.mu.Unlock()
}

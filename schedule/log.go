package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// WithLogger makes the job log what an operator needs to know and would
// otherwise not see, to l; by default, to slog.Default() at the time of
// each line. Nothing is logged while all goes well: every line is a Warn
// or an Error, and a run that claims, runs and records its slot logs
// nothing. The messages are constant, the facts are attributes (job, due,
// node, attempt, err, failed, took, store); docs/logging.md lists them:
//
//   - "schedule: store unreachable" (Error): a claim of a slot, a
//     Start's read of the last record, or the Finish (or Release) of a
//     run's outcome failed with a store error: a run whose outcome was
//     not written stays Running in the store, and a replica takes it over
//     once its lease expires, Attempt + 1. Logged
//     once per store and logger in the process when the outage starts,
//     with the job and the error of the first failure, and not again
//     until the store has answered.
//   - "schedule: store reachable again" (Warn): the first answer of the
//     store after it, with failed, the number of claims and reads that
//     failed meanwhile (of every job of the process on that store and
//     logger), and took, how long the outage lasted. An outage that
//     starts within a minute of the previous one's first line is counted
//     but not logged: its failures are added to the next line that is,
//     so that a store that comes and goes logs two lines a minute at most.
//   - "schedule: claim taken over" (Warn): the job took over the claim of
//     a run whose node left it (SharedStore.Reclaim), one line per run
//     taken over, with its job, due, node (this one) and attempt.
//   - "schedule: lease lost" (Warn): a run was cancelled because its
//     lease was lost (ErrLeaseLost) or could not be renewed for a full
//     lease (ErrLeaseNotRenewed), one line per run, with job, due, node,
//     attempt and err.
//   - "schedule: slots missed" (Warn): slots passed unrun, Missed (the
//     job woke later than its grace period, as when its process was
//     starved or suspended, or it started after them, and the Misfire
//     policy or the catch-up window did not run them), with job and due
//     of the first of them, and missed, the number of Missed slots of
//     every job on that logger since the previous line. At most one line
//     a minute per logger: the slots missed in between are counted, and
//     logged once the minute is over, so that a herd of 100,000 missed
//     slots logs two lines.
//   - "schedule: job paused after failures" (Warn): WithPauseOnFailures
//     paused the job, with job, due (of the last failed slot), node and
//     failed (the slots that failed in a row).
//
// A nil l means the default. The Jobs sharing a Preset share its logger.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) { c.log = l })
}

// The messages the jobs log, one constant each: see WithLogger.
const (
	msgStoreDown  = "schedule: store unreachable"
	msgStoreUp    = "schedule: store reachable again"
	msgTakenOver  = "schedule: claim taken over"
	msgLeaseLost  = "schedule: lease lost"
	msgPausedSelf = "schedule: job paused after failures"
	msgMissed     = "schedule: slots missed"
)

// logger returns the job's logger: WithLogger's, or slog.Default().
func (c *config) logger() *slog.Logger {
	if c.log != nil {
		return c.log
	}
	return slog.Default()
}

// logRun logs msg at level about the run r of the job, with err if it is
// not nil, if the logger takes level: the attributes are built only then.
func (c *config) logRun(level slog.Level, msg string, r Record, err error) {
	l := c.logger()
	ctx := context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("job", r.Job), slog.Time("due", r.Due), slog.String("node", c.nodeName()),
		slog.Int("attempt", r.Attempt)}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	l.LogAttrs(ctx, level, msg, attrs...)
}

// leaseLost logs that the run of rec was cancelled, its lease lost with
// cause, and tells the job's Trace.
func (c *config) leaseLost(rec Record, cause error) {
	c.logRun(slog.LevelWarn, msgLeaseLost, rec, cause)
	if t := c.trace; t != nil && t.LeaseLost != nil {
		t.LeaseLost(rec, cause)
	}
}

// logPaused logs that the job paused itself after failed slots in a
// row, the last of them r's.
func (j *Job) logPaused(r Run, failed int) {
	l := j.cfg.logger()
	if ctx := context.Background(); l.Enabled(ctx, slog.LevelWarn) {
		l.LogAttrs(ctx, slog.LevelWarn, msgPausedSelf, slog.String("job", r.Job), slog.Time("due", r.Due),
			slog.String("node", j.cfg.nodeName()), slog.Int("failed", failed))
	}
}

// An outage is the failure of a store, as the jobs of the process on it
// that log to one logger see it: it starts at a claim (or a Start's read)
// that fails with a store error, and ends at the first answer of the
// store after it. Its first failure and its end are logged, once each,
// whatever the number of jobs: 100,000 jobs whose claims fail make two
// lines, with the count of failures in the second.
type outage struct {
	mu     sync.Mutex
	down   bool      // the outage is under way
	quiet  bool      // its start was not logged (too soon after the last), nor will its end be
	since  time.Time // its first failure
	failed int       // the failures since the latest "reachable again" line
	logged time.Time // the latest "unreachable" line
}

// outageQuiet is the least time between two "store unreachable" lines of
// one store and logger.
const outageQuiet = time.Minute

// outageKey names an outage: the store, unwrapped, and the logger (nil
// for slog.Default()). A store that is a pointer is named by its ident,
// its type and address, which do not keep it alive: a store dropped is
// collected, whatever its outages (another made at its address later
// shares their pace of lines, no more). Another store is itself, or
// notComparable{}.
type outageKey struct {
	id    ident
	store any // nil when id names the store
	log   *slog.Logger
}

// notComparable stands for a store that cannot be a map key: such stores
// share one outage per logger.
type notComparable struct{}

var (
	// The outages, each made at its store's first failure. A map under a
	// mutex, not a sync.Map, whose keys are interfaces: a look-up boxes
	// no key, so that an answer of a store costs no allocation while
	// another store is down.
	outagesMu   sync.Mutex
	outages     = map[outageKey]*outage{}
	outagesDown atomic.Int32 // the outages under way: while zero, an answer looks nothing up
)

// outageOf returns the outage of k, made if need be when create is true, or
// nil.
func outageOf(k outageKey, create bool) *outage {
	outagesMu.Lock()
	defer outagesMu.Unlock()
	o := outages[k]
	if o == nil && create {
		o = new(outage)
		outages[k] = o
	}
	return o
}

// key returns the outageKey of the jobs of c on s.
func (c *config) outageKey(s Store) outageKey {
	for {
		u, ok := s.(unwrapped)
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	k := outageKey{store: s, log: c.log}
	if id, ok := identOf(s); ok {
		k.id, k.store = id, nil
	} else if !isKey(s) {
		k.store = notComparable{}
	}
	return k
}

// heard notes the outcome of a claim, a Finish or a Release in s: a
// failure other than ErrClaimed, ErrBusy, ErrLeaseLost or ErrNoRecord (a
// record the store dropped), while ctx lives, starts or continues the store's outage; an
// answer ends it. It costs an atomic load when the claim worked and no
// store is down.
func (j *Job) heard(ctx context.Context, s Store, err error) {
	if err == nil && outagesDown.Load() == 0 {
		return
	}
	j.heardSlow(ctx, s, err)
}

//go:noinline
func (j *Job) heardSlow(ctx context.Context, s Store, err error) {
	switch {
	case s == nil: // the job's own memory, which never fails
	case err == nil || errors.Is(err, ErrClaimed) || errors.Is(err, ErrBusy) || errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNoRecord):
		j.storeAnswered(s)
	case ctx.Err() == nil:
		j.storeFailed(s, err)
	}
}

// storeFailed counts a failure of s, and logs it if it starts an outage;
// the job's Trace learns of each.
func (j *Job) storeFailed(s Store, err error) {
	if t := j.cfg.trace; t != nil && t.StoreFailed != nil {
		t.StoreFailed(j.name, err)
	}
	o := outageOf(j.cfg.outageKey(s), true)
	now := time.Now()
	o.mu.Lock()
	o.failed++
	switch {
	case !o.down:
		o.down, o.since = true, now
		outagesDown.Add(1)
		o.quiet = !o.logged.IsZero() && now.Sub(o.logged) < outageQuiet
	case o.quiet && now.Sub(o.logged) >= outageQuiet:
		// An outage that began too soon after the last one logged, and
		// lasts: it is logged now, and so will its end be.
		o.quiet = false
	default:
		o.mu.Unlock()
		return
	}
	if !o.quiet {
		o.logged = now
	}
	quiet := o.quiet
	o.mu.Unlock()
	if quiet {
		return
	}
	l := j.cfg.logger()
	if ctx := context.Background(); l.Enabled(ctx, slog.LevelError) {
		l.LogAttrs(ctx, slog.LevelError, msgStoreDown, slog.String("store", fmt.Sprintf("%T", s)),
			slog.String("job", j.name), slog.String("node", j.cfg.nodeName()), slog.String("err", err.Error()))
	}
}

// storeAnswered ends the outage of s, if one is under way, and logs its
// end with the failures counted, unless its start was not logged.
func (j *Job) storeAnswered(s Store) {
	if outagesDown.Load() == 0 {
		return
	}
	o := outageOf(j.cfg.outageKey(s), false)
	if o == nil {
		return
	}
	o.mu.Lock()
	if !o.down {
		o.mu.Unlock()
		return
	}
	o.down = false
	outagesDown.Add(-1)
	if o.quiet {
		o.mu.Unlock()
		return
	}
	failed, took := o.failed, time.Since(o.since)
	o.failed = 0
	o.mu.Unlock()
	l := j.cfg.logger()
	if ctx := context.Background(); l.Enabled(ctx, slog.LevelWarn) {
		l.LogAttrs(ctx, slog.LevelWarn, msgStoreUp, slog.String("store", fmt.Sprintf("%T", s)),
			slog.String("node", j.cfg.nodeName()), slog.Int("failed", failed), slog.Duration("took", took))
	}
}

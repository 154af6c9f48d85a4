// Command leaserenewal keeps a distributed lock's lease alive the way
// Redisson's watchdog does, on a Trigger.
//
// A lock in Redis is a key with an expiry, the lease: if its holder dies,
// the lease runs out and the lock frees itself. A job that runs longer than
// the lease keeps it with a watchdog that renews it every lease/3. Here
// the watchdog is a Trigger whose task renews the lease and returns
// lease/3. The program shows that:
//
//   - the lease is renewed every lease/3 while the lock is held;
//   - releasing the lock stops the watchdog first (Stop waits for a
//     renewal in flight), so no renewal ever follows the unlock;
//   - a failed renewal is retried sooner, every lease/6, and once the
//     next try would come too late, the watchdog gives up and cancels the
//     job's context before the lease expires, so the job stops before
//     another client can take the lock. (Redisson logs the error and stops
//     renewing; the job is not told.)
//
// Redis is simulated in memory, with two outages. Every duration is a
// fraction of the lease, which -lease sets:
//
//	go run ./examples/leaserenewal
//	go run ./examples/leaserenewal -lease 300ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/circulation-go/circulation"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "leaserenewal: %v (see -h)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	_, err = run(ctx, os.Stdout, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "leaserenewal: %v\n", err)
		os.Exit(1)
	}
}

type config struct {
	lease time.Duration // how long the lock lives without a renewal
}

const minLease, maxLease = 60 * time.Millisecond, 1500 * time.Millisecond

// parseFlags parses the command line. It returns flag.ErrHelp, after
// printing the usage to stderr, if asked for help; any other error is for
// main to print in one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{lease: 600 * time.Millisecond}
	fs := flag.NewFlagSet("leaserenewal", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.DurationVar(&cfg.lease, "lease", cfg.lease,
		fmt.Sprintf("the lock's lease, `d` (%v to %v); the story lasts about 5×d", minLease, maxLease))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.lease < minLease || cfg.lease > maxLease {
		return cfg, fmt.Errorf("-lease must be between %v and %v, got %v", minLease, maxLease, cfg.lease)
	}
	return cfg, nil
}

// report is what happened, for the tests.
type report struct {
	renewals []renewal      // every renewal the store received by the end
	jobs     map[string]job // by owner
	store    *redis         // the store, to see what reaches it afterwards
}

// job is what happened to one job, in time since the story began.
type job struct {
	locked, ended time.Duration
	expires       time.Duration // when its lease would have run out at the end
	lost          error         // why the job was stopped, if it was
}

// run runs three jobs that take the same lock one after another, printing
// what happens to w, and returns what happened.
func run(ctx context.Context, w io.Writer, cfg config) (*report, error) {
	tick := cfg.lease / 60 // the story's time unit: 10ms for a 600ms lease
	log := &timeline{w: w, start: time.Now()}
	store := &redis{
		start: log.start,
		keys:  map[string]entry{},
		outages: [][2]time.Duration{
			{130 * tick, 145 * tick}, // one renewal fails, the retry succeeds
			{200 * tick, 255 * tick}, // longer than the lease has left
		},
	}
	log.printf("redis will be unreachable from %s to %s and from %s to %s",
		stamp(store.outages[0][0]), stamp(store.outages[0][1]), stamp(store.outages[1][0]), stamp(store.outages[1][1]))
	r := &report{jobs: map[string]job{}}
	jobs := []struct {
		owner      string
		start, end time.Duration // in ticks
	}{
		{"report-1", 0, 90},
		{"report-2", 100, 300}, // outlives its lease
		{"report-3", 260, 290},
	}
	for _, j := range jobs {
		if sleepUntil(ctx, log.start.Add(j.start*tick)) != nil {
			break
		}
		r.jobs[j.owner] = work(ctx, log, store, j.owner, cfg.lease, log.start.Add(j.end*tick))
	}
	if ctx.Err() != nil {
		log.printf("interrupted")
	}
	r.renewals, r.store = store.renewals(), store
	return r, nil
}

// work runs one job: it takes the lock, works until done (or until its
// lease is lost, or ctx is done) and releases the lock.
func work(ctx context.Context, log *timeline, store *redis, owner string, lease time.Duration, done time.Time) job {
	const key = "orders"
	l, ctx, err := acquire(ctx, log, store, key, owner, lease)
	if err != nil {
		log.printf("%s: %v", owner, err)
		return job{lost: err}
	}
	j := job{locked: time.Since(log.start)}
	log.printf("%s: locked %q with a %v lease; the watchdog renews it every %v", owner, key, lease, lease/3)
	interrupted := sleepUntil(ctx, done)
	// Stop the watchdog first, then unlock: no renewal can follow the
	// unlock, and l's fields are ours to read.
	j.expires = l.release()
	if interrupted != nil {
		j.lost = context.Cause(ctx)
		left := j.expires - time.Since(log.start)
		log.printf("%s: stops working, %v before the lease ends: %v", owner, left.Round(time.Millisecond), j.lost)
	} else {
		log.printf("%s: work done; the watchdog is stopped", owner)
	}
	if err := store.unlock(key, owner); err != nil {
		log.printf("%s: unlock failed: %v; the lease expires by itself at %s", owner, err, stamp(j.expires))
	} else {
		log.printf("%s: unlocked, after %d renewal(s); none can follow", owner, l.renewals)
	}
	j.ended = time.Since(log.start)
	return j
}

var errLost = errors.New("lease lost")

// A lock is a held lease on a key, kept alive by a watchdog: a Trigger
// whose task, renew, renews the lease every lease/3.
type lock struct {
	log        *timeline
	store      *redis
	key, owner string
	lease      time.Duration
	watchdog   *circulation.Trigger
	lost       context.CancelCauseFunc // cancels the holder's context

	// Written by renew, which the Trigger never runs concurrently with
	// itself, and read by release once Stop has returned.
	expires  time.Time // when the lease runs out, as far as we know
	renewals int
}

// acquire takes the lock on key for owner and starts its watchdog. The
// context it returns is cancelled, with errLost as its cause, if the lease
// is lost.
func acquire(ctx context.Context, log *timeline, store *redis, key, owner string, lease time.Duration) (*lock, context.Context, error) {
	sent := time.Now()
	if err := store.lock(key, owner, lease); err != nil {
		return nil, nil, err
	}
	l := &lock{log: log, store: store, key: key, owner: owner, lease: lease, expires: sent.Add(lease)}
	ctx, l.lost = context.WithCancelCause(ctx)
	l.watchdog = circulation.Bind(nil, l.renew)
	l.watchdog.FireAfter(lease / 3)
	return l, ctx, nil
}

// renew is the watchdog's task: one renewal, then when to try the next.
func (l *lock) renew(context.Context) (time.Duration, bool) {
	sent := time.Now() // the store counts the lease from a moment after this
	err := l.store.renew(l.key, l.owner, l.lease)
	if err == nil {
		l.expires = sent.Add(l.lease)
		l.renewals++
		l.log.printf("watchdog %s: renewed; the lease ends at %v", l.owner, stamp(l.since(l.expires)))
		return l.lease / 3, true
	}
	if errors.Is(err, errNotHeld) { // expired, and perhaps taken by someone else
		l.log.printf("watchdog %s: %v: gives up", l.owner, err)
		l.lost(fmt.Errorf("%w: %w", errLost, err))
		return 0, false
	}
	retry := l.lease / 6
	if !sent.Add(retry).Before(l.expires) {
		l.log.printf("watchdog %s: renewal failed: %v; the lease ends at %v, before another try: gives up", l.owner, err, stamp(l.since(l.expires)))
		l.lost(fmt.Errorf("%w: last renewal failed: %w", errLost, err))
		return 0, false
	}
	l.log.printf("watchdog %s: renewal failed: %v; retrying in %v, before the lease ends at %v", l.owner, err, retry, stamp(l.since(l.expires)))
	return retry, true
}

// release stops the watchdog and waits until no renewal is in flight or
// pending, so that none can follow the unlock, which is the caller's next
// step. It returns when the lease ends, as far as the watchdog knows.
func (l *lock) release() time.Duration {
	_ = l.watchdog.Stop(context.Background()) // nil: Background is never done
	l.lost(nil)                               // release the context's resources
	return l.since(l.expires)
}

func (l *lock) since(t time.Time) time.Duration { return t.Sub(l.log.start) }

// stamp formats a time since the start as the timeline does.
func stamp(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

var (
	errUnreachable = errors.New("connection refused")
	errNotHeld     = errors.New("lock not held")
	errLocked      = errors.New("lock held by another owner")
)

// redis stands in for the Redis server that holds the locks. A key is
// locked while its lease runs; the lease is renewed only by its owner, as
// Redisson's Lua scripts do. During an outage every call fails.
type redis struct {
	start   time.Time
	outages [][2]time.Duration // [from, to) since start

	mu   sync.Mutex
	keys map[string]entry
	log  []renewal
}

type entry struct {
	owner   string
	expires time.Time
}

// renewal is one renewal request as the store saw it.
type renewal struct {
	at    time.Duration // since start
	owner string
	err   error
}

// reach returns errUnreachable during an outage.
func (r *redis) reach(now time.Time) error {
	for _, o := range r.outages {
		if at := now.Sub(r.start); at >= o[0] && at < o[1] {
			return errUnreachable
		}
	}
	return nil
}

// held returns the live entry of key, if any. r.mu is held.
func (r *redis) held(key string, now time.Time) (entry, bool) {
	e, ok := r.keys[key]
	return e, ok && now.Before(e.expires)
}

func (r *redis) lock(key, owner string, lease time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if err := r.reach(now); err != nil {
		return err
	}
	if e, ok := r.held(key, now); ok && e.owner != owner {
		return fmt.Errorf("%w (%s)", errLocked, e.owner)
	}
	r.keys[key] = entry{owner: owner, expires: now.Add(lease)}
	return nil
}

func (r *redis) renew(key, owner string, lease time.Duration) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	defer func() { r.log = append(r.log, renewal{at: now.Sub(r.start), owner: owner, err: err}) }()
	if err := r.reach(now); err != nil {
		return err
	}
	if e, ok := r.held(key, now); !ok || e.owner != owner {
		return errNotHeld
	}
	r.keys[key] = entry{owner: owner, expires: now.Add(lease)}
	return nil
}

func (r *redis) unlock(key, owner string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if err := r.reach(now); err != nil {
		return err
	}
	if e, ok := r.held(key, now); !ok || e.owner != owner {
		return errNotHeld
	}
	delete(r.keys, key)
	return nil
}

func (r *redis) renewals() []renewal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]renewal(nil), r.log...)
}

// sleepUntil waits until t or until ctx is done, and returns ctx.Err().
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// timeline prints lines stamped with the time since it started.
type timeline struct {
	w     io.Writer
	start time.Time
	mu    sync.Mutex
}

func (l *timeline) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%6.3fs  %s\n", time.Since(l.start).Seconds(), fmt.Sprintf(format, args...))
}

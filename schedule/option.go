package schedule

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/circulation-go/circulation"
)

// Overlap says what happens when a slot falls due, or RunNow is called,
// while a run of the job is in flight. On a SharedStore the job is every
// Job of its name sharing the store, on any node: a run in flight on one of
// them counts for all (a run taken over from a dead node, until its lease
// expires), and the claim that checks it is atomic with the count, so that
// the policy holds as in one process. On any other Store, it holds for each
// Job alone.
type Overlap uint8

const (
	// OverlapSkip (the default): the slot does not run; its Record,
	// Skipped, reaches the Observer and the store (once, whatever the
	// number of Jobs that skipped it). k8s CronJob concurrencyPolicy
	// Forbid; Temporal SCHEDULE_OVERLAP_POLICY_SKIP.
	OverlapSkip Overlap = iota
	// OverlapBufferOne: one run follows right after the run in flight, for
	// the latest slot that fell due meanwhile, on whichever Job is free
	// first; earlier ones are Skipped. Temporal
	// SCHEDULE_OVERLAP_POLICY_BUFFER_ONE.
	OverlapBufferOne
	// OverlapReplace: the context of the run in flight is cancelled
	// (ErrReplaced; its Record is Canceled), and the new run starts as
	// soon as it returns; two runs never overlap. A run in flight on
	// another node learns it at its next Renew, within a third of a lease,
	// and the new run starts once that run has returned or its lease has
	// expired. A Recovered run is not cancelled: its slot was another
	// node's, whose run may have been cut short, and would be lost; the new
	// run waits for it to end. k8s CronJob concurrencyPolicy Replace;
	// Temporal SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER.
	OverlapReplace
	// OverlapAllow: the new run starts at once, in parallel, up to
	// WithMaxParallel runs in flight (no limit by default); a slot beyond
	// the limit is Skipped. k8s CronJob concurrencyPolicy Allow; Temporal
	// SCHEDULE_OVERLAP_POLICY_ALLOW_ALL.
	OverlapAllow
	// OverlapBufferAll: every slot that falls due while a run is in
	// flight runs after it, one after another, in the order they fell
	// due, on whichever Job is free first, up to WithBufferLimit slots
	// waiting (100 by default); a slot that finds the buffer full is
	// Skipped, in the store too. RunNow waits its turn too. A slot handed
	// back by its owner after its hand-off (Sharer) joins the buffer then.
	// The runs of a catch-up (MisfireRunAll) are queued whole, up to the
	// catch-up limit, and count toward the buffer while they wait. A job
	// whose runs keep overstaying their period keeps its buffer full and
	// is never free: like any busy job it takes over no expired claim of
	// its name until it is free, and on a SharedStore a runner that waits
	// for another node's run keeps its place in the RunLimit meanwhile.
	// Temporal SCHEDULE_OVERLAP_POLICY_BUFFER_ALL.
	OverlapBufferAll
)

var overlapNames = [...]string{"OverlapSkip", "OverlapBufferOne", "OverlapReplace", "OverlapAllow", "OverlapBufferAll"}

func (o Overlap) String() string {
	if int(o) < len(overlapNames) {
		return overlapNames[o]
	}
	return "Overlap(" + strconv.Itoa(int(o)) + ")"
}

// Misfire says what happens to the slots a job missed: slots that passed
// before Start since the last record in the store, while the process was
// asleep or the wall clock jumped forward, or while the store failed. A
// slot is missed if its run could not start within the grace period
// (WithGrace) after its due time.
type Misfire uint8

const (
	// MisfireRunOnce (the default): one run, at once, for the latest missed
	// slot, with Reason CatchUp; the others are Missed. Quartz
	// MISFIRE_INSTRUCTION_FIRE_NOW (SimpleTrigger) and
	// MISFIRE_INSTRUCTION_FIRE_ONCE_NOW (CronTrigger); k8s CronJob, which
	// starts one Job for the latest missed schedule.
	MisfireRunOnce Misfire = iota
	// MisfireSkip: the missed slots are Missed; the job waits for its next
	// slot. Quartz MISFIRE_INSTRUCTION_DO_NOTHING (CronTrigger) and
	// MISFIRE_INSTRUCTION_RESCHEDULE_NEXT_WITH_REMAINING_COUNT.
	MisfireSkip
	// MisfireRunAll: each missed slot runs, oldest first, one after
	// another, with Reason CatchUp, up to the catch-up limit
	// (WithCatchUpLimit); the slots beyond the limit, the newest, are
	// Missed. Replicas that catch up together take turns: each missed
	// slot runs once, on one of them, under OverlapSkip, OverlapBufferAll
	// and OverlapAllow (a newer slot supersedes a catch-up waiting for its
	// turn under OverlapBufferOne, as it would any run waiting, and
	// replaces it under OverlapReplace). Quartz
	// MISFIRE_INSTRUCTION_IGNORE_MISFIRE_POLICY; Temporal's catch-up
	// window.
	MisfireRunAll
)

var misfireNames = [...]string{"MisfireRunOnce", "MisfireSkip", "MisfireRunAll"}

func (m Misfire) String() string {
	if int(m) < len(misfireNames) {
		return misfireNames[m]
	}
	return "Misfire(" + strconv.Itoa(int(m)) + ")"
}

// An Option configures a Job in NewJob.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config holds a Job's options, and is never changed once a Job has it.
// Jobs made with no option other than WithScheduler share defaultConfig,
// and jobs made with equal options share one config (share): an idle job
// costs no config of its own.
type config struct {
	settings
	limit    *RunLimit
	store    Store
	shared   SharedStore           // store, if it is a SharedStore
	lease    SharedStore           // shared, if its Lease is positive: its runs' leases are renewed
	trace    *Trace                // WithTrace's, nil for none
	sched    circulation.Scheduler // WithScheduler's, nil for the default: the job's watch's
	log      *slog.Logger          // WithLogger's, nil for slog.Default()
	observer func(Record)
	pausedBy func(*Job, PauseNote) // WithPauseOnFailures' callback
}

// settings are the options of a config that are plain values.
type settings struct {
	overlap     Overlap
	misfire     Misfire
	maxParallel int
	catchUp     int
	buffer      int           // WithBufferLimit's, 0 for the default
	window      time.Duration // WithCatchUpWindow's, 0 for none
	jitter      time.Duration // WithJitter's, 0 for none
	maxRuns     int           // WithMaxRuns', 0 for no limit
	grace       time.Duration
	timeout     time.Duration
	retry       time.Duration // WithClaimRetry's, or -1: the default
	attempts    int           // WithRetry's: the runs a slot may take in all; 0 or 1: no retry
	backoff     time.Duration // WithRetry's: the pause before the first retry
	since       time.Time     // WithSince's
	limitSet    bool          // WithRunLimit was given
	node        string
	pauseOn     int // WithPauseOnFailures' count, 0 for never
}

const (
	defaultGrace   = time.Second
	defaultCatchUp = 100
)

var defaultConfig = &config{settings: settings{grace: defaultGrace, catchUp: defaultCatchUp, retry: -1}}

// isDefault reports whether c, its Scheduler aside, is defaultConfig.
func (c *config) isDefault() bool {
	d := defaultConfig
	return c.overlap == d.overlap && c.misfire == d.misfire && c.maxParallel == d.maxParallel &&
		c.catchUp == d.catchUp && c.buffer == d.buffer && c.window == d.window && c.jitter == d.jitter && c.maxRuns == d.maxRuns && c.grace == d.grace && c.timeout == d.timeout && c.retry == d.retry &&
		c.attempts == d.attempts && c.backoff == d.backoff && c.since.IsZero() &&
		c.store == nil && c.node == "" && c.observer == nil && c.trace == nil && c.limit == nil && !c.limitSet && c.pauseOn == 0 && c.log == nil
}

// defaultNode is the default Record.Node: the host name and the process id.
var defaultNode = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	return h + "-" + strconv.Itoa(os.Getpid())
})

func (c *config) nodeName() string {
	if c.node != "" {
		return c.node
	}
	return defaultNode()
}

// Preset returns opts as one Option, applied once: the Jobs made with it
// as their only option share its settings instead of holding a copy each,
// which counts for a million jobs. Jobs made with equal options share
// their settings without it, unless an option is a func (WithObserver,
// WithPauseOnFailures), since funcs do not compare, or a Store or
// Scheduler that is not a pointer; Preset shares those too, and saves
// comparing. Given with other options, it is opts, applied where it
// stands.
func Preset(opts ...Option) Option {
	c := *defaultConfig
	for _, o := range opts {
		o.apply(&c)
	}
	c.limitFromStore()
	return preset{&c}
}

type preset struct{ c *config }

func (p preset) apply(c *config) { *c = *p.c }

// shared returns the config of the jobs made with p alone.
func (p preset) shared() *config {
	if p.c.isDefault() {
		return defaultConfig
	}
	return p.c
}

// limitFromStore gives c its Store's RunLimit, unless WithRunLimit was
// given.
func (c *config) limitFromStore() {
	if !c.limitSet {
		if l, ok := c.store.(limited); ok {
			c.limit = l.RunLimit()
		}
	}
}

// WithOverlap sets the policy for a slot that falls due while a run is in
// flight (default OverlapSkip). It panics on an unknown Overlap.
func WithOverlap(o Overlap) Option {
	if o > OverlapBufferAll {
		panic(fmt.Sprintf("schedule: WithOverlap(%d): unknown overlap policy", o))
	}
	return optionFunc(func(c *config) { c.overlap = o })
}

// WithMaxParallel limits the runs in flight under OverlapAllow to n (no
// limit by default, or if n <= 0), on every node sharing a SharedStore. The
// other policies run one at a time.
func WithMaxParallel(n int) Option {
	return optionFunc(func(c *config) { c.maxParallel = max(n, 0) })
}

// WithMisfire sets the policy for missed slots (default MisfireRunOnce).
// It panics on an unknown Misfire.
func WithMisfire(m Misfire) Option {
	if m > MisfireRunAll {
		panic(fmt.Sprintf("schedule: WithMisfire(%d): unknown misfire policy", m))
	}
	return optionFunc(func(c *config) { c.misfire = m })
}

// WithGrace sets how late a slot's run may start and still be on time
// (default 1s). A slot whose run cannot start within d of its due time (of
// its planned start, with WithJitter) is missed, and its fate is the
// Misfire policy's. Keep d above the lateness
// of the job's Scheduler: with d = 0 a run is on time only if the job
// wakes at the very time of its slot, which a real timer seldom does, so
// that MisfireRunOnce runs nearly every slot as a CatchUp and MisfireSkip
// nearly none. A negative d means zero.
func WithGrace(d time.Duration) Option {
	return optionFunc(func(c *config) { c.grace = max(d, 0) })
}

// WithCatchUpLimit sets how many missed slots MisfireRunAll runs at most
// after one gap (default 100). An n < 1 means 1.
func WithCatchUpLimit(n int) Option {
	return optionFunc(func(c *config) { c.catchUp = max(n, 1) })
}

// WithBufferLimit sets how many slots may wait for their turn under
// OverlapBufferAll (default 100): a slot that falls due while n wait is
// Skipped. An n < 1 means 1.
func WithBufferLimit(n int) Option {
	return optionFunc(func(c *config) { c.buffer = max(n, 1) })
}

// defaultBuffer is the default of WithBufferLimit.
const defaultBuffer = 100

// bufferLimit returns the bound of OverlapBufferAll's buffer.
func (c *config) bufferLimit() int {
	if c.buffer == 0 {
		return defaultBuffer
	}
	return c.buffer
}

// WithCatchUpWindow sets how old a missed slot may be and still run: a
// slot missed by more than d is Missed, whatever the Misfire policy, and
// the policy decides the fate of the others. Under MisfireRunOnce the
// latest missed slot runs only if it is within d; under MisfireRunAll the
// slots within d run, up to the catch-up limit. So a job whose process was
// down for a day, with WithCatchUpWindow(time.Hour), runs at most what it
// missed in the last hour. The default, d <= 0, is no window: a missed
// slot of any age is the policy's. Temporal's catch-up window (a year
// by default there); a Kubernetes CronJob's startingDeadlineSeconds.
// A window shorter than the grace period (WithGrace) changes nothing for
// slots whose run starts on time.
func WithCatchUpWindow(d time.Duration) Option {
	return optionFunc(func(c *config) { c.window = max(d, 0) })
}

// WithStore sets the Store where the job claims its slots and records its
// runs (default: the job's own memory of its latest 16 slots). Jobs with
// the same name sharing a Store run each slot once between them. If s is a
// SharedStore, they are one job: the overlap policy holds across all of
// them (see Overlap), a Job that stops hands its runs over to the others,
// and the job renews the lease of each run in flight and takes over the
// claims of its name that a node left (see SharedStore). On a Store that
// is not a SharedStore, the overlap policy holds for each Job alone.
func WithStore(s Store) Option {
	return optionFunc(func(c *config) {
		c.store = s
		c.shared, c.lease = nil, nil
		if ss, ok := s.(SharedStore); ok {
			c.shared = ss
			if ss.Lease() > 0 {
				c.lease = ss
			}
		}
	})
}

// concurrency returns what a claim of the job asks of its runs in flight
// on a SharedStore: one at a time under every policy but OverlapAllow,
// whose WithMaxParallel bounds them; OverlapReplace asks them to end.
func (c *config) concurrency() Concurrency {
	if testMutant == mutantLocalOverlap {
		return Concurrency{}
	}
	switch c.overlap {
	case OverlapAllow:
		return Concurrency{Max: c.maxParallel}
	case OverlapReplace:
		return Concurrency{Max: 1, Replace: true}
	}
	return Concurrency{Max: 1}
}

// WithScheduler sets the Scheduler of the job's timers (default
// circulation.RuntimeScheduler). A wheel.Wheel suits millions of jobs. The
// jobs of one Scheduler share its watch of the wall clock; inside a
// testing/synctest bubble, where a Scheduler that is not a pointer may be
// shared with other bubbles, each such job watches for itself. A pointer
// Scheduler is taken to belong to one bubble: shared by the jobs of two,
// the watch runs in one of them, and a sleep replayed in the other may go
// unnoticed. If s panics in AfterFunc (a stopped wheel.Wheel), the job
// arms nothing: its Next is zero, and Start, Resume and SetSchedule pass
// the panic on to their caller; Stop still returns. The renewal of a
// run's lease on a SharedStore uses the runtime's timers, so that a lease
// is renewed, or given up, on time whatever s does.
func WithScheduler(s circulation.Scheduler) Option {
	return optionFunc(func(c *config) { c.sched = s })
}

// WithTimeout bounds each run: its context is cancelled with
// context.DeadlineExceeded d after it starts, and the run is Failed. Zero,
// the default, or a negative d means no bound.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.timeout = max(d, 0) })
}

// WithClaimRetry bounds how long a claim that fails with a store error is
// tried again: for up to d after its slot's due time (its planned start,
// with WithJitter), with a growing pause
// (50ms, doubling up to 5s). A store that is slow or busy for a moment then
// delays the run instead of skipping it. By default, a claim is tried again
// until three quarters of the way to the slot's next one, so that the next
// slot finds the job free, and under MisfireSkip within the grace period;
// a Manual run within the grace period. With d = 0, a failed claim is not
// tried again: its slot is reported Skipped, and owed as after a store
// outage (see Misfire). A negative d means zero.
func WithClaimRetry(d time.Duration) Option {
	return optionFunc(func(c *config) { c.retry = max(d, 0) })
}

// WithRunLimit makes the job's runs count against l, shared with the other
// jobs given l: at most its limit of runs are in flight at once, and the
// others wait their turn (see RunLimit). By default a job shares its
// Store's RunLimit, if the Store has one, and has no limit otherwise; a
// nil l means no limit, whatever the Store.
func WithRunLimit(l *RunLimit) Option {
	return optionFunc(func(c *config) { c.limit, c.limitSet = l, true })
}

// WithNode sets Record.Node, the name of this replica in the records
// (default: the host name and the process id, "host-1234").
func WithNode(id string) Option {
	return optionFunc(func(c *config) { c.node = id })
}

// WithObserver makes the job pass every Record it completes to f: each run
// once it has ended (Succeeded, Failed, Canceled, Released), and each slot
// that did not run (Skipped, Missed). A slot another replica claimed first
// does not reach f: it is that replica's. A slot that each of several
// replicas skipped, its job being busy, reaches the Observer of each, and
// the store once. A run given up because its lease could not
// be renewed reaches f as Canceled, but its record stays Running in the
// store, for another node to take the slot over. A run's Record reaches f
// once the run no longer counts as in flight, so that a RunNow from f, a
// retry of a Failed run, starts at once under the overlap policy unless
// other runs are queued or in flight; but the Record of a failed attempt
// that WithRetry runs again reaches f as the attempt fails, while its
// slot's run is still in flight. f runs on the job's goroutines, and may
// call the Job's methods (except Stop with a context that outlives f). The
// Records of runs reach f one at a time, in the order the runs ended, but
// under OverlapAllow, where they may come at once; the Records of slots
// that did not run may come at the same time as a run's.
func WithObserver(f func(Record)) Option {
	return optionFunc(func(c *config) { c.observer = f })
}

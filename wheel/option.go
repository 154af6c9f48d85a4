package wheel

import (
	"fmt"
	"math/bits"
	"runtime"
	"time"
)

// An Option configures a Wheel in New.
type Option interface {
	apply(*options)
}

// options holds a Wheel's configuration. Defaults live in defaultOptions.
type options struct {
	tick   time.Duration
	slots  int
	shards int
	inline bool
}

// Defaults, decided by the measurements in doc.go.
const (
	// DefaultTick is the width of the slots of a Wheel made without
	// WithTick.
	DefaultTick = time.Millisecond

	// DefaultSlots is the number of slots per level of a Wheel made
	// without WithSlots. With DefaultTick the first level spans 512 ms, the
	// second 4.4 minutes and the third 37 hours: a timeout of up to a few
	// minutes moves down once before it fires, and a level's occupancy
	// bitmap is 8 words.
	DefaultSlots = 512

	// maxSlots bounds WithSlots: a level's bitmap is scanned linearly.
	maxSlots = 1 << 16

	// maxShards bounds WithShards.
	maxShards = 1 << 10

	// shardsPerProc and maxDefaultShards set the default number of shards:
	// enough that goroutines running at once find shards of their own
	// (see home.go).
	shardsPerProc    = 4
	maxDefaultShards = 64
)

func defaultOptions() options {
	return options{
		tick:   DefaultTick,
		slots:  DefaultSlots,
		shards: min(shardsPerProc*runtime.GOMAXPROCS(0), maxDefaultShards),
	}
}

// validate panics, naming the option, if o holds a value New cannot use.
func (o *options) validate() {
	if o.tick <= 0 {
		panic(fmt.Sprintf("wheel: WithTick(%v): tick must be positive", o.tick))
	}
	if o.slots <= 0 || o.slots > maxSlots {
		panic(fmt.Sprintf("wheel: WithSlots(%d): slots must be in [1, %d]", o.slots, maxSlots))
	}
	if o.shards <= 0 || o.shards > maxShards {
		panic(fmt.Sprintf("wheel: WithShards(%d): shards must be in [1, %d]", o.shards, maxShards))
	}
}

// slotBits is log2 of the number of slots per level: o.slots rounded up
// to a power of two, at least 2.
func (o *options) slotBits() uint {
	return uint(max(1, bits.Len(uint(o.slots-1))))
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithTick sets the width of the wheel's slots. Deadlines are kept
// exactly, to the nanosecond (with a tick longer than 134 ms, to within
// tick/2^27 rounded up to whole nanoseconds, and never earlier: within
// 8 ns for a 1 s tick): the tick only sets how finely the wheel sorts
// them. A callback runs once its deadline has passed and the wheel's
// goroutine has woken, never earlier; only a timer whose deadline falls in
// a tick that starts the span of a slot above level 0 (one tick in
// 512 with the default slots) waits for the end of that tick, so no
// callback runs more than about a tick late. A shorter tick makes the
// levels span less time, so long timers move down more often. The default
// is DefaultTick. New panics if d is not positive.
func WithTick(d time.Duration) Option {
	return optionFunc(func(o *options) { o.tick = d })
}

// WithSlots sets the number of slots per level of the wheel, rounded up to
// a power of two (at least 2, at most 65536). More slots mean fewer
// levels and fewer moves between them; fewer slots mean a smaller wheel.
// The default is DefaultSlots. New panics if n is not positive or too
// large.
func WithSlots(n int) Option {
	return optionFunc(func(o *options) { o.slots = n })
}

// WithShards sets how many independently locked parts the wheel's timers
// are spread over. Each goroutine arms its timers in a shard of its own
// while it can, so goroutines that run at once do not contend. The
// default is 4 × GOMAXPROCS at the time of New, at most 64. New panics if
// n is not in [1, 1024].
func WithShards(n int) Option {
	return optionFunc(func(o *options) { o.shards = n })
}

// WithInlineCallbacks makes the wheel run callbacks on its own goroutine,
// one after another in the order they fell due (within a shard), instead
// of handing them to its runners. It saves a goroutine hand-off, which
// the runners make cheap already (see doc.go), and a callback that blocks
// delays every timer behind it: use it only for callbacks that return
// within a fraction of a tick, such as a non-blocking channel send. A
// Trigger runs its whole task in the callback: never bind one to an inline
// wheel.
func WithInlineCallbacks() Option {
	return optionFunc(func(o *options) { o.inline = true })
}

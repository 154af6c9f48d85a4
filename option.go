package circulation

import (
	"context"
	"time"
)

// An Option configures a Trigger in Bind.
type Option interface {
	apply(*options)
}

type options struct {
	onPanic     func(recovered any)
	minInterval time.Duration
	ctx         context.Context
	observe     func(TriggerEvent)
	stats       bool
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithPanicHandler makes the Trigger recover a panic in its Func and pass the
// recovered value to h (a nil h means no handler). The iteration then counts
// as having returned (0, false): the Trigger stops circulating, except that
// a fire made during the failed run still runs. h runs on the Func's
// goroutine, before the next run can start; a panic in h propagates.
//
// h also receives a panic of the Scheduler's AfterFunc when the Trigger
// arms the next run that a Func asked for (a stopped wheel.Wheel panics so).
// That call comes after the run has given up the Trigger, so it may overlap
// the next run, and another call of h. Without a handler, such a panic is
// dropped, and the Trigger rests until the next Fire.
//
// Without this option a panic in the Func crashes the program, as a panic in
// a time.AfterFunc callback does; the Trigger's state is restored first, so a
// Scheduler that recovers panics leaves the Trigger usable.
func WithPanicHandler(h func(recovered any)) Option {
	return optionFunc(func(o *options) { o.onPanic = h })
}

// WithMinInterval makes the Trigger start its runs at least d apart, by the
// runtime's clock, counted from one run's start to the next's. A run that
// falls due sooner, whether a fire asked for it or the Func did with its
// own answer, waits until d has passed since the last start; fires made
// meanwhile coalesce into it, and the latest call still wins (a Suspend
// cancels it; a FireAfter due later than the wait replaces it). A d of zero
// or less means no minimum.
//
// The minimum is not kept for the runs that Shutdown lets happen: they run
// at once.
func WithMinInterval(d time.Duration) Option {
	return optionFunc(func(o *options) { o.minInterval = max(d, 0) })
}

// WithContext makes the contexts of the Trigger's runs derive from ctx: they
// carry its values and report its deadline. When ctx is done, the Trigger
// closes, as Close would without waiting: the run in flight, if any, is
// cancelled, and every later Fire, FireAfter and FireWithin does nothing. A
// ctx that is already done gives a closed Trigger. A nil ctx means no
// parent.
func WithContext(ctx context.Context) Option {
	return optionFunc(func(o *options) { o.ctx = ctx })
}

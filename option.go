package circulation

// An Option configures a Trigger in Bind.
type Option interface {
	apply(*options)
}

type options struct {
	onPanic func(recovered any)
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

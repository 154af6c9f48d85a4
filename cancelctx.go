package circulation

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A cancelContext is the context a run of a Trigger's Func gets, and the
// base of a Supervisor's attempt: it is done once cancel is called, with
// context.Canceled or context.DeadlineExceeded. It has no deadline and
// carries no values; parentedContext adds a parent's.
//
// It implements context.Context itself rather than coming from
// context.WithCancel: a run then costs one allocation, and the channel of
// Done is made only if the Func asks for it. Its AfterFunc method lets the
// context package derive contexts from it without a goroutine each, as it
// does from its own. Its zero value is a live context.
type cancelContext struct {
	state atomic.Uint32 // ctxCanceled | ctxDeadline | ctxWatched: lets cancel and Err skip mu while nobody watches

	cancelMu sync.Mutex // held by cancel while it runs the funcs, so that no cancel returns before they have run

	mu     sync.Mutex
	done   chan struct{}        // made by Done on demand; closed once cancelled
	closed bool                 // done is closed, or would be: set with it, under mu
	funcs  map[*func()]struct{} // registered by AfterFunc until cancel runs them
}

const (
	ctxCanceled uint32 = 1 << iota // cancel has been called
	ctxDeadline                    // with context.DeadlineExceeded
	ctxWatched                     // Done or AfterFunc was called: cancel and Err take mu
)

// Deadline reports that the context has no deadline.
func (*cancelContext) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns a channel that is closed when the context is cancelled.
func (c *cancelContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		// Either cancel's compare-and-swap saw ctxWatched and closes
		// done under mu, after this, or this Or sees ctxCanceled and
		// closes it here.
		canceled := c.state.Or(ctxWatched)&ctxCanceled != 0
		if canceled || c.closed { // closed: AfterFunc saw the cancel before done existed
			c.closed = true
			close(c.done)
		}
	}
	return c.done
}

// Err returns nil until the context is cancelled, then why. Once anyone
// watches the context, Err changes together with Done, under mu.
func (c *cancelContext) Err() error {
	s := c.state.Load()
	if s&ctxWatched != 0 {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if !closed {
			return nil
		}
		s = c.state.Load()
	}
	switch {
	case s&ctxCanceled == 0:
		return nil
	case s&ctxDeadline != 0:
		return context.DeadlineExceeded
	}
	return context.Canceled
}

// Value returns nil: the context carries no values.
func (*cancelContext) Value(any) any { return nil }

// A parentedContext is the context of a run of a Trigger bound
// WithContext: a cancelContext that reports its parent's deadline and
// carries its values. The parent does not cancel it: the Trigger does,
// when it closes at the parent's end.
type parentedContext struct {
	cancelContext
	parent context.Context
}

// Deadline reports the parent's deadline.
func (c *parentedContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Value returns the parent's value for key.
func (c *parentedContext) Value(key any) any { return c.parent.Value(key) }

// String names the context, as the context package's own do.
func (*cancelContext) String() string { return "circulation.run" }

// AfterFunc arranges for f to run once the context is cancelled, and returns
// a function that prevents that and reports whether it did. It is how the
// context package cancels the contexts derived from this one: it passes an f
// that cancels one, as context.WithCancel cancels its children. So cancel
// calls f itself, synchronously, right after it closes Done. It is not meant
// for other callers: a user function belongs in context.AfterFunc, which
// runs it in a goroutine of its own. If the context is already cancelled, f
// starts in a goroutine, since the caller may hold a lock that f takes.
func (c *cancelContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.Or(ctxWatched)&ctxCanceled != 0 {
		c.close()
		go f()
		return func() bool { return false }
	}
	key := &f
	if c.funcs == nil {
		c.funcs = make(map[*func()]struct{})
	}
	c.funcs[key] = struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.funcs[key]
		delete(c.funcs, key)
		return ok
	}
}

// cancel cancels the context with err, context.Canceled or
// context.DeadlineExceeded, unless it already is, and reports whether it
// did. While nobody watches the context, that is one atomic operation.
// Otherwise every call waits until Done is closed and the contexts derived
// from this one are cancelled, whoever got there first. Done and AfterFunc
// set ctxWatched under mu before they look for ctxCanceled, so one of the
// two sides always sees the other. The funcs run without mu, since they
// call Err.
func (c *cancelContext) cancel(err error) bool {
	bits := ctxCanceled
	if err == context.DeadlineExceeded {
		bits |= ctxDeadline
	}
	s := c.state.Load()
	for s&ctxCanceled == 0 && !c.state.CompareAndSwap(s, s|bits) {
		s = c.state.Load()
	}
	won := s&ctxCanceled == 0
	if won && s&ctxWatched == 0 {
		return true
	}
	// Someone watches: whichever cancel takes cancelMu first closes done
	// and runs the funcs, and the others wait for it.
	c.cancelMu.Lock()
	defer c.cancelMu.Unlock()
	c.mu.Lock()
	c.close()
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	for f := range funcs {
		(*f)()
	}
	return won
}

// close marks the context cancelled for Err and closes done if it exists,
// once. The caller holds mu.
func (c *cancelContext) close() {
	if !c.closed {
		c.closed = true
		if c.done != nil {
			close(c.done)
		}
	}
}

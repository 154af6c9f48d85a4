package circulation

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A runContext is the context an iteration of a Trigger's Func gets. It is
// cancelled when a Suspend or Stop supersedes the iteration, and when the
// iteration returns, with context.Canceled. It has no deadline and carries
// no values.
//
// It implements context.Context itself rather than coming from
// context.WithCancel: an iteration then costs one allocation, and the
// channel of Done is made only if the Func asks for it. Its AfterFunc
// method lets the context package derive contexts from it without a
// goroutine each, as it does from its own.
type runContext struct {
	state atomic.Uint32 // ctxCanceled | ctxWatched: lets cancel and Err skip mu while nobody watches

	cancelMu sync.Mutex // held by cancel while it runs the funcs, so that no cancel returns before they have run

	mu     sync.Mutex
	done   chan struct{}        // made by Done on demand; closed once cancelled
	closed bool                 // done is closed, or would be: set with it, under mu
	funcs  map[*func()]struct{} // registered by AfterFunc until cancel runs them
}

const (
	ctxCanceled uint32 = 1 << iota // cancel has been called
	ctxWatched                     // Done or AfterFunc was called: cancel and Err take mu
)

// Deadline reports that a run has no deadline.
func (*runContext) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns a channel that is closed when the run is cancelled.
func (c *runContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		// Either cancel's Or saw ctxWatched and closes done under mu,
		// after this, or this Or sees ctxCanceled and closes it here.
		canceled := c.state.Or(ctxWatched)&ctxCanceled != 0
		if canceled || c.closed { // closed: AfterFunc saw the cancel before done existed
			c.closed = true
			close(c.done)
		}
	}
	return c.done
}

// Err returns nil until the run is cancelled, then context.Canceled. Once
// anyone watches the context, Err changes together with Done, under mu.
func (c *runContext) Err() error {
	s := c.state.Load()
	if s&ctxWatched != 0 {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.closed {
			return nil
		}
	} else if s&ctxCanceled == 0 {
		return nil
	}
	return context.Canceled
}

// Value returns nil: a run's context carries no values.
func (*runContext) Value(any) any { return nil }

// String names the context, as the context package's own do.
func (*runContext) String() string { return "circulation.run" }

// AfterFunc arranges for f to run once the context is cancelled, and returns
// a function that prevents that and reports whether it did. It is how the
// context package cancels the contexts derived from this one: it passes an f
// that cancels one, as context.WithCancel cancels its children. So cancel
// calls f itself, synchronously, right after it closes Done. It is not meant
// for other callers: a user function belongs in context.AfterFunc, which
// runs it in a goroutine of its own. If the context is already cancelled, f
// starts in a goroutine, since the caller may hold a lock that f takes.
func (c *runContext) AfterFunc(f func()) (stop func() bool) {
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

// cancel cancels the context. While nobody watches it, that is one atomic
// operation. Otherwise every call waits until Done is closed and the
// contexts derived from this one are cancelled, whoever got there first.
// Done and AfterFunc set ctxWatched under mu before they look for
// ctxCanceled, so one of the two sides always sees the other. The funcs run
// without mu, since they call Err.
func (c *runContext) cancel() {
	if c.state.Or(ctxCanceled)&ctxWatched == 0 {
		return
	}
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
}

// close marks the context cancelled for Err and closes done if it exists,
// once. The caller holds mu.
func (c *runContext) close() {
	if !c.closed {
		c.closed = true
		if c.done != nil {
			close(c.done)
		}
	}
}

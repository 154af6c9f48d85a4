package circulation

import (
	"context"
	"sync"
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
	mu    sync.Mutex
	done  chan struct{}        // made by Done on demand; closed by cancel
	err   error                // set once, by cancel
	funcs map[*func()]struct{} // registered by AfterFunc until cancel runs them
}

// Deadline reports that a run has no deadline.
func (*runContext) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns a channel that is closed when the run is cancelled.
func (c *runContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err returns nil until the run is cancelled, then context.Canceled.
func (c *runContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value returns nil: a run's context carries no values.
func (*runContext) Value(any) any { return nil }

// String names the context, as the context package's own do.
func (*runContext) String() string { return "circulation.run" }

// AfterFunc arranges for f to run once the context is cancelled, and returns
// a function that prevents that and reports whether it did. It is how the
// context package cancels the contexts derived from this one: it passes an f
// that cancels one, as context.WithCancel cancels its children (user
// functions of context.AfterFunc get goroutines of their own). So cancel
// calls f itself, right after it closes Done. If the context is already
// cancelled, f starts in a goroutine, since the caller may hold a lock that
// f takes.
func (c *runContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
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

// cancel cancels the context, unless it already is: Err and Done change
// together, under mu. Then, with no lock held (they call Err), it calls the
// functions registered with AfterFunc.
func (c *runContext) cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	for f := range funcs {
		(*f)()
	}
}

package circulation

import (
	"sync"
	"time"
)

// An attempt is one call of a Supervisor's task, and the context the task
// gets. It is done at the Timeout, with Err context.DeadlineExceeded, and
// when Suspend or Stop cancels it or the task returns, with Err
// context.Canceled. It carries no values.
//
// It implements context.Context itself rather than wrapping one from the
// context package: an attempt then costs one allocation, and its channel
// is made only if the task asks for it. Its AfterFunc method lets the
// context package derive contexts from it without a goroutine each, as it
// does from its own.
type attempt struct {
	deadline time.Time // zero without a Timeout; written before the task starts

	mu    sync.Mutex
	done  chan struct{}        // made by Done on demand; closed by cancel
	err   error                // set once, by cancel
	funcs map[*func()]struct{} // registered by AfterFunc until cancel runs them

	// flags is written with Supervisor.mu held: by begin, and by end with
	// what the coord knew of the attempt when it ended; goexit reads it.
	flags attemptFlags
}

// Deadline reports when the attempt times out: its start plus the Timeout,
// by the runtime's clock. The Scheduler decides when the timeout happens.
func (a *attempt) Deadline() (time.Time, bool) { return a.deadline, !a.deadline.IsZero() }

// Done returns a channel that is closed when the attempt is done.
func (a *attempt) Done() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done == nil {
		a.done = make(chan struct{})
		if a.err != nil {
			close(a.done)
		}
	}
	return a.done
}

// Err returns nil until the attempt is done, then why.
func (a *attempt) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Value returns nil: an attempt carries no values.
func (a *attempt) Value(any) any { return nil }

// AfterFunc arranges for f to run once the attempt is done, and returns a
// function that prevents that and reports whether it did. It is how the
// context package cancels the contexts derived from an attempt: it passes
// an f that cancels one, as a context.WithCancel cancels its children
// (user functions of context.AfterFunc get goroutines of their own). So
// cancel calls f itself, right after it closes Done. If the attempt is
// already done, f starts in a goroutine, since the caller may hold a lock
// that f takes.
func (a *attempt) AfterFunc(f func()) (stop func() bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		go f()
		return func() bool { return false }
	}
	key := &f
	if a.funcs == nil {
		a.funcs = make(map[*func()]struct{})
	}
	a.funcs[key] = struct{}{}
	return func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, ok := a.funcs[key]
		delete(a.funcs, key)
		return ok
	}
}

// cancel makes the attempt done with err, unless it already is, and
// reports whether it did: Err and Done change together, under mu. Then,
// with no lock held (they call Err), it calls the functions registered with
// AfterFunc. The Supervisor calls cancel without holding its own mutex.
func (a *attempt) cancel(err error) bool {
	a.mu.Lock()
	if a.err != nil {
		a.mu.Unlock()
		return false
	}
	a.err = err
	if a.done != nil {
		close(a.done)
	}
	funcs := a.funcs
	a.funcs = nil
	a.mu.Unlock()
	for f := range funcs {
		(*f)()
	}
	return true
}

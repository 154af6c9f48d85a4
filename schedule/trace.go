package schedule

import (
	"context"
	"time"
)

// A Trace is a set of hooks that a Job calls as its runs start and end, and
// as it meets the events of a store shared by replicas, for metrics and
// tracing: the module github.com/circulation-go/circulation/otel makes one
// on OpenTelemetry. It is to a Job what net/http/httptrace.ClientTrace is
// to a request: any field may be nil, and a nil field costs a nil check.
//
// The hooks run on the job's goroutines, may be called concurrently (for
// the runs of several jobs, and under OverlapAllow for the runs of one),
// and must be quick: RunStart and RunEnd delay the run, the others the
// job's claims and leases. They must not call the Job's methods, but for
// Name. A Trace must not be changed once given to WithTrace.
type Trace struct {
	// RunStart is called as each attempt of a run starts, once its slot is
	// claimed and before its Func is called, with the run's context and
	// the claim's Record (Status Running; its Start is when the claim was
	// sent, and a Recovered run's is when it was taken over). The Func
	// runs under the context it returns, which must be ctx or a context
	// made from ctx, by context.WithValue for instance, with no
	// cancellation of its own; nil means ctx.
	RunStart func(ctx context.Context, rec Record) context.Context

	// RunEnd is called once for each call of RunStart, with the context
	// RunStart returned, as the attempt's outcome is known (Succeeded,
	// Failed, Canceled, Released; the last attempt's once it is written
	// to the store), with the Record that the Observer gets, and before
	// it does. A Func that calls
	// runtime.Goexit leaves its run without an outcome and the Observer
	// without its Record; RunEnd gets one Failed, with an Err that says
	// so. The runs in flight are the calls of RunStart less those of
	// RunEnd.
	RunEnd func(ctx context.Context, rec Record)

	// NotRun is called with the Record of each slot that did not run
	// (Skipped, Missed), as the Observer is, and before it.
	NotRun func(rec Record)

	// ClaimLost is called when another Job of the job's name, on this
	// node or another, claimed a slot first (ErrClaimed): the slot is
	// that Job's, and the Observer does not hear of it.
	ClaimLost func(r Run)

	// TakeOver is called when the job took over a claim of its name that
	// a node left (SharedStore.Reclaim), with the claim as taken over,
	// before its run starts: the "claim taken over" line of WithLogger.
	TakeOver func(rec Record)

	// LeaseLost is called when a run was cancelled because its lease was
	// lost (ErrLeaseLost) or could not be renewed for a full lease
	// (ErrLeaseNotRenewed), with the claim and the cause: the "lease
	// lost" line of WithLogger. The run is cancelled first, so that its
	// RunEnd may come before LeaseLost or after it.
	LeaseLost func(rec Record, err error)

	// StoreFailed is called for each failure of the store that WithLogger
	// counts toward an outage: a claim, a Start's read of the last
	// record, or the Finish or Release of a run's outcome, that failed
	// with an error other than ErrClaimed, ErrBusy, ErrLeaseLost and
	// ErrNoRecord.
	StoreFailed func(job string, err error)
}

// WithTrace makes the job call the hooks of t (see Trace), beside its
// Observer, if any. A nil t, the default, means none. The Jobs sharing a
// Preset share its Trace.
func WithTrace(t *Trace) Option {
	return optionFunc(func(c *config) { c.trace = t })
}

// traceStart calls the Trace's RunStart, if any, for the attempt of p
// about to run under ctx, the run's, and returns the context the Func is
// to run under, which it keeps in p.ended for RunEnd, if there is one.
//
//go:noinline
func (j *Job) traceStart(ctx context.Context, p *pending) context.Context {
	t := j.cfg.trace
	if t.RunStart != nil {
		if c := t.RunStart(ctx, j.claimed(p)); c != nil {
			ctx = c
		}
	}
	if t.RunEnd != nil {
		p.ended = &ended{trace: ctx}
	}
	return ctx
}

// claimLost calls the Trace's ClaimLost, if any, for the slot of p.
//
//go:noinline
func (j *Job) claimLost(p *pending) {
	if t := j.cfg.trace; t.ClaimLost != nil {
		t.ClaimLost(p.run)
	}
}

// traceGoexit calls the Trace's RunEnd, if any, for the attempt of p,
// whose Func called runtime.Goexit.
//
//go:noinline
func (j *Job) traceGoexit(p *pending) {
	j.traceEnd(p, time.Now().Round(0), Failed, msgGoexit)
}

// traceEnd calls the Trace's RunEnd, if any, for the attempt of p, which
// ended at end, with the context traceStart kept, once: the attempt's
// RunEnd is then done.
//
//go:noinline
func (j *Job) traceEnd(p *pending, end time.Time, status Status, msg string) {
	e := p.ended
	if e == nil || e.trace == nil {
		return
	}
	ctx := e.trace
	e.trace = nil
	if t := j.cfg.trace; t.RunEnd != nil {
		rec := j.claimed(p)
		rec.End, rec.Status, rec.Err = end, status, msg
		t.RunEnd(ctx, rec)
	}
}

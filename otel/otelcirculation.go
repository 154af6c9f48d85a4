// Package otelcirculation exports what circulation's jobs, cron Tables and
// SQL stores do as OpenTelemetry metrics and traces, on OpenTelemetry's
// API: the application brings the SDK and its exporters (Prometheus, OTLP),
// as it does for River's otelriver.
//
//	tel, err := otelcirculation.New() // the global MeterProvider and TracerProvider
//	...
//	j := schedule.NewJob("report", schedule.Every(time.Hour), report, tel.JobOption())
//	tab := cron.NewTable(handlers, cron.WithJobOptions(tel.JobOption()))
//	reg, err := tel.ObserveTable("tasks", tab)
//	store, err := sqlstore.New(ctx, db, sqlstore.PostgreSQL, sqlstore.WithStatementHook(tel.Statement))
//
// The metrics (attributes after "by"; a cron Table's jobs are its tasks):
//
//	circulation.runs             counter {run}: attempts of runs ended, and slots that did not run (Skipped, Missed), by job, status, reason
//	circulation.run.duration     histogram s: each attempt, from its claim to its end, by job, status, reason
//	circulation.run.lateness     histogram s: from when a run was meant to start (Planned, or else Due) to its claim, by job, reason;
//	                             first attempts of Scheduled, CatchUp and Manual runs
//	circulation.run.active       up-down counter {run}: attempts in flight, by job
//	circulation.claim.lost       counter {claim}: slots that another Job of the name claimed first, by job
//	circulation.claim.takeovers  counter {claim}: claims that a dead or stopping node left, taken over here, by job
//	circulation.lease.lost       counter {lease}: runs cancelled because their lease was lost, or not renewed in time, by job
//	circulation.store.failures   counter {failure}: claims, reads, finishes that failed with a store error, by job
//	circulation.store.duration   histogram s: each exchange of a sqlstore.Store with its database, by op, error
//	circulation.store.calls      counter {call}: the calls those exchanges carried, by op
//	circulation.table.tasks      gauge {task}: the tasks of each Table observed, by table
//
// Each attempt of a run has a span, SpanName, from its claim to its end,
// with the attributes job, due, attempt, reason, node, planned (with a
// jitter) and status, and err for a run Canceled or Released; a Failed
// run's span has the status Error, with the run's error. The Func runs
// under the span's context: the spans of its work are its children.
//
// A job, Table or Store that is not given these hooks pays nothing for
// them: each hook of schedule.Trace and sqlstore.WithStatementHook is a
// nil check where it is not set. docs/otel.md says what a run costs with
// them.
package otelcirculation

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/circulation-go/circulation/schedule"
)

// ScopeName is the name of the instrumentation scope of the Meter and
// Tracer a Telemetry uses.
const ScopeName = "github.com/circulation-go/circulation/otel"

// A Telemetry records what the jobs, Tables and Stores given its hooks do,
// as metrics and spans. It is safe for concurrent use, and may be shared
// by any number of jobs, Tables and Stores. Make one with New.
type Telemetry struct {
	tracer trace.Tracer
	meter  metric.Meter
	trace  *schedule.Trace

	runs      metric.Int64Counter
	duration  metric.Float64Histogram
	lateness  metric.Float64Histogram
	active    metric.Int64UpDownCounter
	lost      metric.Int64Counter
	takeovers metric.Int64Counter
	leases    metric.Int64Counter
	failures  metric.Int64Counter
	store     metric.Float64Histogram
	calls     metric.Int64Counter
	tasks     metric.Int64ObservableGauge
}

// An Option configures a Telemetry in New.
type Option interface {
	apply(*options)
}

type options struct {
	mp metric.MeterProvider
	tp trace.TracerProvider
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithMeterProvider sets the MeterProvider of the metrics (default
// otel.GetMeterProvider(), as it is when New is called). A nil mp means the
// default.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(o *options) { o.mp = mp })
}

// WithTracerProvider sets the TracerProvider of the spans (default
// otel.GetTracerProvider(), as it is when New is called). A nil tp means
// the default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(o *options) { o.tp = tp })
}

// The bucket boundaries of the histograms, in seconds: runs last from
// milliseconds to an hour, are late by a millisecond or by an outage, and
// a store answers within a lease.
var (
	durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	latenessBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600}
	storeBuckets    = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// New returns a Telemetry whose instruments are made on the MeterProvider
// and TracerProvider of the options. It returns the provider's error if an
// instrument cannot be made.
func New(opts ...Option) (*Telemetry, error) {
	var o options
	for _, opt := range opts {
		opt.apply(&o)
	}
	if o.mp == nil {
		o.mp = otel.GetMeterProvider()
	}
	if o.tp == nil {
		o.tp = otel.GetTracerProvider()
	}
	m := o.mp.Meter(ScopeName)
	t := &Telemetry{tracer: o.tp.Tracer(ScopeName), meter: m}
	var errs [11]error
	t.runs, errs[0] = m.Int64Counter("circulation.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Runs' attempts ended, and slots that did not run, by job, status and reason."))
	t.duration, errs[1] = m.Float64Histogram("circulation.run.duration", metric.WithUnit("s"),
		metric.WithDescription("How long each run's attempt took, from its claim to its end."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	t.lateness, errs[2] = m.Float64Histogram("circulation.run.lateness", metric.WithUnit("s"),
		metric.WithDescription("How late each run's attempt was claimed, after its planned start or due time."),
		metric.WithExplicitBucketBoundaries(latenessBuckets...))
	t.active, errs[3] = m.Int64UpDownCounter("circulation.run.active", metric.WithUnit("{run}"),
		metric.WithDescription("Runs in flight."))
	t.lost, errs[4] = m.Int64Counter("circulation.claim.lost", metric.WithUnit("{claim}"),
		metric.WithDescription("Slots that another Job of the name claimed first."))
	t.takeovers, errs[5] = m.Int64Counter("circulation.claim.takeovers", metric.WithUnit("{claim}"),
		metric.WithDescription("Claims that a node left, taken over."))
	t.leases, errs[6] = m.Int64Counter("circulation.lease.lost", metric.WithUnit("{lease}"),
		metric.WithDescription("Runs cancelled because their lease was lost or could not be renewed."))
	t.failures, errs[7] = m.Int64Counter("circulation.store.failures", metric.WithUnit("{failure}"),
		metric.WithDescription("Claims and reads of the last record that failed with a store error."))
	t.store, errs[8] = m.Float64Histogram("circulation.store.duration", metric.WithUnit("s"),
		metric.WithDescription("How long each exchange of a SQL store with its database took."),
		metric.WithExplicitBucketBoundaries(storeBuckets...))
	t.calls, errs[9] = m.Int64Counter("circulation.store.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Calls of a SQL store carried by its exchanges with its database."))
	t.tasks, errs[10] = m.Int64ObservableGauge("circulation.table.tasks", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks a cron Table runs."))
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	t.trace = &schedule.Trace{
		RunStart:    t.runStart,
		RunEnd:      t.runEnd,
		NotRun:      t.notRun,
		ClaimLost:   t.claimLost,
		TakeOver:    t.takeOver,
		LeaseLost:   t.leaseLost,
		StoreFailed: t.storeFailed,
	}
	return t, nil
}

// Trace returns the hooks that record a job's runs: give them to its
// schedule.Job with schedule.WithTrace, or JobOption.
func (t *Telemetry) Trace() *schedule.Trace { return t.trace }

// JobOption is schedule.WithTrace(t.Trace()), for schedule.NewJob,
// schedule.Preset and cron.WithJobOptions.
func (t *Telemetry) JobOption() schedule.Option { return schedule.WithTrace(t.trace) }

// The attributes' keys.
const (
	keyJob     = attribute.Key("job")
	keyStatus  = attribute.Key("status")
	keyReason  = attribute.Key("reason")
	keyDue     = attribute.Key("due")
	keyAttempt = attribute.Key("attempt")
	keyNode    = attribute.Key("node")
	keyPlanned = attribute.Key("planned")
	keyOp      = attribute.Key("op")
	keyError   = attribute.Key("error")
	keyTable   = attribute.Key("table")
	keyErr     = attribute.Key("err")
)

// background is the context of the measurements that no run's context
// carries.
var background = context.Background()

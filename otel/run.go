package otelcirculation

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/circulation-go/circulation/schedule"
)

// SpanName is the name of the span of each attempt of a run. The job is
// an attribute: a name per job would make as many span names as a cron
// Table has tasks.
const SpanName = "circulation.run"

// runStart is the Trace's RunStart: it counts the attempt in flight,
// records how late its run was claimed, and starts its span at the claim.
func (t *Telemetry) runStart(ctx context.Context, rec schedule.Record) context.Context {
	job := keyJob.String(rec.Job)
	t.active.Add(ctx, 1, metric.WithAttributes(job))
	if rec.Attempt == 1 && (rec.Reason == schedule.Scheduled || rec.Reason == schedule.CatchUp || rec.Reason == schedule.Manual) {
		meant := rec.Due
		if !rec.Planned.IsZero() {
			meant = rec.Planned
		}
		t.lateness.Record(ctx, max(rec.Start.Sub(meant).Seconds(), 0),
			metric.WithAttributes(job, keyReason.String(rec.Reason.String())))
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, job, keyDue.String(rec.Due.UTC().Format(time.RFC3339Nano)), keyAttempt.Int(rec.Attempt),
		keyReason.String(rec.Reason.String()), keyNode.String(rec.Node))
	if !rec.Planned.IsZero() {
		attrs = append(attrs, keyPlanned.String(rec.Planned.UTC().Format(time.RFC3339Nano)))
	}
	ctx, _ = t.tracer.Start(ctx, SpanName, trace.WithTimestamp(rec.Start), trace.WithAttributes(attrs...),
		trace.WithSpanKind(trace.SpanKindInternal))
	return ctx
}

// runEnd is the Trace's RunEnd: it counts the attempt by its outcome,
// records its duration, and ends its span, an Error if it Failed.
func (t *Telemetry) runEnd(ctx context.Context, rec schedule.Record) {
	job := keyJob.String(rec.Job)
	status := keyStatus.String(rec.Status.String())
	outcome := metric.WithAttributes(job, status, keyReason.String(rec.Reason.String()))
	t.runs.Add(ctx, 1, outcome)
	t.duration.Record(ctx, max(rec.End.Sub(rec.Start).Seconds(), 0), outcome)
	t.active.Add(ctx, -1, metric.WithAttributes(job))
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(status)
	switch {
	case rec.Status == schedule.Failed:
		span.SetStatus(codes.Error, rec.Err)
	case rec.Err != "":
		span.SetAttributes(keyErr.String(rec.Err)) // why it was Canceled or Released
	}
	span.End(trace.WithTimestamp(rec.End))
}

// notRun is the Trace's NotRun: it counts the slot by its status.
func (t *Telemetry) notRun(rec schedule.Record) {
	t.runs.Add(background, 1, metric.WithAttributes(keyJob.String(rec.Job), keyStatus.String(rec.Status.String()),
		keyReason.String(rec.Reason.String())))
}

func (t *Telemetry) claimLost(r schedule.Run) {
	t.lost.Add(background, 1, metric.WithAttributes(keyJob.String(r.Job)))
}

func (t *Telemetry) takeOver(rec schedule.Record) {
	t.takeovers.Add(background, 1, metric.WithAttributes(keyJob.String(rec.Job)))
}

func (t *Telemetry) leaseLost(rec schedule.Record, _ error) {
	t.leases.Add(background, 1, metric.WithAttributes(keyJob.String(rec.Job)))
}

func (t *Telemetry) storeFailed(job string, _ error) {
	t.failures.Add(background, 1, metric.WithAttributes(keyJob.String(job)))
}

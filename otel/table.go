package otelcirculation

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/circulation-go/circulation/cron"
)

// ObserveTable makes the gauge circulation.table.tasks report the tasks of
// tab (cron.Table.Len), under the attribute table=name, at each collection,
// until the Registration is unregistered. The Table's runs are recorded by
// its jobs' Trace: give the Table t.JobOption() with cron.WithJobOptions.
// ObserveTable panics if tab is nil.
func (t *Telemetry) ObserveTable(name string, tab *cron.Table) (metric.Registration, error) {
	if tab == nil {
		panic("otelcirculation: ObserveTable with a nil Table")
	}
	table := metric.WithAttributes(keyTable.String(name))
	return t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(t.tasks, int64(tab.Len()), table)
		return nil
	}, t.tasks)
}

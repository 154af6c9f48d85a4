package otelcirculation_test

import (
	"context"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	otelcirculation "github.com/circulation-go/circulation/otel"
	"github.com/circulation-go/circulation/schedule"
)

// A job given a Telemetry's hooks counts its runs; here the SDK's
// ManualReader reads them back, where a service would export them.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	tel, err := otelcirculation.New(otelcirculation.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}

	ended := make(chan struct{})
	j := schedule.NewJob("report", schedule.Every(time.Hour), func(context.Context, schedule.Run) error {
		return nil
	}, tel.JobOption(), schedule.WithObserver(func(schedule.Record) { close(ended) }))
	if err := j.Start(context.Background()); err != nil {
		panic(err)
	}
	j.RunNow()
	<-ended // the run's outcome is recorded, and counted
	if err := j.Stop(context.Background()); err != nil {
		panic(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "circulation.runs" {
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				job, _ := p.Attributes.Value("job")
				status, _ := p.Attributes.Value("status")
				reason, _ := p.Attributes.Value("reason")
				fmt.Printf("%s %s %s: %d\n", job.AsString(), status.AsString(), reason.AsString(), p.Value)
			}
		}
	}
	// Output:
	// report Succeeded Manual: 1
}

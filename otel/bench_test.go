package otelcirculation_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	otelcirculation "github.com/circulation-go/circulation/otel"
	"github.com/circulation-go/circulation/schedule"
)

// BenchmarkRun measures one run from start to end, as schedule's
// BenchmarkRunCycle does (RunNow on a started job whose Func signals the
// loop; its claim and finish in the job's MemoryStore), without hooks
// (hooks=none) and with a Telemetry's (hooks=otel) on the SDK's
// MeterProvider, read by a ManualReader, and its TracerProvider, which
// samples every span and exports none: the cost of the metrics and the
// span of a run is the ratio of the two.
//
//	cd otel && go test -run '^$' -bench Run -count 10 .
func BenchmarkRun(b *testing.B) {
	for _, hooks := range []string{"none", "otel"} {
		b.Run("hooks="+hooks, func(b *testing.B) {
			opts := []schedule.Option{schedule.WithOverlap(schedule.OverlapBufferOne)}
			if hooks == "otel" {
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				tp := sdktrace.NewTracerProvider()
				defer mp.Shutdown(context.Background())
				defer tp.Shutdown(context.Background())
				tel, err := otelcirculation.New(otelcirculation.WithMeterProvider(mp), otelcirculation.WithTracerProvider(tp))
				if err != nil {
					b.Fatal(err)
				}
				opts = append(opts, tel.JobOption())
			}
			ran := make(chan struct{})
			j := schedule.NewJob("j", schedule.Every(time.Hour), func(context.Context, schedule.Run) error {
				ran <- struct{}{}
				return nil
			}, opts...)
			if err := j.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				j.RunNow()
				<-ran
			}
			b.StopTimer()
			if err := j.Stop(context.Background()); err != nil {
				b.Fatal(err)
			}
		})
	}
}

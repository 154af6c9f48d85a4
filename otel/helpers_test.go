package otelcirculation_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	otelcirculation "github.com/circulation-go/circulation/otel"
)

// An sdk is the OpenTelemetry SDK, as an application sets it up, with a
// reader and a recorder for the tests to read back what was exported.
type sdk struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	mp     *sdkmetric.MeterProvider
	tp     *sdktrace.TracerProvider
	tel    *otelcirculation.Telemetry
}

func newSDK(t *testing.T) *sdk {
	t.Helper()
	s := &sdk{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	s.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
	t.Cleanup(func() {
		_ = s.mp.Shutdown(context.Background())
		_ = s.tp.Shutdown(context.Background())
	})
	var err error
	s.tel, err = otelcirculation.New(otelcirculation.WithMeterProvider(s.mp), otelcirculation.WithTracerProvider(s.tp))
	require.NoError(t, err)
	return s
}

// collect reads the metrics, by name.
func (s *sdk) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, otelcirculation.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// key names a data point by its attributes, "k=v,k=v" in the order of
// the keys.
func key(set attribute.Set) string {
	s := ""
	for i, kv := range set.ToSlice() {
		if i > 0 {
			s += ","
		}
		s += string(kv.Key) + "=" + kv.Value.String()
	}
	return s
}

// ints returns the points of an int64 sum or gauge, by key.
func ints(t *testing.T, m metricdata.Metrics) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out[key(p.Attributes)] = p.Value
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out[key(p.Attributes)] = p.Value
		}
	default:
		t.Fatalf("%s: %T is not an int64 sum or gauge", m.Name, m.Data)
	}
	return out
}

// counts returns the count of each point of a float64 histogram, by key.
func counts(t *testing.T, m metricdata.Metrics) map[string]uint64 {
	t.Helper()
	d, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s: %T is not a float64 histogram", m.Name, m.Data)
	out := map[string]uint64{}
	for _, p := range d.DataPoints {
		out[key(p.Attributes)] = p.Count
	}
	return out
}

// sums returns the sum of each point of a float64 histogram, by key.
func sums(t *testing.T, m metricdata.Metrics) map[string]float64 {
	t.Helper()
	d, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s: %T is not a float64 histogram", m.Name, m.Data)
	out := map[string]float64{}
	for _, p := range d.DataPoints {
		out[key(p.Attributes)] = p.Sum
	}
	return out
}

// attrs returns a span's attributes as strings, by key.
func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

// quiet keeps the jobs' log lines out of the tests' output.
var quiet = slog.New(slog.DiscardHandler)

package otel_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcplisten/listen/hub"
	listenotel "github.com/mcplisten/listen/otel"
)

// newMetrics returns Metrics on an SDK provider read by a manual reader.
func newMetrics(t testing.TB) (*listenotel.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := listenotel.New(listenotel.Options{MeterProvider: mp})
	require.NoError(t, err)
	require.True(t, m.Enabled())
	return m, reader
}

// series reads the data points of the package's scope: counters (but those
// at zero) and up-down counters as "name{attrs}" -> value, histograms as
// "name{attrs}" -> count. (Every counter series exists from the start, at
// zero: allSeries reads those too.)
func series(t testing.TB, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	return readSeries(t, reader, false)
}

// allSeries is series with the counters at zero.
func allSeries(t testing.TB, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	return readSeries(t, reader, true)
}

func readSeries(t testing.TB, reader *sdkmetric.ManualReader, zeros bool) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]int64{}
	key := func(name string, set attribute.Set) string {
		return fmt.Sprintf("%s{%s}", name, set.Encoded(attribute.DefaultEncoder()))
	}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, listenotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if p.Value != 0 || zeros || !d.IsMonotonic {
						out[key(m.Name, p.Attributes)] = p.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = int64(p.Count)
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// histogram returns the one data point of a histogram with the given
// attributes.
func histogram(t testing.TB, reader *sdkmetric.ManualReader, name string, attrs ...attribute.KeyValue) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	want := attribute.NewSet(attrs...)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			require.Equal(t, "s", m.Unit)
			for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				if p.Attributes.Equals(&want) {
					return p
				}
			}
		}
	}
	t.Fatalf("no %s%v", name, attrs)
	return metricdata.HistogramDataPoint[float64]{}
}

// withMetrics returns o instrumented by m (InstrumentHub).
func withMetrics(m *listenotel.Metrics, o hub.Options) hub.Options {
	m.InstrumentHub(&o)
	return o
}

package command

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	listenotel "github.com/mcplisten/listen/otel"
)

// NewMetrics returns the OpenTelemetry instrumentation of the server (to
// wire into the hub, the listen handler and the bridge) and the handler of
// /metrics, which serves it in the Prometheus text format through the
// OpenTelemetry Prometheus exporter, from a registry of its own. With on
// false it returns nil Metrics, which instrument nothing, and a nil
// handler.
func NewMetrics(on bool) (*listenotel.Metrics, http.Handler, error) {
	if !on {
		return nil, nil, nil
	}
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	m, err := listenotel.New(listenotel.Options{MeterProvider: mp})
	if err != nil {
		return nil, nil, err
	}
	return m, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

package otel_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/spec"
)

// A hub's publications and overflows, read back with the SDK's manual
// reader. A server also wires its listen.Server (Instrument, and
// InstrumentHTTP for Streamable HTTP's keep-alives) and serves m.Source(h)
// instead of h.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	m, err := listenotel.New(listenotel.Options{MeterProvider: mp})
	if err != nil {
		panic(err)
	}
	hopts := hub.Options{MaxBuffer: 1}
	m.InstrumentHub(&hopts)
	h, _ := hub.New(hopts)

	// One listener that never pulls: its queue holds one event.
	_, st, _ := h.Open(context.Background(), nil, listen.Filter{spec.KeyToolsListChanged: true})
	defer st.Close(nil)
	h.ToolsListChanged()
	h.ToolsListChanged() // overflows the queue
	h.PromptsListChanged()

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, p := range sum.DataPoints {
				kind, _ := p.Attributes.Value(listenotel.AttrNotificationKind)
				fmt.Printf("%s %s %s: %d\n", m.Name, m.Unit, kind.AsString(), p.Value)
			}
		}
	}
	// Every kind's series exists from InstrumentHub on, at zero until counted.
	//
	// Unordered output:
	// mcp.listen.notifications.published {notification} tools_list_changed: 2
	// mcp.listen.notifications.published {notification} prompts_list_changed: 1
	// mcp.listen.notifications.published {notification} resources_list_changed: 0
	// mcp.listen.notifications.published {notification} resource_updated: 0
	// mcp.listen.notifications.published {notification} extension: 0
	// mcp.listen.notifications.dropped {notification} tools_list_changed: 1
	// mcp.listen.notifications.dropped {notification} prompts_list_changed: 0
	// mcp.listen.notifications.dropped {notification} resources_list_changed: 0
	// mcp.listen.notifications.dropped {notification} resource_updated: 0
	// mcp.listen.notifications.dropped {notification} extension: 0
}

package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/examples/internal/command"
	"github.com/mcplisten/listen/examples/internal/listencheck"
)

// scrape reads /metrics and returns the samples of the listen instruments
// (mcp_listen_*) as "name{label="value",...}" -> value, labels sorted and
// the exporter's own (otel_scope_*) left out; the counters still at zero
// (every series exists from the start) are left out too.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for name, f := range families {
		if !strings.HasPrefix(name, "mcp_listen_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				if !strings.HasPrefix(l.GetName(), "otel_scope_") {
					labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
				}
			}
			sort.Strings(labels)
			key := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				if v := m.GetCounter().GetValue(); v != 0 {
					out[key] = v
				}
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// With -metrics, a scrape of /metrics during a listen, after a publication
// and after the close shows exactly the counts the script predicts.
func TestMetricsScrape(t *testing.T) {
	m, metricsHandler, err := command.NewMetrics(true)
	require.NoError(t, err)
	srv, err := newServer(slog.New(slog.NewTextHandler(io.Discard, nil)), &command.HTTPFlags{MaxStreams: 100}, tuning{}, m)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.handler)
	mux.Handle("/metrics", metricsHandler)
	ts := httptest.NewServer(mux)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	shutdown := func() {
		t.Helper()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.handler.Shutdown(sctx))
	}
	defer shutdown()

	const (
		tr    = `mcp_listen_transport="streamable_http"`
		tools = `mcp_listen_notification_kind="tools_list_changed"`
	)
	want := map[string]float64{
		"mcp_listen_streams_open{" + tr + "}":                     0,
		"mcp_listen_streams_open{mcp_listen_transport=\"stdio\"}": 0,   // the Server serves both
		"mcp_listen_streams_capacity{}":                           100, // -max-streams: the Server's, over every transport
	}
	assert.Equal(t, want, scrape(t, ts.URL), "nothing yet")

	// A listen.
	resp := post(t, ctx, ts.URL+"/mcp", "subscriptions/listen",
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{`+meta+`,"notifications":{"toolsListChanged":true}}}`)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	msgs := listencheck.Messages(resp.Body)
	require.Equal(t, "notifications/subscriptions/acknowledged", (<-msgs)["method"])
	want["mcp_listen_streams_open{"+tr+"}"] = 1
	want["mcp_listen_streams_opened_total{"+tr+"}"] = 1
	assert.Equal(t, want, scrape(t, ts.URL), "during the listen")

	// A publication, through the go-sdk tool that triggers it.
	callTool(t, ts.URL+"/mcp", "test_trigger_tool_change", `{}`)
	require.Equal(t, "notifications/tools/list_changed", (<-msgs)["method"])
	// The hub records a publication (its OnPublish hook) after it has
	// handed the event to every stream, and a stream may have written it
	// before that: scrape until the publication is recorded.
	fanouts := "mcp_listen_fanout_duration_seconds{" + tools + "}_count"
	got := scrape(t, ts.URL)
	for got[fanouts] == 0 && ctx.Err() == nil {
		got = scrape(t, ts.URL)
	}
	// The notification counts as delivered once its stream asks for the
	// next one, which may not have happened yet when the client reads it.
	delivered := "mcp_listen_notifications_delivered_total{" + tools + "," + tr + "}"
	assert.Contains(t, []float64{0, 1}, got[delivered])
	delete(got, delivered)
	want["mcp_listen_notifications_published_total{"+tools+"}"] = 1
	want[fanouts] = 1
	assert.Equal(t, want, got, "after the publication")

	// The close: the hub completes the stream; the drain waits until its
	// OnClose has run.
	require.NoError(t, srv.hub.Shutdown(ctx))
	require.Equal(t, "complete", (<-msgs)["result"].(map[string]any)["resultType"])
	_, open := <-msgs
	require.False(t, open)
	shutdown()
	want["mcp_listen_streams_open{"+tr+"}"] = 0
	want["mcp_listen_streams_closed_total{mcp_listen_close_reason=\"complete\","+tr+"}"] = 1
	want[delivered] = 1
	assert.Equal(t, want, scrape(t, ts.URL), "after the close")
}

package otel_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/streamhttp"
)

// Once wired, before anything happens, every counter series exists at zero
// (one per attribute value of its fixed sets, the invalid kind left out),
// so that a scraper sees the first count as an increase; the stream limit
// of the Server is the only value that is not zero.
func TestSeriesStartAtZero(t *testing.T) {
	m, reader := newMetrics(t)
	var hopts streamhttp.Options
	m.InstrumentHTTP(&hopts)
	var lopts listen.Options
	m.Instrument(&lopts)
	_, err := hub.New(withMetrics(m, hub.Options{}))
	assert.NoError(t, err)
	m.InstrumentBridge("nats", &cluster.Options{})

	got := allSeries(t, reader)
	perName := map[string]int{}
	for k, v := range got {
		name, _, _ := strings.Cut(k, "{")
		perName[name]++
		if name == "mcp.listen.streams.capacity" {
			assert.Equal(t, "mcp.listen.streams.capacity{}", k, "no transport")
			assert.Equal(t, int64(defaultMaxStreams), v, k)
			continue
		}
		assert.Zero(t, v, k)
		assert.NotContains(t, k, "kind=invalid", "the invalid kind has no series")
	}
	assert.Equal(t, map[string]int{
		"mcp.listen.streams.open":            2,  // per transport
		"mcp.listen.streams.capacity":        1,  // the Server's, over every transport
		"mcp.listen.streams.opened":          2,  // per transport
		"mcp.listen.streams.closed":          20, // 10 close reason classes per transport
		"mcp.listen.streams.write_timeouts":  2,
		"mcp.listen.requests.refused":        12, // 6 causes per transport
		"mcp.listen.keepalives.sent":         2,
		"mcp.listen.notifications.delivered": 10, // 5 kinds per transport
		"mcp.listen.notifications.published": 5,  // 5 kinds
		"mcp.listen.notifications.dropped":   5,
		"mcp.listen.bridge.published":        10, // 5 kinds, ok and error
		"mcp.listen.bridge.received":         5,
		"mcp.listen.bridge.dropped":          9, // the cluster's drop reasons
		"mcp.listen.bridge.resyncs":          3, // the cluster's resync reasons
		"mcp.listen.bridge.disconnected":     1,
	}, perName)
}

// mcp.listen.streams.capacity sums the stream limits of the Servers
// instrumented (the default for zero; a negative limit, refused by
// listen.NewServer, adds nothing), without a transport.
func TestCapacity(t *testing.T) {
	m, reader := newMetrics(t)
	const key = "mcp.listen.streams.capacity{}"
	for _, tt := range []struct {
		maxStreams int
		want       int64
	}{
		{0, defaultMaxStreams},
		{10, defaultMaxStreams + 10},
		{-1, defaultMaxStreams + 10},
	} {
		opts := listen.Options{MaxStreams: tt.maxStreams}
		m.Instrument(&opts)
		assert.Equal(t, tt.want, series(t, reader)[key], "after MaxStreams %d", tt.maxStreams)
	}
	var hopts streamhttp.Options
	m.InstrumentHTTP(&hopts) // keep-alives only: no capacity
	assert.Equal(t, int64(defaultMaxStreams+10), series(t, reader)[key])
	(*listenotel.Metrics)(nil).Instrument(&listen.Options{MaxStreams: 1}) // disabled: nothing, no panic
}

// mcp.listen.bridge.disconnected is 1 from a lost connection (disconnected
// or reconnecting, once however many reports) to the next connected or
// closed, summed over the bridges of a broker.
func TestBridgeDisconnected(t *testing.T) {
	m, reader := newMetrics(t)
	var calls []string
	var a, b cluster.Options
	signal{calls: &calls}.set(&a)
	m.InstrumentBridge("nats", &a)
	m.InstrumentBridge("nats", &b)
	const key = "mcp.listen.bridge.disconnected{mcp.listen.bridge.broker=nats}"
	for _, step := range []struct {
		h      *cluster.Options
		status string
		want   int64
	}{
		{&a, "connected", 0},
		{&a, "disconnected", 1},
		{&a, "reconnecting", 1},
		{&b, "reconnecting", 2},
		{&a, "connected", 1},
		{&a, "connected", 1},
		{&b, "closed", 0},
		{&b, "closed", 0},
	} {
		step.h.OnConnection(cluster.ConnectionInfo{Status: step.status})
		assert.Equal(t, step.want, series(t, reader)[key], "after %s", step.status)
	}
	assert.Equal(t, []string{"connection connected", "connection disconnected", "connection reconnecting",
		"connection connected", "connection connected"}, calls, "the next hooks still run")
}

// defaultMaxStreams is listen.Options.MaxStreams's documented default.
const defaultMaxStreams = 1024

package otelnats_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/natsbridge"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/otel/otelnats"
)

func newMetrics(t *testing.T) (*listenotel.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := listenotel.New(listenotel.Options{MeterProvider: mp})
	require.NoError(t, err)
	return m, reader
}

// series reads every counter as "name{attrs}" -> value.
func series(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range sum.DataPoints {
					out[fmt.Sprintf("%s{%s}", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()))] = p.Value
				}
			}
		}
	}
	return out
}

// signal is the next hook: it reports each call on a channel.
type signal struct {
	natsbridge.NopHooks
	calls chan string
}

func (s signal) OnReceive(natsbridge.ReceiveInfo) { s.calls <- "receive" }
func (s signal) OnDrop(i natsbridge.DropInfo)     { s.calls <- "drop " + string(i.Reason) }
func (s signal) OnResync(i natsbridge.ResyncInfo) { s.calls <- "resync " + string(i.Reason) }

// Two instances on a real (in-process) NATS server: an event published on
// A is received by B, a malformed message on the subject is dropped by B,
// and B resynchronises on demand. B's instruments hold exactly that, and
// its previous hooks still ran.
func TestBridgeInstruments(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	require.True(t, ns.ReadyForConnections(10*time.Second))

	m, reader := newMetrics(t)
	calls := make(chan string, 8)
	bridge := func(hooks natsbridge.Hooks) *natsbridge.Bridge {
		h, err := hub.New(hub.Options{})
		require.NoError(t, err)
		b, err := natsbridge.Connect(ns.ClientURL(), h, natsbridge.Options{Hooks: hooks, Resync: []listen.Kind{}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	a := bridge(nil)
	b := bridge(otelnats.Hooks(m, signal{calls: calls}))

	_, err = a.ResourceUpdated("file:///a")
	require.NoError(t, err)
	assert.Equal(t, "receive", <-calls)

	nc, err := nats.Connect(ns.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.Publish(b.Subject(), []byte("not an envelope")))
	require.NoError(t, nc.Flush())
	assert.Equal(t, "drop malformed", <-calls)

	require.NoError(t, b.Resync())
	assert.Equal(t, "resync manual", <-calls)

	assert.Equal(t, map[string]int64{
		"mcp.listen.nats.received{mcp.listen.notification.kind=resource_updated}": 1,
		"mcp.listen.nats.dropped{mcp.listen.nats.drop.reason=malformed}":          1,
		"mcp.listen.nats.resyncs{mcp.listen.nats.resync.reason=manual}":           1,
	}, series(t, reader))
}

// Every reason counts under its own name, a slow consumer's batch by its
// size; an unknown reason is recorded as it is.
func TestDropAndResyncReasons(t *testing.T) {
	m, reader := newMetrics(t)
	h := otelnats.Hooks(m, nil)
	for _, r := range []natsbridge.DropReason{natsbridge.ReasonTooLarge, natsbridge.ReasonMalformed,
		natsbridge.ReasonUnknownVersion, natsbridge.ReasonInvalidEvent, natsbridge.ReasonPanic, "future"} {
		h.OnDrop(natsbridge.DropInfo{Reason: r, Count: 1})
	}
	h.OnDrop(natsbridge.DropInfo{Reason: natsbridge.ReasonSlowConsumer, Count: 42})
	for _, r := range []natsbridge.ResyncReason{natsbridge.ResyncReconnect, natsbridge.ResyncLoss, natsbridge.ResyncLoss} {
		h.OnResync(natsbridge.ResyncInfo{Reason: r})
	}
	h.OnReceive(natsbridge.ReceiveInfo{EventKind: listen.KindExtension})
	h.OnPublishOut(natsbridge.PublishOutInfo{})
	h.OnConnection(natsbridge.ConnectionInfo{})
	const d, r = "mcp.listen.nats.dropped{mcp.listen.nats.drop.reason=", "mcp.listen.nats.resyncs{mcp.listen.nats.resync.reason="
	assert.Equal(t, map[string]int64{
		d + "too_large}":       1,
		d + "malformed}":       1,
		d + "unknown_version}": 1,
		d + "invalid_event}":   1,
		d + "panic}":           1,
		d + "future}":          1,
		d + "slow_consumer}":   42,
		r + "reconnect}":       1,
		r + "loss}":            2,
		"mcp.listen.nats.received{mcp.listen.notification.kind=extension}": 1,
	}, series(t, reader))
}

// Without a provider the bridge keeps the hooks it was given.
func TestDisabled(t *testing.T) {
	m, err := listenotel.New(listenotel.Options{})
	require.NoError(t, err)
	assert.Nil(t, otelnats.Hooks(m, nil))
	s := signal{}
	assert.Equal(t, s, otelnats.Hooks(m, s))
}

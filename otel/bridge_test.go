package otel_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	listenotel "github.com/mcplisten/listen/otel"
)

// signal is the next hooks: they record each call.
type signal struct {
	calls *[]string
}

// set sets o's hooks to s's.
func (s signal) set(o *cluster.Options) {
	o.OnPublishOut = func(cluster.PublishOutInfo) { *s.calls = append(*s.calls, "publish") }
	o.OnReceive = func(cluster.ReceiveInfo) { *s.calls = append(*s.calls, "receive") }
	o.OnDrop = func(i cluster.DropInfo) { *s.calls = append(*s.calls, "drop "+i.Reason) }
	o.OnResync = func(i cluster.ResyncInfo) { *s.calls = append(*s.calls, "resync "+i.Reason) }
	o.OnConnection = func(i cluster.ConnectionInfo) { *s.calls = append(*s.calls, "connection "+i.Status) }
}

// Two instances joined by an in-memory broker (cluster nodes, as the NATS
// and Redis bridges build on): an event published on A is received by B, a
// malformed message is dropped by B, B resynchronises on demand, and a
// publication A's broker refuses counts as an error. A's and B's
// instruments hold exactly that, and their previous hooks still ran.
func TestBridgeInstruments(t *testing.T) {
	m, reader := newMetrics(t)
	var calls []string
	var nodes []*cluster.Node
	down := false
	send := func(msg cluster.Message) error {
		if down {
			return errors.New("broker down")
		}
		for _, n := range nodes {
			n.Receive(cluster.Message{Data: bytes.Clone(msg.Data), Sig: msg.Sig})
		}
		return nil
	}
	node := func(broker string, next *signal) (*hub.Hub, *cluster.Node) {
		h, err := hub.New(hub.Options{})
		require.NoError(t, err)
		opts := cluster.Options{Resync: []listen.Kind{}}
		if next != nil {
			next.set(&opts)
		}
		m.InstrumentBridge(broker, &opts)
		n, err := cluster.NewNode(h, cluster.Transport{Scope: "s", Send: send}, opts)
		require.NoError(t, err)
		t.Cleanup(n.Close)
		nodes = append(nodes, n)
		return h, n
	}
	ha, _ := node("nats", nil)
	_, b := node("nats", &signal{calls: &calls})

	_, err := ha.ResourceUpdated("file:///a")
	require.NoError(t, err)
	b.Receive(cluster.Message{Data: []byte("not an envelope")})
	require.NoError(t, b.Resync())
	down = true
	ha.ToolsListChanged()
	assert.Equal(t, []string{"receive", "drop malformed", "resync manual"}, calls)

	assert.Equal(t, map[string]int64{
		"mcp.listen.bridge.published{mcp.listen.bridge.broker=nats,mcp.listen.bridge.outcome=ok,mcp.listen.notification.kind=resource_updated}":      1,
		"mcp.listen.bridge.published{mcp.listen.bridge.broker=nats,mcp.listen.bridge.outcome=error,mcp.listen.notification.kind=tools_list_changed}": 1,
		"mcp.listen.bridge.received{mcp.listen.bridge.broker=nats,mcp.listen.notification.kind=resource_updated}":                                    1,
		"mcp.listen.bridge.dropped{mcp.listen.bridge.broker=nats,mcp.listen.bridge.drop.reason=malformed}":                                           1,
		"mcp.listen.bridge.resyncs{mcp.listen.bridge.broker=nats,mcp.listen.bridge.resync.reason=manual}":                                            1,
		"mcp.listen.bridge.disconnected{mcp.listen.bridge.broker=nats}":                                                                              0,
	}, series(t, reader))
}

// Every reason counts under its own name, a slow consumer's batch by its
// size; an unknown reason is recorded as it is; the broker names each
// series; a disabled Metrics returns the next hooks.
func TestBridgeReasons(t *testing.T) {
	m, reader := newMetrics(t)
	var h cluster.Options
	m.InstrumentBridge("redis", &h)
	for _, r := range []string{"too_large", "malformed",
		"unknown_version", "invalid_event", "panic",
		"unauthenticated", "replayed", "stale", "future"} {
		h.OnDrop(cluster.DropInfo{Reason: r, Count: 1})
	}
	h.OnDrop(cluster.DropInfo{Reason: "slow_consumer", Count: 42})
	for _, r := range []string{"reconnect", "loss", "loss", "future"} {
		h.OnResync(cluster.ResyncInfo{Reason: r})
	}
	h.OnReceive(cluster.ReceiveInfo{EventKind: listen.KindExtension})
	got := series(t, reader)
	for _, r := range []string{"too_large", "malformed", "unknown_version", "invalid_event", "panic",
		"unauthenticated", "replayed", "stale", "future"} {
		assert.Equal(t, int64(1), got["mcp.listen.bridge.dropped{mcp.listen.bridge.broker=redis,mcp.listen.bridge.drop.reason="+r+"}"], r)
	}
	assert.Equal(t, int64(42), got["mcp.listen.bridge.dropped{mcp.listen.bridge.broker=redis,mcp.listen.bridge.drop.reason=slow_consumer}"])
	assert.Equal(t, int64(2), got["mcp.listen.bridge.resyncs{mcp.listen.bridge.broker=redis,mcp.listen.bridge.resync.reason=loss}"])
	assert.Equal(t, int64(1), got["mcp.listen.bridge.resyncs{mcp.listen.bridge.broker=redis,mcp.listen.bridge.resync.reason=future}"])
	assert.Equal(t, int64(1), got["mcp.listen.bridge.received{mcp.listen.bridge.broker=redis,mcp.listen.notification.kind=extension}"])

	var unchanged cluster.Options
	(*listenotel.Metrics)(nil).InstrumentBridge("nats", &unchanged)
	assert.Nil(t, unchanged.OnDrop)
}

// Recording a known reason allocates nothing.
func TestBridgeHooksDoNotAllocate(t *testing.T) {
	m, _ := newMetrics(t)
	var h cluster.Options
	m.InstrumentBridge("nats", &h)
	allocs := testing.AllocsPerRun(100, func() {
		h.OnDrop(cluster.DropInfo{Reason: "replayed", Count: 1})
		h.OnReceive(cluster.ReceiveInfo{EventKind: listen.KindToolsListChanged})
		h.OnPublishOut(cluster.PublishOutInfo{EventKind: listen.KindToolsListChanged})
		h.OnResync(cluster.ResyncInfo{Reason: "loss"})
	})
	assert.Zero(t, allocs)
}

package natsbridge_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/natsbridge"
	"github.com/mcplisten/listen/spec"
)

func newHub(t testing.TB, logger *slog.Logger) *hub.Hub {
	t.Helper()
	h, err := hub.New(hub.Options{Logger: logger})
	require.NoError(t, err)
	return h
}

func TestOptionsValidation(t *testing.T) {
	ns := startNATS(t, 0)
	nc := connect(t, ns.ClientURL())
	h := newHub(t, nil)
	for name, o := range map[string]natsbridge.Options{
		"wildcard prefix":    {Prefix: "mcp.*"},
		"tail wildcard":      {Prefix: "mcp.>"},
		"empty token":        {Prefix: "mcp..listen"},
		"space":              {Prefix: "mcp listen"},
		"tiny messages":      {Options: cluster.Options{MaxMessageBytes: 100}},
		"pending < message":  {PendingBytes: 1000, Options: cluster.Options{MaxMessageBytes: 4096}},
		"pending < default":  {PendingBytes: 1000},
		"resync of updates":  {Options: cluster.Options{Resync: []listen.Kind{listen.KindResourceUpdated}}},
		"resync of ext":      {Options: cluster.Options{Resync: []listen.Kind{listen.KindExtension}}},
		"resync of nothing0": {Options: cluster.Options{Resync: []listen.Kind{0}}},
		"short key":          {Options: cluster.Options{AuthKeys: [][]byte{make([]byte, cluster.MinAuthKeyBytes-1)}}},
		"short second key":   {Options: cluster.Options{AuthKeys: [][]byte{make([]byte, cluster.MinAuthKeyBytes), []byte("password")}}},
		"nil key":            {Options: cluster.Options{AuthKeys: [][]byte{nil}}},
		"too many keys":      {Options: cluster.Options{AuthKeys: make([][]byte, 9)}},
		"negative freshness": {Options: cluster.Options{Freshness: -time.Second}},
	} {
		_, err := natsbridge.New(nc, h, o)
		assert.ErrorIs(t, err, cluster.ErrInvalidOptions, name)
		_, err = natsbridge.Connect(ns.ClientURL(), h, o)
		assert.ErrorIs(t, err, cluster.ErrInvalidOptions, name)
	}
	_, err := natsbridge.New(nil, h, natsbridge.Options{})
	assert.ErrorIs(t, err, cluster.ErrInvalidOptions)
	_, err = natsbridge.New(nc, nil, natsbridge.Options{})
	assert.ErrorIs(t, err, cluster.ErrInvalidOptions)

	b, err := natsbridge.New(nc, h, natsbridge.Options{Prefix: "acme.mcp", Options: cluster.Options{Resync: []listen.Kind{}}})
	require.NoError(t, err)
	assert.Equal(t, "acme.mcp.events", b.Subject())
	assert.Len(t, b.ID(), 22)
	assert.Same(t, nc, b.Conn())
	assert.Same(t, h, b.Hub())
	require.NoError(t, b.Close())
}

func TestClosedConnection(t *testing.T) {
	ns := startNATS(t, 0)
	nc := connect(t, ns.ClientURL())
	nc.Close()
	_, err := natsbridge.New(nc, newHub(t, nil), natsbridge.Options{})
	assert.ErrorIs(t, err, nats.ErrConnectionClosed)
}

// TestPrefixesIsolate: bridges on different prefixes share a NATS server
// without seeing each other's events.
func TestPrefixesIsolate(t *testing.T) {
	ns := startNATS(t, 0)
	nc := connect(t, ns.ClientURL())
	a1 := newInstance(t, "A1", nc, natsbridge.Options{Prefix: "one"})
	b1 := newInstance(t, "B1", nc, natsbridge.Options{Prefix: "one"})
	b2 := newInstance(t, "B2", nc, natsbridge.Options{Prefix: "two"})
	s1 := b1.listen(t, "s1", `{"toolsListChanged":true}`)
	s2 := b2.listen(t, "s2", `{"toolsListChanged":true}`)
	_, err := a1.hub.Publish(tagged(listen.ToolsListChanged(), "x"))
	require.NoError(t, err)
	_, err = b2.hub.Publish(tagged(listen.ToolsListChanged(), "fence"))
	require.NoError(t, err)
	assert.Equal(t, "x", s1.next(t).id)
	assert.Equal(t, "fence", s2.next(t).id, "prefix two never sees prefix one's event")
	assert.Zero(t, b2.bridge.Stats().Received)
}

func TestPublishErrors(t *testing.T) {
	ns := startNATS(t, 0)
	nc := connect(t, ns.ClientURL())
	co := cluster.Options{MaxMessageBytes: 1024}
	rec := record(&co)
	h := newHub(t, nil)
	b, err := natsbridge.New(nc, h, natsbridge.Options{Options: co})
	require.NoError(t, err)

	// Invalid events: the hub's validation error; nothing published.
	_, err = h.Publish(listen.ResourceUpdated("relative/path"))
	assert.ErrorIs(t, err, listen.ErrInvalidEvent)
	_, err = h.ResourceUpdated("relative/path")
	assert.ErrorIs(t, err, listen.ErrInvalidEvent)
	_, err = h.Publish(listen.Event{})
	assert.ErrorIs(t, err, listen.ErrInvalidEvent)
	// A payload that does not encode: the bridge refuses it, so the hub
	// publishes it nowhere.
	_, err = h.Publish(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"t1"}}, make(chan int)))
	assert.ErrorIs(t, err, cluster.ErrEncode)
	// Too large.
	_, err = h.Publish(listen.ToolsListChanged().WithMetadata(map[string]any{"pad": strings.Repeat("x", 1024)}))
	assert.ErrorIs(t, err, cluster.ErrTooLarge)

	st := b.Stats()
	assert.Equal(t, uint64(2), st.Rejected)
	assert.Zero(t, st.Published)
	assert.Empty(t, rec.Outs)

	// The hub's helpers publish through the bridge.
	h.ToolsListChanged()
	h.PromptsListChanged()
	h.ResourcesListChanged()
	_, err = h.ResourceUpdated("file:///a")
	require.NoError(t, err)
	for i := range 4 {
		out := await(t, rec.Outs, "a publication", nil)
		assert.NoError(t, out.Err)
		assert.Equal(t, uint64(i+1), out.Seq)
		assert.Positive(t, out.Bytes)
	}
	assert.Equal(t, uint64(4), b.Stats().Published)

	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close is idempotent")
	_, err = h.Publish(listen.ToolsListChanged())
	require.NoError(t, err, "after Close the hub publishes locally")
	assert.Equal(t, uint64(4), b.Stats().Published)
	assert.ErrorIs(t, b.Resync(), cluster.ErrClosed)
	assert.True(t, nc.IsConnected(), "Close leaves the caller's connection open")
}

func TestConnectOwnsConnection(t *testing.T) {
	ns := startNATS(t, 0)
	var co cluster.Options
	record(&co)
	b, err := natsbridge.Connect(ns.ClientURL(), newHub(t, nil), natsbridge.Options{Options: co},
		nats.ReconnectWait(50*time.Millisecond), nats.Name("custom"))
	require.NoError(t, err)
	nc := b.Conn()
	assert.True(t, nc.IsConnected())
	assert.Equal(t, "custom", nc.Opts.Name, "the caller's options win")
	assert.Equal(t, -1, nc.Opts.MaxReconnect)
	require.NoError(t, b.Close())
	assert.True(t, nc.IsClosed(), "Close closes the connection Connect made")

	_, err = natsbridge.Connect("nats://127.0.0.1:1", newHub(t, nil), natsbridge.Options{}, nats.Timeout(time.Second))
	assert.Error(t, err)
}

// TestCallerClosesConnection: closing the connection under a bridge stops
// its delivery; Close still returns, and local publishing goes on.
func TestCallerClosesConnection(t *testing.T) {
	ns := startNATS(t, 0)
	nc := connect(t, ns.ClientURL())
	var co cluster.Options
	rec := record(&co)
	b, err := natsbridge.New(nc, newHub(t, nil), natsbridge.Options{Options: co})
	require.NoError(t, err)
	nc.Close()
	await(t, rec.Conns, "CLOSED", func(c cluster.ConnectionInfo) bool { return c.Status == "closed" })
	_, err = b.Hub().Publish(listen.ToolsListChanged())
	require.NoError(t, err)
	assert.Equal(t, uint64(1), b.Stats().PublishErrors)
	require.NoError(t, b.Close())
}

func TestManualResyncAndURIs(t *testing.T) {
	ns := startNATS(t, 0)
	in := newInstance(t, "A", connect(t, ns.ClientURL()), natsbridge.Options{Options: cluster.Options{
		ResyncURIs: func() []string { return []string{watched, "not a uri", other} },
	}})
	s := in.listen(t, "A-all", `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["`+watched+`"]}`)
	require.NoError(t, in.bridge.Resync())
	ri := await(t, in.rec.Resyncs, "the manual resync", nil)
	assert.Equal(t, "manual", ri.Reason)
	assert.Equal(t, 2, ri.URIs)
	var methods []string
	for range 4 {
		n := s.next(t)
		methods = append(methods, n.method+" "+n.uri)
	}
	assert.Equal(t, []string{
		spec.MethodToolsListChanged + " ",
		spec.MethodPromptsListChanged + " ",
		spec.MethodResourcesListChanged + " ",
		spec.MethodResourceUpdated + " " + watched,
	}, methods)
}

// TestWireShapesIntact: params, metadata, extension payloads and numbers
// render on a remote stream byte for byte as on the local one.
func TestWireShapesIntact(t *testing.T) {
	ns := startNATS(t, 0)
	nc := connect(t, ns.ClientURL())
	a := newInstance(t, "A", nc, natsOptions())
	b := newInstance(t, "B", nc, natsOptions())
	filter := `{"resourceSubscriptions":["` + watched + `"],"taskIds":["t1"]}`
	sa, sb := a.listen(t, "same-id", filter), b.listen(t, "same-id", filter)
	evs := []listen.Event{
		listen.ResourceUpdated(watched).
			WithParams(map[string]any{"title": "Config", "rev": 7, "ratio": 1.0, "big": json.Number("12345678901234567890"),
				"_meta": map[string]any{"com.example/from": "params"}, "uri": "ignored:uri",
				"raw": json.RawMessage(`{ "z": [1, 2.50] ,"a":"<&>"}`)}).
			WithMetadata(map[string]any{idKey: "r1", "nested": map[string]any{"list": []any{1, 2.5, "x", nil, true}}}),
		tagged(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"t1"}},
			map[string]any{"status": "working", "progress": 0.25}), "e1"),
	}
	for _, ev := range evs {
		_, err := a.hub.Publish(ev)
		require.NoError(t, err)
	}
	for range evs {
		la, lb := sa.next(t), sb.next(t)
		assert.Equal(t, la.raw, lb.raw, "the remote stream renders the event byte for byte as the local one")
		if lb.method == spec.MethodResourceUpdated {
			assert.Contains(t, lb.raw, `"raw":{ "z": [1, 2.50] ,"a":"<&>"}`)
			assert.Contains(t, lb.raw, `"ratio":1.0`)
		}
	}
	// Numbers are compared as json.Number, so as their literal text: 1.0
	// stays 1.0 across the bridge.
	assert.Equal(t, uint64(2), b.bridge.Stats().Received)
}

// Options.Logger logs the bridge's side, hub.Options.Logger the hub's.
func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ns := startNATS(t, 0)
	nc := connect(t, ns.ClientURL())
	h := newHub(t, logger) // the same logger logs the hub
	b, err := natsbridge.New(nc, h, natsbridge.Options{Options: cluster.Options{Logger: logger}})
	require.NoError(t, err)
	_, err = h.Publish(listen.ToolsListChanged())
	require.NoError(t, err)
	require.NoError(t, b.Resync())
	require.NoError(t, b.Close())
	out := buf.String()
	for _, want := range []string{
		"subscription hub publish", "cluster publish", "event_kind=tools_list_changed",
		"cluster resync", "reason=manual",
	} {
		assert.Contains(t, out, want)
	}
}

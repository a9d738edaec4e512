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
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/natsbridge"
	"github.com/mcplisten/listen/spec"
)

func newHub(t testing.TB, hooks hub.Hooks) *hub.Hub {
	t.Helper()
	h, err := hub.New(hub.Options{Hooks: hooks})
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
		"tiny messages":      {MaxMessageBytes: 100},
		"pending < message":  {MaxMessageBytes: 4096, PendingBytes: 1000},
		"resync of updates":  {Resync: []listen.Kind{listen.KindResourceUpdated}},
		"resync of ext":      {Resync: []listen.Kind{listen.KindExtension}},
		"resync of nothing0": {Resync: []listen.Kind{0}},
		"short key":          {AuthKeys: [][]byte{make([]byte, natsbridge.MinAuthKeyBytes-1)}},
		"short second key":   {AuthKeys: [][]byte{make([]byte, natsbridge.MinAuthKeyBytes), []byte("password")}},
		"nil key":            {AuthKeys: [][]byte{nil}},
		"too many keys":      {AuthKeys: make([][]byte, natsbridge.MaxAuthKeys+1)},
	} {
		_, err := natsbridge.New(nc, h, o)
		assert.ErrorIs(t, err, natsbridge.ErrInvalidOptions, name)
		_, err = natsbridge.Connect(ns.ClientURL(), h, o)
		assert.ErrorIs(t, err, natsbridge.ErrInvalidOptions, name)
	}
	_, err := natsbridge.New(nil, h, natsbridge.Options{})
	assert.ErrorIs(t, err, natsbridge.ErrInvalidOptions)
	_, err = natsbridge.New(nc, nil, natsbridge.Options{})
	assert.ErrorIs(t, err, natsbridge.ErrInvalidOptions)

	b, err := natsbridge.New(nc, h, natsbridge.Options{Prefix: "acme.mcp", Resync: []listen.Kind{}})
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
	_, err := a1.bridge.Publish(tagged(listen.ToolsListChanged(), "x"))
	require.NoError(t, err)
	_, err = b2.bridge.Publish(tagged(listen.ToolsListChanged(), "fence"))
	require.NoError(t, err)
	assert.Equal(t, "x", s1.next(t).id)
	assert.Equal(t, "fence", s2.next(t).id, "prefix two never sees prefix one's event")
	assert.Zero(t, b2.bridge.Stats().Received)
}

func TestPublishErrors(t *testing.T) {
	ns := startNATS(t, 0)
	nc := connect(t, ns.ClientURL())
	rec := newRecorder()
	h := newHub(t, nil)
	b, err := natsbridge.New(nc, h, natsbridge.Options{MaxMessageBytes: 1024, Hooks: rec})
	require.NoError(t, err)

	// Invalid events: the core's validation error; nothing published.
	_, err = b.Publish(listen.ResourceUpdated("relative/path"))
	assert.ErrorIs(t, err, listen.ErrInvalidEvent)
	_, err = b.ResourceUpdated("relative/path")
	assert.ErrorIs(t, err, listen.ErrInvalidEvent)
	_, err = b.Publish(listen.Event{})
	assert.ErrorIs(t, err, listen.ErrInvalidEvent)
	// A payload that does not encode.
	_, err = b.Publish(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"t1"}}, make(chan int)))
	assert.ErrorIs(t, err, natsbridge.ErrEncode)
	// Too large.
	_, err = b.Publish(listen.ToolsListChanged().WithMetadata(map[string]any{"pad": strings.Repeat("x", 1024)}))
	assert.ErrorIs(t, err, natsbridge.ErrTooLarge)

	st := b.Stats()
	assert.Equal(t, uint64(5), st.Rejected)
	assert.Zero(t, st.Published)
	assert.Empty(t, rec.outs)

	// The helpers publish.
	for _, f := range []func() (hub.Report, error){
		b.ToolsListChanged, b.PromptsListChanged, b.ResourcesListChanged,
		func() (hub.Report, error) { return b.ResourceUpdated("file:///a") },
	} {
		_, err := f()
		require.NoError(t, err)
	}
	for i := range 4 {
		out := await(t, rec.outs, "a publication", nil)
		assert.NoError(t, out.Err)
		assert.Equal(t, uint64(i+1), out.Seq)
		assert.Positive(t, out.Bytes)
	}
	assert.Equal(t, uint64(4), b.Stats().Published)

	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close is idempotent")
	_, err = b.ToolsListChanged()
	assert.ErrorIs(t, err, natsbridge.ErrClosed)
	assert.ErrorIs(t, b.Resync(), natsbridge.ErrClosed)
	assert.True(t, nc.IsConnected(), "Close leaves the caller's connection open")
}

func TestConnectOwnsConnection(t *testing.T) {
	ns := startNATS(t, 0)
	rec := newRecorder()
	b, err := natsbridge.Connect(ns.ClientURL(), newHub(t, nil), natsbridge.Options{Hooks: rec},
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
	rec := newRecorder()
	b, err := natsbridge.New(nc, newHub(t, nil), natsbridge.Options{Hooks: rec})
	require.NoError(t, err)
	nc.Close()
	await(t, rec.conns, "CLOSED", func(c natsbridge.ConnectionInfo) bool { return c.Status == nats.CLOSED })
	_, err = b.ToolsListChanged()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), b.Stats().PublishErrors)
	require.NoError(t, b.Close())
}

func TestManualResyncAndURIs(t *testing.T) {
	ns := startNATS(t, 0)
	in := newInstance(t, "A", connect(t, ns.ClientURL()), natsbridge.Options{
		ResyncURIs: func() []string { return []string{watched, "not a uri", other} },
	})
	s := in.listen(t, "A-all", `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["`+watched+`"]}`)
	require.NoError(t, in.bridge.Resync())
	ri := await(t, in.rec.resyncs, "the manual resync", nil)
	assert.Equal(t, natsbridge.ResyncManual, ri.Reason)
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
		_, err := a.bridge.Publish(ev)
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

func TestSlogHooks(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hooks := natsbridge.SlogHooks(logger)
	ns := startNATS(t, 0)
	nc := connect(t, ns.ClientURL())
	h := newHub(t, hooks) // the same value instruments the hub
	b, err := natsbridge.New(nc, h, natsbridge.Options{Hooks: hooks})
	require.NoError(t, err)
	_, err = b.ToolsListChanged()
	require.NoError(t, err)
	require.NoError(t, b.Resync())
	require.NoError(t, b.Close())
	hooks.OnReceive(natsbridge.ReceiveInfo{EventKind: listen.KindToolsListChanged, Origin: "peer", Seq: 1, Stripped: 2})
	out := buf.String()
	for _, want := range []string{
		"subscription hub publish", "natsbridge publish", "event_kind=tools_list_changed",
		"natsbridge resync", "reason=manual",
		"level=WARN msg=\"natsbridge receive\"", "stripped=2",
	} {
		assert.Contains(t, out, want)
	}
}

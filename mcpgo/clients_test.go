package mcpgo_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/mcpgo"
)

// notes collects the notifications an mcp-go client receives.
type notes chan mcp.JSONRPCNotification

func (n notes) next(t testing.TB) mcp.JSONRPCNotification {
	t.Helper()
	select {
	case m := <-n:
		return m
	case <-time.After(failsafe):
		t.Fatalf("no notification within %v", failsafe)
		return mcp.JSONRPCNotification{}
	}
}

// connect starts an mcp-go client over Streamable HTTP and initializes it
// (server/discover for a modern client, initialize for a legacy one).
func connect(t testing.TB, endpoint string, legacy bool) (*client.Client, notes) {
	t.Helper()
	var opts []transport.StreamableHTTPCOption
	var copts []client.ClientOption
	if legacy {
		// A 2025-11-25 client, on purpose: both are deprecated for that.
		opts = append(opts, transport.WithContinuousListening()) //lint:ignore SA1019 a 2025-11-25 client
		copts = append(copts, client.WithLegacyProtocolOnly())   //lint:ignore SA1019 a 2025-11-25 client
	}
	tr, err := transport.NewStreamableHTTP(endpoint, opts...)
	require.NoError(t, err)
	c := client.NewClient(tr, copts...)
	n := make(notes, 64)
	c.OnNotification(func(m mcp.JSONRPCNotification) { n <- m })
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "0"}
	_, err = c.Initialize(ctx, init)
	require.NoError(t, err)
	return c, n
}

// TestHTTPOlderAndNewerClients: mcp-go's own clients, a 2025-11-25 one (an
// initialize session with its GET stream, served by mcp-go) and a
// 2026-07-28 one (a listen, served by this library), on one endpoint at
// once: each receives tools/list_changed after AddTool, and resources/updated
// after a broadcast; the newer one's tagged with its listen.
func TestHTTPOlderAndNewerClients(t *testing.T) {
	srv := plainServer()
	h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := context.Background()

	older, olderNotes := connect(t, ts.URL, true)
	defer older.Close()
	assert.Equal(t, "2025-11-25", older.ProtocolVersion())
	assert.NotEmpty(t, older.GetSessionId(), "mcp-go's own session")

	newer, newerNotes := connect(t, ts.URL, false)
	defer newer.Close()
	require.Equal(t, "2026-07-28", newer.ProtocolVersion())
	stop, err := newer.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true, ResourceSubscriptions: []string{uriA}}, func(err error) { t.Errorf("listen: %v", err) })
	require.NoError(t, err)
	ack := newerNotes.next(t)
	require.Equal(t, "notifications/subscriptions/acknowledged", ack.Method)
	// A tools/list answered by mcp-go works beside it.
	tools, err := newer.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	assert.NotEmpty(t, tools.Tools)

	addTool(srv, "added")
	assert.Equal(t, "notifications/tools/list_changed", olderNotes.next(t).Method, "the older client, from mcp-go")
	n := newerNotes.next(t)
	assert.Equal(t, "notifications/tools/list_changed", n.Method, "the newer client, from its listen")
	assert.Equal(t, ack.Params.Meta["io.modelcontextprotocol/subscriptionId"], n.Params.Meta["io.modelcontextprotocol/subscriptionId"])

	updated(srv, uriA)
	assert.Equal(t, "notifications/resources/updated", olderNotes.next(t).Method)
	n = newerNotes.next(t)
	assert.Equal(t, "notifications/resources/updated", n.Method)
	assert.Equal(t, uriA, n.Params.AdditionalFields["uri"])

	stop()
	require.NoError(t, h.Shutdown(ctx))
}

// TestStdioMCPGoClient: mcp-go's own client over stdio, 2026-07-28: its
// listen is this library's (acknowledged, tagged), its tools/list and
// tools/call are mcp-go's.
func TestStdioMCPGoClient(t *testing.T) {
	srv := plainServer()
	x, err := mcpgo.NewStdio(srv, mcpgo.StdioOptions{})
	require.NoError(t, err)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := x.Serve(context.Background(), inR, outW)
		_ = outW.Close()
		served <- err
	}()
	c := client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
	n := make(notes, 64)
	c.OnNotification(func(m mcp.JSONRPCNotification) { n <- m })
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "0"}
	_, err = c.Initialize(ctx, init)
	require.NoError(t, err)
	require.Equal(t, "2026-07-28", c.ProtocolVersion())

	stop, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
	require.NoError(t, err)
	ack := n.next(t)
	require.Equal(t, "notifications/subscriptions/acknowledged", ack.Method)
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}})
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Content[0].(mcp.TextContent).Text)

	addTool(srv, "added")
	m := n.next(t)
	assert.Equal(t, "notifications/tools/list_changed", m.Method)
	assert.Equal(t, ack.Params.Meta["io.modelcontextprotocol/subscriptionId"], m.Params.Meta["io.modelcontextprotocol/subscriptionId"])

	stop()
	require.NoError(t, c.Close())
	assert.NoError(t, <-served)
	require.NoError(t, x.Shutdown(ctx))
}

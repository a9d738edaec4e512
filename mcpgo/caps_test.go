package mcpgo_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/mcpgo"
)

// TestHTTPCapabilitiesFollowTheServer: mcp-go turns capabilities on as
// things are registered (the first AddTool turns tools.listChanged on, with
// a broadcast; AddSessionResource turns resources.listChanged on, without
// one). Every listen is acknowledged exactly as server/discover advertises
// at that moment, a server advertising nothing is a warning, and each
// capability turned on is logged.
func TestHTTPCapabilitiesFollowTheServer(t *testing.T) {
	var logs logBuffer
	srv := server.NewMCPServer("bare", "1")
	h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{Options: mcpgo.Options{Logger: logs.Logger(slog.LevelInfo)}})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	assert.Contains(t, logs.String(), "advertises no capability a listen can receive")

	all := map[string]any{"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true, "resourceSubscriptions": []any{uriA}}
	ackNow := func(id string) *stream {
		t.Helper()
		s := openListen(t, ts.URL, id, all)
		assert.Equal(t, ackFor(discoverCaps(t, ts.URL), []any{uriA}), s.ack.Params.Notifications, "listen %s acknowledged as server/discover advertises", id)
		return s
	}
	first := ackNow("1")
	assert.Empty(t, first.ack.Params.Notifications)

	addTool(srv, "first") // turns tools.listChanged on and broadcasts
	second := ackNow("2")
	assert.Equal(t, map[string]any{"toolsListChanged": true}, second.ack.Params.Notifications)
	addTool(srv, "second")
	assert.Equal(t, "notifications/tools/list_changed", second.next().Method)
	assert.Contains(t, logs.String(), "on=[tools.listChanged]")

	// An older client's session gets a resource of its own: mcp-go turns
	// resources.listChanged on for everyone, and tells only that session.
	older, _ := connect(t, ts.URL, true)
	defer older.Close()
	require.NoError(t, srv.AddSessionResource(older.GetSessionId(), mcp.NewResource(uriB, uriB), nil))
	third := ackNow("3")
	assert.Equal(t, map[string]any{"toolsListChanged": true, "resourcesListChanged": true}, third.ack.Params.Notifications)
	srv.AddResource(mcpResource(uriA), nil)
	assert.Equal(t, "notifications/resources/list_changed", third.next().Method)
	assert.Contains(t, logs.String(), "on=[resources.listChanged]")

	require.NoError(t, h.Shutdown(context.Background()))
	for _, s := range []*stream{first, second, third} {
		s.close()
	}
}

// TestIgnoredCapabilitiesAreLoud: capabilities set in Options.Listen are
// not used (the server's are), which a warning says when they differ.
func TestIgnoredCapabilitiesAreLoud(t *testing.T) {
	var logs logBuffer
	b, err := mcpgo.NewBridge(context.Background(), plainServer(), mcpgo.Options{
		Logger: logs.Logger(slog.LevelWarn),
		Listen: listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}},
	})
	require.NoError(t, err)
	defer b.Close()
	assert.Contains(t, logs.String(), "Options.Listen.Capabilities differ from what the mcp-go server advertises")
	caps, err := b.Capabilities(context.Background())
	require.NoError(t, err)
	assert.Equal(t, listen.Capabilities{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourcesSubscribe: true}, caps)
}

// TestHooksSeeTheBridge: a hook refusing unauthorized requests makes
// NewHandler fail with a message that says what to do, and works once it
// lets FromBridge through; mcp-go still refuses the client's own requests.
func TestHooksSeeTheBridge(t *testing.T) {
	for _, letThrough := range []bool{false, true} {
		hooks := &server.Hooks{}
		hooks.AddOnRequestInitialization(func(ctx context.Context, _ any, _ any) error {
			if letThrough && mcpgo.FromBridge(ctx) {
				return nil
			}
			return errors.New("unauthorized")
		})
		srv := server.NewMCPServer("guarded", "1", server.WithToolCapabilities(true), server.WithHooks(hooks))
		h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{})
		if !letThrough {
			require.Error(t, err)
			assert.Contains(t, err.Error(), "mcpgo.FromBridge(ctx)")
			assert.Contains(t, err.Error(), "unauthorized")
			continue
		}
		require.NoError(t, err)
		ts := httptest.NewServer(h)
		msgs := call(t, ts.URL, "1", "tools/list", nil)
		m := decode(t, msgs[0])
		require.NotNil(t, m.Error, "%s", m.raw)
		assert.Equal(t, "unauthorized", m.Error.Message)
		ts.Close()
		require.NoError(t, h.Shutdown(context.Background()))
	}
}

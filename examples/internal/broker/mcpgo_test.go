package broker

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/examples/internal/listencheck"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/mcpgo"
)

// Two mcp-go servers, each behind mcpgo.NewHandler with a hub joined to a
// real NATS server (Join), act as one: a listen on B receives the
// tools/list_changed of an AddTool on A and the resources/updated A's
// mcp-go server broadcasts, tagged with its own id.
func TestMCPGoInstancesAsOne(t *testing.T) {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	ns.Start()
	require.True(t, ns.ReadyForConnections(15*time.Second))
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() }) // after the instances stop (cleanups run last first)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	instance := func() (*server.MCPServer, string) {
		srv := server.NewMCPServer("instance", "1", server.WithToolCapabilities(true), server.WithResourceCapabilities(true, true))
		h, err := hub.New(hub.Options{})
		require.NoError(t, err)
		leave, err := (&Config{URL: ns.ClientURL()}).Join(h, logger, nil)
		require.NoError(t, err)
		handler, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{Options: mcpgo.Options{Hub: h, Logger: logger}})
		require.NoError(t, err)
		ts := httptest.NewServer(handler)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			assert.NoError(t, handler.Shutdown(ctx))
			ts.Close()
			assert.NoError(t, leave())
		})
		return srv, ts.URL
	}
	a, _ := instance()
	_, b := instance()

	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	const uri = "test://cluster/config"
	req := listencheck.NewRequest(t, ctx, b, "subscriptions/listen", `{"jsonrpc":"2.0","id":"on-B","method":"subscriptions/listen","params":{`+listencheck.Meta+`,"notifications":{"toolsListChanged":true,"resourceSubscriptions":["`+uri+`"]}}}`)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	defer resp.Body.Close()
	msgs := listencheck.Messages(resp.Body)
	next := func() map[string]any {
		select {
		case m := <-msgs:
			return m
		case <-ctx.Done():
			t.Fatal("timed out")
			return nil
		}
	}
	require.Equal(t, "notifications/subscriptions/acknowledged", next()["method"])
	subID := func(m map[string]any) any {
		return m["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"]
	}

	a.AddTool(mcp.NewTool("added_on_a"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("a"), nil
	})
	n := next()
	assert.Equal(t, "notifications/tools/list_changed", n["method"])
	assert.Equal(t, "on-B", subID(n))

	a.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
	n = next()
	assert.Equal(t, "notifications/resources/updated", n["method"])
	assert.Equal(t, uri, n["params"].(map[string]any)["uri"])
	assert.Equal(t, "on-B", subID(n))
}

package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	fixture "github.com/mcplisten/listen/bench/internal/mcpgofixture"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The plain server answers mcp-go's own client with mcp-go's own listen:
// acknowledged, and tools/list_changed after the trigger tool. (That the
// built binary serves it is mcpgobench's TestSmall.)
func TestServesMCPGoListen(t *testing.T) {
	ts := httptest.NewServer(server.NewStreamableHTTPServer(fixture.New("mcpgoserver", "1.2.1")))
	defer ts.Close()
	c, err := client.NewStreamableHttpClient(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	notes := make(chan string, 8)
	c.OnNotification(func(n mcp.JSONRPCNotification) { notes <- n.Method })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	stop, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	next := func() string {
		select {
		case m := <-notes:
			return m
		case <-ctx.Done():
			t.Fatal("timed out")
			return ""
		}
	}
	if m := next(); m != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first notification %q", m)
	}
	if _, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "test_trigger_tool_change"}}); err != nil {
		t.Fatal(err)
	}
	if m := next(); m != "notifications/tools/list_changed" {
		t.Fatalf("notification %q", m)
	}
}

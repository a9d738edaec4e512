package sdkfixture

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CheckClientListen drives the server at endpoint with a go-sdk v1.8.0
// client over Streamable HTTP at protocol 2026-07-28: Connect (server/discover,
// plus the client's automatic subscriptions/listen for list changes),
// Subscribe (a second listen for one resource URI), then the three trigger
// tools. It expects the acknowledgements, tools/list_changed,
// prompts/list_changed and resources/updated to arrive.
func CheckClientListen(t testing.TB, endpoint string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	toolsChanged := make(chan struct{}, 10)
	promptsChanged := make(chan struct{}, 10)
	updated := make(chan string, 10)
	acks := make(chan *mcp.SubscriptionsAcknowledgedParams, 10)

	client := mcp.NewClient(&mcp.Implementation{Name: "bench-client", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { promptsChanged <- struct{}{} },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	})
	// The listen request is fire-and-forget in the client; a receiving
	// middleware is the only way to see notifications/subscriptions/acknowledged.
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok {
					acks <- p
				}
			}
			return next(ctx, method, req)
		}
	})

	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		t.Fatalf("negotiated %q", got)
	}
	caps, _ := json.Marshal(cs.InitializeResult().Capabilities)
	t.Logf("discover capabilities: %s", caps)

	wantAck := func(what string) *mcp.SubscriptionsAcknowledgedParams {
		select {
		case a := <-acks:
			b, _ := json.Marshal(a)
			t.Logf("ack (%s): %s", what, b)
			return a
		case <-ctx.Done():
			t.Fatalf("no acknowledgement for %s", what)
			return nil
		}
	}
	a := wantAck("Connect's automatic listen")
	if !a.Notifications.ToolsListChanged || !a.Notifications.PromptsListChanged || a.Notifications.ResourcesListChanged {
		t.Errorf("automatic listen filter = %+v; want tools+prompts only (no ResourceListChangedHandler)", a.Notifications)
	}

	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: ReadmeURI}); err != nil {
		t.Fatal(err)
	}
	wantAck("Subscribe")

	for _, name := range []string{"test_trigger_tool_change", "test_trigger_prompt_change"} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err != nil {
			t.Fatal(name, err)
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger_resource_update", Arguments: map[string]any{"uri": ReadmeURI}}); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []struct {
		name string
		c    <-chan struct{}
	}{{"tools/list_changed", toolsChanged}, {"prompts/list_changed", promptsChanged}} {
		select {
		case <-ch.c:
		case <-ctx.Done():
			t.Fatalf("no %s", ch.name)
		}
	}
	select {
	case uri := <-updated:
		if uri != ReadmeURI {
			t.Errorf("resources/updated for %q", uri)
		}
	case <-ctx.Done():
		t.Fatal("no resources/updated")
	}
}

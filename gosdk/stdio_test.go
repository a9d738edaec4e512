package gosdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/gosdk"
	"github.com/mcplisten/listen/stdio"
)

// note is one notification the client received, with the subscription id
// it was tagged with.
type note struct {
	method, uri string
	sub         any
}

func subID(m mcp.Meta) any { return m["io.modelcontextprotocol/subscriptionId"] }

// TestStdioPlainServer starts from a go-sdk server with no listen code in it
// and shows, over stdio with the go-sdk v1.8.0 client: inferred
// capabilities acknowledged exactly as server/discover advertises them;
// AddTool, RemovePrompts and ResourceUpdated each reaching the right listens
// and no others; cancelling one of two listens leaves the other receiving;
// tool calls and a tool's logging notification pass through the go-sdk.
func TestStdioPlainServer(t *testing.T) {
	srv := plainServer()
	mcp.AddTool(srv, &mcp.Tool{Name: "log"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "from the tool"})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil, err
	})

	closed := make(chan any, 10)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- gosdk.Serve(context.Background(), srv, inR, outW, gosdk.StdioOptions{
			Stdio: stdio.Options{OnClose: func(sub *listen.Subscription, _ error) { closed <- sub.ID().Raw() }},
		})
		outW.Close()
	}()

	notes := make(chan note, 20)
	acks := make(chan *mcp.SubscriptionsAcknowledgedParams, 10)
	logs := make(chan any, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(_ context.Context, r *mcp.ToolListChangedRequest) {
			notes <- note{method: "tools", sub: subID(r.Params.Meta)}
		},
		PromptListChangedHandler: func(_ context.Context, r *mcp.PromptListChangedRequest) {
			notes <- note{method: "prompts", sub: subID(r.Params.Meta)}
		},
		ResourceListChangedHandler: func(_ context.Context, r *mcp.ResourceListChangedRequest) {
			notes <- note{method: "resources", sub: subID(r.Params.Meta)}
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			notes <- note{method: "updated", uri: r.Params.URI, sub: subID(r.Params.Meta)}
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params.Data },
	})
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acks <- req.GetParams().(*mcp.SubscriptionsAcknowledgedParams)
			}
			return next(ctx, method, req)
		}
	})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	require.NoError(t, err)
	next := func(c <-chan note) note {
		t.Helper()
		select {
		case n := <-c:
			return n
		case <-ctx.Done():
			t.Fatal("timed out")
			return note{}
		}
	}
	ack := func() *mcp.SubscriptionsAcknowledgedParams {
		t.Helper()
		select {
		case a := <-acks:
			return a
		case <-ctx.Done():
			t.Fatal("no acknowledgement")
			return nil
		}
	}

	// The client's automatic listen asks for the three list changes its
	// handlers cover: acknowledged as server/discover advertises them.
	capsJSON, _ := json.Marshal(cs.InitializeResult().Capabilities)
	var caps map[string]any
	require.NoError(t, json.Unmarshal(capsJSON, &caps))
	auto := ack()
	autoJSON, _ := json.Marshal(auto.Notifications)
	var gotAuto map[string]any
	require.NoError(t, json.Unmarshal(autoJSON, &gotAuto))
	wantAuto := wantAck(caps, nil)
	delete(wantAuto, "resourceSubscriptions")
	assert.Equal(t, wantAuto, gotAuto)
	assert.Len(t, gotAuto, 3, "tools, prompts and resources list changes inferred")
	autoID := subID(auto.Meta)

	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uriA}))
	a := ack()
	assert.Equal(t, []string{uriA}, a.Notifications.ResourceSubscriptions)
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uriB}))
	bAck := ack()
	assert.Equal(t, []string{uriB}, bAck.Notifications.ResourceSubscriptions)
	aID, bID := subID(a.Meta), subID(bAck.Meta)

	// Tool calls and a tool's own logging notification go through the go-sdk.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Content[0].(*mcp.TextContent).Text)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "log", Meta: mcp.Meta{"io.modelcontextprotocol/logLevel": "debug"}})
	require.NoError(t, err)
	select {
	case d := <-logs:
		assert.Equal(t, "from the tool", d)
	case <-ctx.Done():
		t.Fatal("no logging notification")
	}

	// Each change reaches the right listen only (the handlers see every
	// notification of every listen, tagged with its subscription id).
	addTool(srv, "added")
	assert.Equal(t, note{method: "tools", sub: autoID}, next(notes))
	srv.RemovePrompts("greeting")
	assert.Equal(t, note{method: "prompts", sub: autoID}, next(notes))
	require.NoError(t, srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uriA}))
	assert.Equal(t, note{method: "updated", uri: uriA, sub: aID}, next(notes))

	// Cancelling listen A (notifications/cancelled) ends it alone.
	require.NoError(t, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uriA}))
	select {
	case id := <-closed:
		assert.Equal(t, fmt.Sprint(aID), id, "only listen A closed")
	case <-ctx.Done():
		t.Fatal("listen A not closed")
	}
	require.NoError(t, srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uriA})) // nobody now
	require.NoError(t, srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uriB}))
	assert.Equal(t, note{method: "updated", uri: uriB, sub: bID}, next(notes))
	srv.RemoveTools("added")
	assert.Equal(t, note{method: "tools", sub: autoID}, next(notes), "the automatic listen still receives")
	select {
	case n := <-notes:
		t.Fatalf("unexpected %+v", n)
	default:
	}

	require.NoError(t, cs.Close())
	require.NoError(t, <-served)
}

package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/examples/fixture"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// build builds this command into a temporary directory of t's.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stdio")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Run())
	return bin
}

// The go-sdk v1.8.0 client drives `go run ./examples/stdio` (built once)
// over CommandTransport: tool calls work, its automatic listen gets
// tools/list_changed and prompts/list_changed from the trigger tools,
// a second listen (Subscribe) gets resources/updated, cancelling it leaves
// the automatic listen receiving, and a tool's logging notification passes
// through. Standard output carries the protocol only: the logs go to
// standard error.
func TestGoSDKClientOverStdio(t *testing.T) {
	bin := build(t)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(bin)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	closedLog, stoppedLog := make(chan string, 10), make(chan string, 1)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listen closed") {
				closedLog <- sc.Text()
			}
			if strings.Contains(sc.Text(), "msg=stopped") {
				stoppedLog <- sc.Text()
			}
		}
	}()

	type note struct{ method, uri string }
	notes := make(chan note, 20)
	logs := make(chan any, 10)
	acks := make(chan *mcp.SubscriptionsAcknowledgedParams, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { notes <- note{method: "tools"} },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { notes <- note{method: "prompts"} },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			notes <- note{method: "updated", uri: r.Params.URI}
		},
		//lint:ignore SA1019 the test checks that a tool's logging still passes through
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
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	require.NoError(t, err)
	wait := func(what string, c <-chan note) note {
		t.Helper()
		select {
		case n := <-c:
			return n
		case <-ctx.Done():
			t.Fatalf("no %s", what)
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
	call := func(name string, args map[string]any, meta mcp.Meta) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
		require.NoError(t, err, name)
		require.False(t, res.IsError, name)
	}

	auto := ack()
	assert.True(t, auto.Notifications.ToolsListChanged)
	assert.True(t, auto.Notifications.PromptsListChanged)
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: fixture.ReadmeURI}))
	assert.Equal(t, []string{fixture.ReadmeURI}, ack().Notifications.ResourceSubscriptions)

	call("echo", map[string]any{"text": "hi"}, nil)
	call("test_logging_tool", map[string]any{}, mcp.Meta{"io.modelcontextprotocol/logLevel": "info"})
	select {
	case d := <-logs:
		assert.Equal(t, "test_logging_tool executed", d)
	case <-ctx.Done():
		t.Fatal("no logging notification")
	}

	call("test_trigger_tool_change", map[string]any{}, nil)
	assert.Equal(t, note{method: "tools"}, wait("tools/list_changed", notes))
	call("test_trigger_prompt_change", map[string]any{}, nil)
	assert.Equal(t, note{method: "prompts"}, wait("prompts/list_changed", notes))
	call("trigger_resource_update", map[string]any{"uri": fixture.ReadmeURI}, nil)
	assert.Equal(t, note{method: "updated", uri: fixture.ReadmeURI}, wait("resources/updated", notes))

	// Cancel the resource listen; the automatic listen goes on.
	require.NoError(t, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: fixture.ReadmeURI}))
	select {
	case l := <-closedLog:
		assert.Contains(t, l, "reason=cancelled")
	case <-ctx.Done():
		t.Fatal("the resource listen was not closed")
	}
	call("trigger_resource_update", map[string]any{"uri": fixture.ReadmeURI}, nil) // nobody listens now
	call("test_trigger_tool_change", map[string]any{}, nil)
	assert.Equal(t, note{method: "tools"}, wait("tools/list_changed after the cancel", notes))
	call("test_trigger_prompt_change", map[string]any{}, nil)
	assert.Equal(t, note{method: "prompts"}, wait("prompts/list_changed after the cancel", notes))

	require.NoError(t, cs.Close())
	<-logDone
	select {
	case l := <-stoppedLog:
		assert.Contains(t, l, "listens_opened=2", "the handle's counters, logged as it stops")
	default:
		t.Fatal("no stopped line")
	}
}

// A go-sdk v1.8.0 client of protocol 2025-11-25 (initialize, no listen)
// is served by the go-sdk as without this library: its resources/subscribe
// and the go-sdk's own tools/list_changed and resources/updated.
func TestOlderGoSDKClientOverStdio(t *testing.T) {
	bin := build(t)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type note struct{ method, uri string }
	notes := make(chan note, 20)
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test-2025", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { notes <- note{method: "tools"} },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			notes <- note{method: "updated", uri: r.Params.URI}
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	require.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion)
	wait := func(what string) note {
		t.Helper()
		select {
		case n := <-notes:
			return n
		case <-ctx.Done():
			t.Fatalf("no %s", what)
			return note{}
		}
	}
	call := func(name string, args map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err, name)
		require.False(t, res.IsError, name)
	}
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: fixture.ReadmeURI}))
	call("trigger_resource_update", map[string]any{"uri": fixture.ReadmeURI})
	assert.Equal(t, note{method: "updated", uri: fixture.ReadmeURI}, wait("resources/updated"))
	call("test_trigger_tool_change", map[string]any{})
	assert.Equal(t, note{method: "tools"}, wait("tools/list_changed"))
	require.NoError(t, cs.Close())
}

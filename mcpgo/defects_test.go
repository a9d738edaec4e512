package mcpgo_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of this file show what mcp-go does on its own, without this
// module, in the scenarios the adapter's tests then pass, on each supported
// release (.ci/matrix runs them on each): each asserts the defect, so that
// it fails the day mcp-go fixes it (and the adapter's reason to exist is
// re-examined). TestPlainMCPGoHTTPShutdown shows one that v1.6.0 fixed.

// TestPlainMCPGoHTTPDropsResourceUpdates: mcp-go's own listen grants
// resourceSubscriptions, then drops every resources/updated, the only kind
// of update mcp-go can send (SendNotificationToAllClients).
func TestPlainMCPGoHTTPDropsResourceUpdates(t *testing.T) {
	srv := plainServer()
	ts := httptest.NewServer(server.NewStreamableHTTPServer(srv))
	defer ts.Close()

	s := openListen(t, ts.URL, "1", map[string]any{"toolsListChanged": true, "resourceSubscriptions": []any{uriA}})
	defer s.close()
	assert.Equal(t, map[string]any{"toolsListChanged": true, "resourceSubscriptions": []any{uriA}}, s.ack.Params.Notifications,
		"mcp-go grants resourceSubscriptions")
	updated(srv, uriA)
	addTool(srv, "after")
	// Both broadcasts go through the listen session's one queue, in order:
	// the next message being the list change shows the update was dropped.
	assert.Equal(t, "notifications/tools/list_changed", s.next().Method, "the resources/updated never came")
}

// TestPlainMCPGoHTTPDropsBursts: each mcp-go session has a 100-slot queue
// that drops the newest notification when full, reported only to an
// OnError hook: a reading stream loses most of a burst.
func TestPlainMCPGoHTTPDropsBursts(t *testing.T) {
	dropped := newCounter()
	hooks := &server.Hooks{}
	hooks.AddOnError(func(_ context.Context, _ any, _ mcp.MCPMethod, _ any, err error) {
		if errors.Is(err, server.ErrNotificationChannelBlocked) {
			dropped.add()
		}
	})
	srv := server.NewMCPServer("plain", "1", server.WithToolCapabilities(true), server.WithHooks(hooks))
	ts := httptest.NewServer(server.NewStreamableHTTPServer(srv))
	defer ts.Close()

	s := openListen(t, ts.URL, "1", map[string]any{"toolsListChanged": true})
	defer s.close()
	const burst = 2000
	for range burst {
		srv.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
	}
	received := 0
	for received+dropped.get() < burst {
		select {
		case m := <-s.msgs:
			require.Equal(t, "notifications/tools/list_changed", m.Method)
			received++
		case <-dropped.ch:
		}
	}
	t.Logf("mcp-go alone: a reading stream received %d of %d broadcasts, %d dropped", received, burst, dropped.get())
	assert.Less(t, received, burst, "mcp-go drops part of a burst")
}

// TestPlainMCPGoStdioBreaksTheSpec: over mcp-go's stdio, a listen that
// asked only for prompt list changes receives an untagged tools/list_changed
// (every listen shares the one stdio session, which has no filter), and a
// cancelled listen still gets a result.
func TestPlainMCPGoStdioBreaksTheSpec(t *testing.T) {
	srv := plainServer()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- server.NewStdioServer(srv).Listen(context.Background(), inR, outW) }()
	out := lineFeed(t, outR)
	send := func(b []byte) {
		t.Helper()
		_, err := inW.Write(append(b, '\n'))
		require.NoError(t, err)
	}

	send(request("1", "subscriptions/listen", "2026-07-28", map[string]any{"notifications": map[string]any{"promptsListChanged": true}}))
	ack := out.next()
	require.Equal(t, "notifications/subscriptions/acknowledged", ack.Method)
	assert.Equal(t, map[string]any{"promptsListChanged": true}, ack.Params.Notifications)

	addTool(srv, "after")
	m := out.next()
	assert.Equal(t, "notifications/tools/list_changed", m.Method, "a notification the listen did not ask for")
	assert.Empty(t, m.tag(), "and untagged")

	send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`))
	m = out.next()
	assert.Equal(t, `1`, string(m.ID), "the cancelled listen gets an answer")
	assert.NotNil(t, m.Result)

	require.NoError(t, inW.Close())
	require.NoError(t, <-served)
	require.NoError(t, outW.Close())
	out.rest()
}

// mcpgoRelease returns the mark3labs/mcp-go version the test binary was
// built with, as go list tells it in the test's environment (the
// workspace's, or .ci/matrix's GOWORK=off and -modfile): a test binary
// records no module versions.
func mcpgoRelease(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/mark3labs/mcp-go").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// TestPlainMCPGoHTTPShutdown: StreamableHTTPServer.Shutdown ends an open
// listen with its completion result from v1.6.0 on; before, the stream was
// cut without one.
func TestPlainMCPGoHTTPShutdown(t *testing.T) {
	ts := httptest.NewUnstartedServer(nil)
	// Shutdown shuts ts's http.Server down: it returns once every handler
	// has (or at the deadline, before v1.6.0, whose listens never end).
	sdk := server.NewStreamableHTTPServer(plainServer(), server.WithStreamableHTTPServer(ts.Config))
	ts.Config.Handler = sdk
	ts.Start()
	defer ts.Close()
	s := openListen(t, ts.URL, "1", map[string]any{"toolsListChanged": true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = sdk.Shutdown(ctx)
	ts.CloseClientConnections() // what was written before is still read
	completed := false
	for _, m := range s.rest() {
		completed = completed || (string(m.ID) == "1" && m.Result != nil)
	}
	s.resp.Body.Close()
	release := mcpgoRelease(t)
	fixed := release != "v1.2.1" && release != "v1.5.0"
	assert.Equal(t, fixed, completed, "mcp-go %s: the listen got its completion result at Shutdown", release)
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/examples/fixture"
	"github.com/mcplisten/listen/examples/internal/command"
	"github.com/mcplisten/listen/listentest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func startServer(t *testing.T) (*server, string) {
	t.Helper()
	srv, err := newServer(slog.New(slog.NewTextHandler(io.Discard, nil)), &command.HTTPFlags{MaxStreams: 100}, nil)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.handler)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.handler.Shutdown(ctx))
		ts.Close()
	})
	return srv, ts.URL
}

// The official go-sdk v1.8.0 client, which we did not write, opens listens
// on our server and receives the acknowledgements and the notifications it
// asked for.
func TestGoSDKClientInterop(t *testing.T) {
	_, url := startServer(t)
	fixture.CheckClientListen(t, url)
}

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func post(t *testing.T, ctx context.Context, url, method, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if method == "tools/call" {
		var p struct {
			Params struct{ Name string } `json:"params"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &p))
		req.Header.Set("Mcp-Name", p.Params.Name)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// sseMessages reads the messages of an SSE stream onto a channel.
func sseMessages(body io.Reader) <-chan map[string]any {
	out := make(chan map[string]any, 64)
	go func() {
		defer close(out)
		r := listentest.NewSSEReader(body)
		for {
			data, err := r.Data()
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(data, &m) == nil {
				out <- m
			}
		}
	}()
	return out
}

func callTool(t *testing.T, url, name, args string) {
	t.Helper()
	resp := post(t, t.Context(), url, "tools/call", `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{`+meta+`,"name":"`+name+`","arguments":`+args+`}}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.NotContains(t, string(b), `"error"`)
}

// Each listen stream gets exactly what it asked for, in order, and nothing
// else; the trigger tools change the go-sdk server only, and its own
// notifications reach the streams.
func TestListenStreamsGetOnlyWhatTheyAskedFor(t *testing.T) {
	_, url := startServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	open := func(id, filter string) <-chan map[string]any {
		resp := post(t, ctx, url, "subscriptions/listen", `{"jsonrpc":"2.0","id":`+id+`,"method":"subscriptions/listen","params":{`+meta+`,"notifications":`+filter+`}}`)
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		t.Cleanup(func() { resp.Body.Close() })
		msgs := sseMessages(resp.Body)
		ack := <-msgs
		require.Equal(t, "notifications/subscriptions/acknowledged", ack["method"])
		return msgs
	}
	tools := open(`"tools"`, `{"toolsListChanged":true}`)
	prompts := open(`"prompts"`, `{"promptsListChanged":true}`)
	readme := open(`7`, `{"resourceSubscriptions":["`+fixture.ReadmeURI+`"]}`)

	next := func(c <-chan map[string]any) map[string]any {
		select {
		case m := <-c:
			return m
		case <-ctx.Done():
			t.Fatal("timed out")
			return nil
		}
	}
	subID := func(m map[string]any) any {
		return m["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"]
	}
	// Two rounds (the go-sdk debounces list changes by 10 ms, so a round's
	// notifications are read before the next round changes anything):
	// whatever arrives first on each stream must be its round's only event.
	for range 2 {
		callTool(t, url, "trigger_resource_update", `{"uri":"test://static/other"}`) // nobody asked
		callTool(t, url, "test_trigger_tool_change", `{}`)
		callTool(t, url, "test_trigger_prompt_change", `{}`)
		callTool(t, url, "trigger_resource_update", `{"uri":"`+fixture.ReadmeURI+`"}`)
		m := next(tools)
		assert.Equal(t, "notifications/tools/list_changed", m["method"])
		assert.Equal(t, "tools", subID(m))
		m = next(prompts)
		assert.Equal(t, "notifications/prompts/list_changed", m["method"])
		assert.Equal(t, "prompts", subID(m))
		m = next(readme)
		assert.Equal(t, "notifications/resources/updated", m["method"])
		assert.Equal(t, fixture.ReadmeURI, m["params"].(map[string]any)["uri"])
		assert.EqualValues(t, 7, subID(m))
	}
}

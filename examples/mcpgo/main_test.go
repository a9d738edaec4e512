package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/mcpgo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startServer serves the example's handler (and what main puts in front of
// it) on a test server, with the bearer token token (none if empty).
func startServer(t *testing.T, token string) string {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	handler, err := newHandler(logger, config{token: token, maxStreams: 100})
	require.NoError(t, err)
	ts := httptest.NewServer(requireToken(token, requireSampling(handler, handler.Listen().CheckOrigin)))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, handler.Shutdown(ctx))
		ts.Close()
	})
	return ts.URL
}

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}`

func post(t *testing.T, ctx context.Context, url, method, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	var p struct {
		Params json.RawMessage `json:"params"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	for k, v := range mcp.StandardHeaders("2026-07-28", mcp.MCPMethod(method), p.Params) {
		req.Header.Set(k, v)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// messages reads the JSON messages of an SSE stream onto a channel, closed
// when the stream ends (read it to its end, or streams of a few messages).
func messages(body io.Reader) <-chan map[string]any {
	out := make(chan map[string]any, 64)
	go func() { // ends with the stream
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

// next returns the next message of c, failing t at ctx's end.
func next(t *testing.T, ctx context.Context, c <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case m := <-c:
		return m
	case <-ctx.Done():
		t.Fatal("timed out")
		return nil
	}
}

// subID is the subscription id a listen's message is tagged with.
func subID(m map[string]any) any {
	return m["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"]
}

func withMeta(caps string) string { return strings.Replace(meta, "%s", caps, 1) }

// callTool calls a tool and returns the HTTP status and the answer.
func callTool(t *testing.T, url, name, args, caps string, header map[string]string) (int, map[string]any) {
	t.Helper()
	resp := post(t, t.Context(), url, "tools/call", `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{`+withMeta(caps)+`,"name":"`+name+`","arguments":`+args+`}}`, header)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
		require.NoError(t, json.Unmarshal(b, &m), "%s", b)
	}
	return resp.StatusCode, m
}

// Each listen stream gets exactly what it asked for, in order, and nothing
// else, tagged with its id; the trigger tools change the mcp-go server only,
// and its own broadcasts reach the streams. Two rounds, each read before
// the next changes anything.
func TestListenStreamsGetOnlyWhatTheyAskedFor(t *testing.T) {
	url := startServer(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	open := func(id, filter string) <-chan map[string]any {
		resp := post(t, ctx, url, "subscriptions/listen", `{"jsonrpc":"2.0","id":`+id+`,"method":"subscriptions/listen","params":{`+withMeta("{}")+`,"notifications":`+filter+`}}`, nil)
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		t.Cleanup(func() { resp.Body.Close() })
		msgs := messages(resp.Body)
		require.Equal(t, "notifications/subscriptions/acknowledged", next(t, ctx, msgs)["method"])
		return msgs
	}
	tools := open(`"tools"`, `{"toolsListChanged":true}`)
	prompts := open(`"prompts"`, `{"promptsListChanged":true}`)
	readme := open(`7`, `{"resourceSubscriptions":["`+readmeURI+`"]}`)
	call := func(name, args string) {
		t.Helper()
		status, m := callTool(t, url, name, args, "{}", nil)
		require.Equal(t, http.StatusOK, status, "%v", m)
		require.Nil(t, m["error"], "%v", m)
	}
	for range 2 {
		call("trigger_resource_update", `{"uri":"test://static/other"}`) // nobody asked
		call("test_trigger_tool_change", `{}`)
		call("test_trigger_prompt_change", `{}`)
		call("trigger_resource_update", `{"uri":"`+readmeURI+`"}`)
		m := next(t, ctx, tools)
		assert.Equal(t, "notifications/tools/list_changed", m["method"])
		assert.Equal(t, "tools", subID(m))
		m = next(t, ctx, prompts)
		assert.Equal(t, "notifications/prompts/list_changed", m["method"])
		assert.Equal(t, "prompts", subID(m))
		m = next(t, ctx, readme)
		assert.Equal(t, "notifications/resources/updated", m["method"])
		assert.Equal(t, readmeURI, m["params"].(map[string]any)["uri"])
		assert.EqualValues(t, 7, subID(m))
	}
}

// test_missing_capability is answered with -32021 and HTTP 400 when the
// client did not declare sampling (which mcp-go alone cannot do), and runs
// when it did; a cross-site call is refused by the endpoint's rules first.
func TestMissingCapability(t *testing.T) {
	url := startServer(t, "")
	status, m := callTool(t, url, missingCapabilityTool, `{}`, "{}", nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.JSONEq(t, `{"code":-32021,"message":"sampling capability required but not declared by client","data":{"requiredCapabilities":{"sampling":{}}}}`, mustJSON(t, m["error"]))
	assert.EqualValues(t, 99, m["id"])

	status, m = callTool(t, url, missingCapabilityTool, `{}`, `{"sampling":{}}`, nil)
	assert.Equal(t, http.StatusOK, status, "%v", m)
	assert.Nil(t, m["error"])

	status, _ = callTool(t, url, missingCapabilityTool, `{}`, "{}", map[string]string{"Origin": "http://evil.example"})
	assert.Equal(t, http.StatusForbidden, status)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// mcp-go's own client drives the example with -stdio (built once): its
// listen is acknowledged and gets tools/list_changed from the trigger tool,
// tagged; standard output carries the protocol only (the logs go to
// standard error).
func TestStdioFlag(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcpgo")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	c, err := client.NewStdioMCPClient(bin, nil, "-stdio")
	require.NoError(t, err)
	notes := make(chan mcp.JSONRPCNotification, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) { notes <- n })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, c.Start(ctx)) // installs the notification handler
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "stdio-test", Version: "0"}
	_, err = c.Initialize(ctx, init)
	require.NoError(t, err)
	require.Equal(t, "2026-07-28", c.ProtocolVersion())
	stop, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
	require.NoError(t, err)
	next := func() mcp.JSONRPCNotification {
		select {
		case n := <-notes:
			return n
		case <-ctx.Done():
			t.Fatal("timed out")
			return mcp.JSONRPCNotification{}
		}
	}
	ack := next()
	require.Equal(t, "notifications/subscriptions/acknowledged", ack.Method)
	_, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "test_trigger_tool_change"}})
	require.NoError(t, err)
	n := next()
	assert.Equal(t, "notifications/tools/list_changed", n.Method)
	assert.Equal(t, ack.Params.Meta["io.modelcontextprotocol/subscriptionId"], n.Params.Meta["io.modelcontextprotocol/subscriptionId"])
	stop()
	require.NoError(t, c.Close())
}

// The server offers the tools and capabilities of the benchmark's plain
// mcp-go server (bench/internal/mcpgofixture, kept equal by hand), and
// advertises every kind a listen can receive.
func TestServer(t *testing.T) {
	s := newServer("t", "0")
	d, err := mcpgo.Discover(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, listen.Capabilities{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourcesSubscribe: true}, d.Capabilities)
	resp := s.HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+withMeta("{}")+`}}`))
	raw, err := json.Marshal(resp)
	require.NoError(t, err)
	var r struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(raw, &r), "%s", raw)
	var names []string
	for _, tool := range r.Result.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	assert.Equal(t, []string{"echo", "test_logging_tool", missingCapabilityTool, "test_streaming_elicitation",
		"test_trigger_prompt_change", "test_trigger_tool_change", "trigger_resource_update"}, names)
}

// With -token: a request without the token is refused with 401, a listen
// included; with it, mcp-go's handlers see the principal (whoami) and so
// does the listen (CanRead lets the resource update through).
func TestToken(t *testing.T) {
	url := startServer(t, "s3cret")
	bearer := map[string]string{"Authorization": "Bearer s3cret"}
	status, _ := callTool(t, url, "whoami", `{}`, "{}", nil)
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = callTool(t, url, "whoami", `{}`, "{}", map[string]string{"Authorization": "Bearer wrong"})
	assert.Equal(t, http.StatusUnauthorized, status)
	resp := post(t, t.Context(), url, "subscriptions/listen", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{`+withMeta("{}")+`,"notifications":{"toolsListChanged":true}}}`, nil)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	status, m := callTool(t, url, "whoami", `{}`, "{}", bearer)
	require.Equal(t, http.StatusOK, status, "%v", m)
	assert.Contains(t, mustJSON(t, m["result"]), `"text":"token holder"`)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp = post(t, ctx, url, "subscriptions/listen", `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{`+withMeta("{}")+`,"notifications":{"resourceSubscriptions":["`+readmeURI+`"]}}}`, bearer)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	defer resp.Body.Close()
	msgs := messages(resp.Body)
	require.Equal(t, "notifications/subscriptions/acknowledged", next(t, ctx, msgs)["method"])
	status, m = callTool(t, url, "trigger_resource_update", `{"uri":"`+readmeURI+`"}`, "{}", bearer)
	require.Equal(t, http.StatusOK, status, "%v", m)
	assert.Equal(t, "notifications/resources/updated", next(t, ctx, msgs)["method"])
}

package mcpgo_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/mcpgo"
	"github.com/mcplisten/listen/streamhttp"
)

// rawPost sends body with only the headers given and returns the status
// and the body read within failsafe (a stream that never ends is cut).
func rawPost(t *testing.T, url, body string, header map[string]string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		lastSession = sid
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// lastSession is the last Mcp-Session-Id rawPost saw.
var lastSession string

// TestHTTPNoListenReachesMCPGo: whatever a body plays on (its member names'
// case, which encoding/json and so mcp-go ignore; a version; no headers),
// a listen never opens a stream outside this library's limits: the front
// sends every body its parser reads as a listen to the listen handler, and
// mcp-go v1.2.1 refuses the rest itself (a subscriptions/listen outside
// 2026-07-28 with -32601; a 2026-07-28 request without a matching
// Mcp-Method header with -32020).
func TestHTTPNoListenReachesMCPGo(t *testing.T) {
	srv := plainServer()
	h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	modern := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	legacy := `"_meta":{}`
	headers := map[string]string{"Mcp-Method": "tools/list", "MCP-Protocol-Version": "2026-07-28"}
	// An initialize session of mcp-go's own, for the bodies sent within it.
	status, _ := rawPost(t, ts.URL, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`, nil)
	require.Equal(t, http.StatusOK, status)
	sid := lastSession
	require.NotEmpty(t, sid)
	session := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	for _, c := range []struct {
		name, body string
		header     map[string]string
	}{
		{"METHOD, legacy, no headers", `{"jsonrpc":"2.0","id":1,"METHOD":"subscriptions/listen","PARAMS":{` + legacy + `,"notifications":{"toolsListChanged":true}}}`, nil},
		{"Method, modern, tools/list headers", `{"jsonrpc":"2.0","id":1,"Method":"subscriptions/listen","params":{` + modern + `,"notifications":{"toolsListChanged":true}}}`, headers},
		{"method, legacy, no headers", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` + legacy + `,"notifications":{"toolsListChanged":true}}}`, nil},
		{"method twice", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"subscriptions/listen","params":{` + legacy + `,"notifications":{"toolsListChanged":true}}}`, nil},
		{"in a batch", `[{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` + legacy + `,"notifications":{"toolsListChanged":true}}}]`, nil},
		{"METHOD, in an mcp-go session", `{"jsonrpc":"2.0","id":1,"METHOD":"subscriptions/listen","PARAMS":{"notifications":{"toolsListChanged":true}}}`, session},
		{"Method, in an mcp-go session", `{"jsonrpc":"2.0","id":1,"Method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`, session},
		{"method, in an mcp-go session", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`, session},
	} {
		status, body := rawPost(t, ts.URL, c.body, c.header)
		assert.NotContains(t, body, "notifications/subscriptions/acknowledged", "%s: a stream was opened: %d %s", c.name, status, body)
		assert.True(t, status != http.StatusOK || strings.Contains(body, `"error"`), "%s: refused: %d %s", c.name, status, body)
	}
	require.NoError(t, h.Shutdown(context.Background()))
}

// TestHTTPBodiesAreBounded: a body over MaxBodyBytes is refused with 413
// before mcp-go (which reads bodies whole) sees it, and one that does not
// arrive within HTTP.ReadTimeout with 408; the tool never runs.
func TestHTTPBodiesAreBounded(t *testing.T) {
	srv := plainServer()
	ran := 0
	srv.AddTool(mcpTool("count"), countTool(&ran))
	h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{MaxBodyBytes: 1 << 10, HTTP: streamhttp.Options{ReadTimeout: 300 * time.Millisecond}})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()

	big := request("1", "tools/call", "2026-07-28", map[string]any{"name": "count", "arguments": map[string]any{"x": strings.Repeat("a", 2<<10)}})
	resp := post(t, ts.URL, "tools/call", "2026-07-28", big)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	// A body announced and never finished: cut by the read deadline.
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: "+strings.TrimPrefix(ts.URL, "http://")+"\r\nContent-Type: application/json\r\nMcp-Method: tools/call\r\nMCP-Protocol-Version: 2026-07-28\r\nContent-Length: 500\r\n\r\n{\"jsonrpc\":")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(failsafe)))
	reply, _ := io.ReadAll(conn)
	assert.True(t, strings.HasPrefix(string(reply), "HTTP/1.1 408"), "%q", reply)
	assert.Zero(t, ran)
	require.NoError(t, h.Shutdown(context.Background()))
}

package gosdk_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/gosdk"
)

// connectClient connects a go-sdk v1.8.0 client speaking version to
// endpoint, with a tools/list_changed and a resources/updated handler.
func connectClient(t *testing.T, endpoint, version string, tools chan<- string, updates chan<- string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "client-" + version, Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { tools <- version },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if updates != nil {
				updates <- r.Params.URI
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	require.Equal(t, version, cs.InitializeResult().ProtocolVersion)
	return cs
}

// One endpoint serves both eras at once: a go-sdk client on 2025-11-25
// gets its stateful session (Mcp-Session-Id, the GET stream) and a client
// on 2026-07-28 its listen; both receive tools/list_changed after AddTool.
// Shutdown then ends the older client's session too, so that the HTTP
// server's own shutdown is not held by its GET stream. Before, NewHandler
// forced the go-sdk into stateless mode: the older client got no session
// and no notification.
func TestHTTPBothEras(t *testing.T) {
	srv := plainServer()
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()

	tools := make(chan string, 10)
	old := connectClient(t, ts.URL, "2025-11-25", tools, nil)
	assert.NotEmpty(t, old.ID(), "the older client has a session")
	cur := connectClient(t, ts.URL, "2026-07-28", tools, nil)
	assert.Empty(t, cur.ID(), "2026-07-28 is sessionless")
	ctx := context.Background()
	res, err := old.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "old"}})
	require.NoError(t, err)
	assert.Equal(t, "old", res.Content[0].(*mcp.TextContent).Text)
	res, err = cur.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "new"}})
	require.NoError(t, err)
	assert.Equal(t, "new", res.Content[0].(*mcp.TextContent).Text)
	require.Eventually(t, func() bool { return h.Server().Stats().Active == 1 }, failsafe, failsafeTick,
		"the 2026-07-28 client's automatic listen")

	addTool(srv, "added")
	got := map[string]bool{recv(t, tools, "tools/list_changed"): true, recv(t, tools, "tools/list_changed"): true}
	assert.Equal(t, map[string]bool{"2025-11-25": true, "2026-07-28": true}, got)

	require.NoError(t, h.Shutdown(ctx))
	for ss := range srv.Sessions() {
		assert.Empty(t, ss.ID(), "Shutdown closed the session %q", ss.ID())
	}
	_ = cur.Close()
	_ = old.Close()
}

// failsafeTick is Eventually's polling period.
const failsafeTick = 5 * time.Millisecond

// Stateless true serves every request statelessly, as before: an older
// client's initialize gets no session, and a GET is refused.
func TestHTTPStatelessOnly(t *testing.T) {
	h, err := gosdk.NewHandler(plainServer(), gosdk.HandlerOptions{SDK: &mcp.StreamableHTTPOptions{Stateless: true}})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	ts := httptest.NewServer(h)
	defer ts.Close()
	tools := make(chan string, 1)
	old := connectClient(t, ts.URL, "2025-11-25", tools, nil)
	defer old.Close()
	assert.Empty(t, old.ID())
	req, _ := http.NewRequest(http.MethodGet, ts.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// One call, Handler.ResourceUpdated, tells every watcher of a URI exactly
// once: a listen naming it, a folder listen above it (SubResources) and an
// older client subscribed with resources/subscribe. Each of them gets one
// copy per call and nothing else; a bare Server.ResourceUpdated reaches the
// older client only. Before, the go-sdk's call reached a folder listen only
// when some listen named the URI exactly, and the hub's only the listens.
func TestHTTPResourceUpdatedReachesEveryoneOnce(t *testing.T) {
	const (
		folder   = "test://dir/"
		file     = "test://dir/a.txt"
		sentinel = "test://dir/z.txt"
	)
	srv := plainServer()
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{Options: gosdk.Options{Listen: listen.Options{SubResources: &listen.SubResources{}}}})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := context.Background()

	updates := make(chan string, 20)
	old := connectClient(t, ts.URL, "2025-11-25", make(chan string, 10), updates)
	for _, u := range []string{file, sentinel} {
		require.NoError(t, old.Subscribe(ctx, &mcp.SubscribeParams{URI: u}))
	}
	exact, _ := openListen(t, ts.URL, "exact", map[string]any{"resourceSubscriptions": []any{file, sentinel}})
	dir, _ := openListen(t, ts.URL, "folder", map[string]any{"resourceSubscriptions": []any{folder}})

	const n = 3
	for range n {
		require.NoError(t, h.ResourceUpdated(ctx, file))
	}
	require.NoError(t, h.ResourceUpdated(ctx, sentinel))
	for name, s := range map[string]*stream{"exact": exact, "folder": dir} {
		var uris []string
		for {
			m := s.next()
			require.Equal(t, "notifications/resources/updated", m.Method, name)
			if m.Params.URI == sentinel {
				break
			}
			uris = append(uris, m.Params.URI)
		}
		assert.Equal(t, []string{file, file, file}, uris, name)
	}
	var uris []string
	for u := recv(t, updates, "resources/updated"); u != sentinel; u = recv(t, updates, "resources/updated") {
		uris = append(uris, u)
	}
	assert.Equal(t, []string{file, file, file}, uris, "the older client")

	// The go-sdk's own call: its subscribers only.
	require.NoError(t, srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: file}))
	assert.Equal(t, file, recv(t, updates, "resources/updated"))
	require.NoError(t, h.Shutdown(ctx))
	assert.Equal(t, []string{"result"}, exact.rest())
	assert.Equal(t, []string{"result"}, dir.rest())
	assert.Equal(t, uint64(n+1), h.Bridge().Stats().ResourceUpdates)
	_ = old.Close()
}

// Every request of the endpoint, not only listens, gets the Origin and Host
// check: a cross-site tools/call (Origin of another site, with or without
// Sec-Fetch-Site: cross-site, or Origin: null) is refused with 403 and the
// listen path's JSON-RPC error, and the tool does not run. Before, it
// reached the go-sdk and ran.
func TestHTTPCrossSiteToolCall(t *testing.T) {
	srv := plainServer()
	var ran atomic.Int32
	mcp.AddTool(srv, &mcp.Tool{Name: "trigger"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		ran.Add(1)
		return &mcp.CallToolResult{}, nil, nil
	})
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	ts := httptest.NewServer(h)
	defer ts.Close()
	call := func(hdr http.Header) (int, string) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"_meta": meta, "name": "trigger", "arguments": map[string]any{}}})
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "trigger")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	for _, hdr := range []http.Header{
		{"Origin": {"http://evil.example"}},
		{"Origin": {"http://evil.example"}, "Sec-Fetch-Site": {"cross-site"}},
		{"Origin": {"null"}},
		{"Sec-Fetch-Site": {"cross-site"}},
	} {
		status, body := call(hdr)
		assert.Equal(t, http.StatusForbidden, status, "%v", hdr)
		assert.Equal(t, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: invalid Origin or Host"}}`, body)
	}
	assert.Zero(t, ran.Load(), "the tool never ran")

	// The same call from a non-browser client runs.
	status, body := call(nil)
	assert.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, int32(1), ran.Load())
}

// A request that is not a listen but names, in MCP-Protocol-Version, a
// version the server does not speak is answered like such a listen: 400
// -32022 with the request's id and data.supported, as JSON. Before, the
// go-sdk answered it in plain text.
func TestHTTPUnsupportedVersionOnOtherRequests(t *testing.T) {
	h, err := gosdk.NewHandler(plainServer(), gosdk.HandlerOptions{})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	ts := httptest.NewServer(h)
	defer ts.Close()
	resp := post(t, ts.URL, 9, "tools/list", "1900-01-01", nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":9,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"1900-01-01"}}}`, string(b))
}

// No body the go-sdk decodes as a listen reaches the go-sdk's own listen
// code, whatever parser differential its keys play on (repeated keys, case,
// escapes), with any Mcp-Method header: a receiving middleware on the go-sdk
// server sees every method that reaches it, and never subscriptions/listen.
func TestHTTPNoListenReachesTheGoSDK(t *testing.T) {
	srv := plainServer()
	var mu sync.Mutex
	var reached []string
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			mu.Lock()
			reached = append(reached, method)
			mu.Unlock()
			return next(ctx, method, req)
		}
	})
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	ts := httptest.NewServer(h)
	defer ts.Close()
	for _, version := range []string{"2026-07-28", "2025-11-25", "2024-11-05"} {
		m := map[string]any{}
		for k, v := range meta {
			m[k] = v
		}
		m["io.modelcontextprotocol/protocolVersion"] = version
		mj, _ := json.Marshal(m)
		params := `"params":{"notifications":{"toolsListChanged":true},"_meta":` + string(mj) + `}`
		bodies := []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"subscriptions/listen",` + params + `}`,
			`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","method":"tools/list",` + params + `}`,
			`{"jsonrpc":"2.0","id":1,"\u006dethod":"subscriptions/listen",` + params + `}`,
			`{"jsonrpc":"2.0","id":1,"method":"subscriptions\/listen",` + params + `}`,
			`{"jsonrpc":"2.0","id":1,"method":"subscriptions\u002flisten",` + params + `}`,
			`{"jsonrpc":"2.0","id":1,"METHOD":"subscriptions/listen","method":"tools/list",` + params + `}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","METHOD":"subscriptions/listen",` + params + `}`,
			`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen",` + params + `}`,
			`[{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen",` + params + `}]`,
		}
		for _, body := range bodies {
			for _, header := range []string{"", "subscriptions/listen", "tools/list"} {
				req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", version)
				if header != "" {
					req.Header.Set("Mcp-Method", header)
				}
				ctx, cancel := context.WithTimeout(context.Background(), failsafe)
				resp, err := http.DefaultClient.Do(req.WithContext(ctx))
				require.NoError(t, err)
				resp.Body.Close() // a stream, if one opened, ends with its request
				cancel()
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	assert.NotContains(t, reached, "subscriptions/listen", "methods that reached the go-sdk: %v", reached)
}

// A 2026-07-28 request sent without its MCP-Protocol-Version header (its
// body's _meta names the version) goes to the stateless go-sdk handler,
// which asks for the header (-32020), not to the stateful one, which would
// claim the server does not speak 2026-07-28 (-32022).
func TestHTTPHeaderlessNewRequest(t *testing.T) {
	h, err := gosdk.NewHandler(plainServer(), gosdk.HandlerOptions{})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	ts := httptest.NewServer(h)
	defer ts.Close()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": map[string]any{"_meta": meta}})
	resp, b := postRaw(t, ts.URL, string(body), map[string]string{"Mcp-Method": "tools/list"})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, b, `"code":-32020`)
}

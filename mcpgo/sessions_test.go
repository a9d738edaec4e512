package mcpgo_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/adapter"
	"github.com/mcplisten/listen/mcpgo"
)

// The exact messages of the session refusals these tests compare.
const (
	msgSessionNotFound       = "Session not found"
	msgTooManyClientSessions = "Too many sessions open for this client"
	msgTooManyGetStreams     = "Server busy: too many GET streams"
	msgTooManySessions       = "Server busy: too many sessions"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"0"}}}`

// madeUp is a session id of the form mcp-go issues, that it never issued.
const madeUp = "mcp-session-00000000-0000-4000-8000-000000000000"

// byHeader keys clients by their X-Client header (standing for the
// addresses of several machines).
func byHeader(r *http.Request) string { return r.Header.Get("X-Client") }

// initializeAs sends an older client's initialize with X-Client: client
// and returns the session id ("" if none), the status and the body.
func initializeAs(t *testing.T, endpoint, client string) (string, int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, stringsReader(initializeBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Client", client)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Header.Get("Mcp-Session-Id"), resp.StatusCode, string(b)
}

// sessionRequest sends method naming session id (a POST with body), and
// returns the response, its body unread.
func sessionRequest(t *testing.T, ctx context.Context, method, endpoint, id, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, endpoint, stringsReader(body))
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func newSessionsServer(t *testing.T, s *server.MCPServer, so adapter.SessionOptions) (*mcpgo.Handler, *httptest.Server) {
	t.Helper()
	h, err := mcpgo.NewHandler(s, mcpgo.HandlerOptions{Sessions: so})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		_ = h.Shutdown(context.Background())
	})
	return h, ts
}

// The sessions initialize opens are bounded in total and per client: a
// flood from one client is refused beyond its share, before mcp-go, and
// another client still opens one; a DELETE frees its slot at once.
func TestHTTPSessionsBounded(t *testing.T) {
	h, ts := newSessionsServer(t, plainServer(), adapter.SessionOptions{Max: 4, MaxPerClient: 3, ClientKey: byHeader})
	var flood []string
	for i := range 6 {
		id, status, body := initializeAs(t, ts.URL, "flood")
		if i < 3 {
			require.Equal(t, http.StatusOK, status)
			require.NotEmpty(t, id)
			flood = append(flood, id)
			continue
		}
		assert.Equal(t, http.StatusTooManyRequests, status)
		assert.Equal(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"`+msgTooManyClientSessions+`"}}`, body)
	}
	id, status, _ := initializeAs(t, ts.URL, "older")
	assert.Equal(t, http.StatusOK, status)
	assert.NotEmpty(t, id)
	_, status, body := initializeAs(t, ts.URL, "third")
	assert.Equal(t, http.StatusServiceUnavailable, status, "Max counts every client")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"`+msgTooManySessions+`"}}`, body)

	resp := sessionRequest(t, context.Background(), http.MethodDelete, ts.URL, flood[0], "")
	readAll(resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	id, _, _ = initializeAs(t, ts.URL, "third")
	assert.NotEmpty(t, id, "a deleted session's slot is free at once")
	assert.Equal(t, 4, h.SessionStats().Open)
}

// A session no request used for Sessions.IdleTimeout is ended in mcp-go
// (unregistered from the MCPServer, with its state), and a request naming
// it gets 404.
func TestHTTPSessionsExpire(t *testing.T) {
	gone := make(chan string, 4)
	hooks := &server.Hooks{}
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) { gone <- s.SessionID() })
	s := server.NewMCPServer("t", "1", server.WithToolCapabilities(true), server.WithHooks(hooks))
	h, ts := newSessionsServer(t, s, adapter.SessionOptions{IdleTimeout: 50 * time.Millisecond})
	id, status, _ := initializeAs(t, ts.URL, "")
	require.Equal(t, http.StatusOK, status)
	select {
	case g := <-gone:
		assert.Equal(t, id, g)
	case <-time.After(10 * time.Second): // failsafe only: expiry is due after 50 ms
		t.Fatal("the idle session was not ended in mcp-go")
	}
	resp := sessionRequest(t, context.Background(), http.MethodPost, ts.URL, id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	assert.Equal(t, msgSessionNotFound+"\n", readAll(resp))
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, uint64(1), h.SessionStats().Expired)
}

// A GET stream, or any other request, naming a session id that was never
// issued is answered 404 before mcp-go sees it (mcp-go served such a GET
// stream, and such a request, for any well-formed id).
func TestHTTPUnknownSession(t *testing.T) {
	_, ts := newSessionsServer(t, plainServer(), adapter.SessionOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tc := range []struct{ method, body string }{
		{http.MethodGet, ""},
		{http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{http.MethodDelete, ""},
	} {
		resp := sessionRequest(t, ctx, tc.method, ts.URL, madeUp, tc.body)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, tc.method)
		assert.Equal(t, msgSessionNotFound+"\n", readAll(resp), tc.method)
	}
}

// GET streams count against Sessions.MaxGetStreams, with a session id or
// without one (mcp-go opens a session of its own for the stream).
func TestHTTPGetStreamsBounded(t *testing.T) {
	_, ts := newSessionsServer(t, plainServer(), adapter.SessionOptions{MaxGetStreams: 1})
	a, _, _ := initializeAs(t, ts.URL, "")
	b, _, _ := initializeAs(t, ts.URL, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ga := sessionRequest(t, ctx, http.MethodGet, ts.URL, a, "")
	defer ga.Body.Close()
	require.Equal(t, http.StatusOK, ga.StatusCode)
	for _, id := range []string{b, ""} {
		req, err := http.NewRequest(http.MethodGet, ts.URL, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		if id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		assert.Equal(t, `{"jsonrpc":"2.0","error":{"code":-32603,"message":"`+msgTooManyGetStreams+`"}}`, readAll(resp))
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "session %q", id)
	}
}

func stringsReader(s string) io.Reader {
	if s == "" {
		return nil
	}
	return strings.NewReader(s)
}

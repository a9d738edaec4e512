package gosdk_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/adapter"
	"github.com/mcplisten/listen/gosdk"
)

// The exact messages of the session refusals these tests compare.
const (
	msgSessionNotFound = "Session not found"
	msgTooManySessions = "Server busy: too many sessions"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"0"}}}`

// initialize sends an older client's initialize (no session id yet).
func initialize(t *testing.T, endpoint string) (*http.Response, string) {
	t.Helper()
	return postRaw(t, endpoint, initializeBody, nil)
}

// initializeAs sends an older client's initialize with X-Client: client
// (the key of byHeader) and returns the session id ("" if refused).
func initializeAs(t *testing.T, endpoint, client string) (string, int) {
	t.Helper()
	resp, _ := postRaw(t, endpoint, initializeBody, map[string]string{"X-Client": client})
	return resp.Header.Get("Mcp-Session-Id"), resp.StatusCode
}

// byHeader keys clients by their X-Client header (standing for the
// addresses of several machines).
func byHeader(r *http.Request) string { return r.Header.Get("X-Client") }

// sessionRequest sends method naming session id, and returns the response
// (its body unread).
func sessionRequest(t *testing.T, ctx context.Context, method, endpoint, id string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, endpoint, nil)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

func newSessionsServer(t *testing.T, server *mcp.Server, so adapter.SessionOptions) (*gosdk.Handler, *httptest.Server) {
	t.Helper()
	h, err := gosdk.NewHandler(server, gosdk.HandlerOptions{Sessions: so})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		_ = h.Shutdown(context.Background())
	})
	return h, ts
}

// Sessions.Max bounds the go-sdk sessions an initialize opens: one more is
// refused with 503 and Retry-After before it reaches the go-sdk, a
// 2026-07-28 request (stateless) is still served, and a deleted session's
// slot is free for the very next initialize (it used to be counted again
// once a second only: the next initialize got 503).
func TestHTTPMaxSessions(t *testing.T) {
	_, ts := newSessionsServer(t, plainServer(), adapter.SessionOptions{Max: 2})

	var ids []string
	for range 2 {
		resp, _ := initialize(t, ts.URL)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		id := resp.Header.Get("Mcp-Session-Id")
		require.NotEmpty(t, id)
		ids = append(ids, id)
	}
	resp, body := initialize(t, ts.URL)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Empty(t, resp.Header.Get("Mcp-Session-Id"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"`+msgTooManySessions+`"}}`, body)

	tl := post(t, ts.URL, 2, "tools/list", "2026-07-28", nil)
	tl.Body.Close()
	assert.Equal(t, http.StatusOK, tl.StatusCode, "a stateless request opens no session and is served")

	dr := sessionRequest(t, context.Background(), http.MethodDelete, ts.URL, ids[0])
	dr.Body.Close()
	require.Less(t, dr.StatusCode, 300)
	resp, _ = initialize(t, ts.URL)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a deleted session makes room at once")
}

// A flood of initializes from one client takes its share only: another
// client still opens a session at once.
func TestHTTPSessionsPerClient(t *testing.T) {
	h, ts := newSessionsServer(t, plainServer(), adapter.SessionOptions{Max: 10, MaxPerClient: 3, ClientKey: byHeader})
	for i := range 6 {
		id, status := initializeAs(t, ts.URL, "flood")
		if i < 3 {
			assert.NotEmpty(t, id)
		} else {
			assert.Equal(t, http.StatusTooManyRequests, status)
		}
	}
	id, status := initializeAs(t, ts.URL, "older")
	assert.Equal(t, http.StatusOK, status)
	assert.NotEmpty(t, id)
	st := h.SessionStats()
	assert.Equal(t, 4, st.Open)
	assert.Equal(t, uint64(3), st.Refused)
}

// By default a client is the UserID of its go-sdk TokenInfo when it has
// one: two users behind one address have a share each.
func TestHTTPSessionsPerUser(t *testing.T) {
	h, err := gosdk.NewHandler(plainServer(), gosdk.HandlerOptions{Sessions: adapter.SessionOptions{MaxPerClient: 1}})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	ts := httptest.NewServer(auth.RequireBearerToken(verify, nil)(h))
	defer ts.Close()
	for _, user := range []string{"ann", "bob", "ann"} {
		resp, _ := postRaw(t, ts.URL, initializeBody, map[string]string{"Authorization": "Bearer " + user})
		if user == "ann" && resp.Header.Get("Mcp-Session-Id") == "" {
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "ann's second")
			continue
		}
		assert.Equal(t, http.StatusOK, resp.StatusCode, user)
	}
	assert.Equal(t, 2, h.SessionStats().Open)
}

// A session no request used for Sessions.IdleTimeout is closed in the
// go-sdk, its slot is free, and a request naming it gets 404.
func TestHTTPSessionsExpire(t *testing.T) {
	server := plainServer()
	h, ts := newSessionsServer(t, server, adapter.SessionOptions{Max: 1, IdleTimeout: 50 * time.Millisecond})
	id, status := initializeAs(t, ts.URL, "")
	require.Equal(t, http.StatusOK, status)
	var ss *mcp.ServerSession
	for s := range server.Sessions() {
		if s.ID() == id {
			ss = s
		}
	}
	require.NotNil(t, ss)
	closed := make(chan struct{})
	go func() { _ = ss.Wait(); close(closed) }() // returns once the go-sdk session is closed
	select {
	case <-closed:
	case <-time.After(10 * time.Second): // failsafe only: expiry is due after 50 ms
		t.Fatal("the idle session was not closed in the go-sdk")
	}

	resp := sessionRequest(t, context.Background(), http.MethodGet, ts.URL, id)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	id2, _ := initializeAs(t, ts.URL, "")
	assert.NotEmpty(t, id2, "the expired session's slot is free")
	assert.GreaterOrEqual(t, h.SessionStats().Expired, uint64(1))
}

// A request naming a session id that was never issued is refused with 404
// before the go-sdk sees it (its own answer says "session not found").
func TestHTTPUnknownSession(t *testing.T) {
	_, ts := newSessionsServer(t, plainServer(), adapter.SessionOptions{})
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		resp := sessionRequest(t, context.Background(), m, ts.URL, "made-up")
		b := make([]byte, 64)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, m)
		assert.Equal(t, msgSessionNotFound+"\n", string(b[:n]), m)
	}
	resp, body := postRaw(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": "made-up", "MCP-Protocol-Version": "2025-11-25"})
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, msgSessionNotFound+"\n", body)
}

// GET streams count against Sessions.MaxGetStreams.
func TestHTTPGetStreamsBounded(t *testing.T) {
	_, ts := newSessionsServer(t, plainServer(), adapter.SessionOptions{MaxGetStreams: 1})
	a, _ := initializeAs(t, ts.URL, "")
	b, _ := initializeAs(t, ts.URL, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ga := sessionRequest(t, ctx, http.MethodGet, ts.URL, a)
	defer ga.Body.Close()
	require.Equal(t, http.StatusOK, ga.StatusCode)
	gb := sessionRequest(t, context.Background(), http.MethodGet, ts.URL, b)
	gb.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, gb.StatusCode)
	assert.Equal(t, "1", gb.Header.Get("Retry-After"))
}

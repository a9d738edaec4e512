package gosdk_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/gosdk"
)

// initialize sends an older client's initialize (no session id yet).
func initialize(t *testing.T, endpoint string) (*http.Response, string) {
	t.Helper()
	return postRaw(t, endpoint, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"0"}}}`, nil)
}

// MaxSessions bounds the go-sdk sessions an initialize opens: one more is
// refused with 503 and Retry-After before it reaches the go-sdk, a
// 2026-07-28 request (stateless) is still served, and a closed session
// makes room again.
func TestHTTPMaxSessions(t *testing.T) {
	defer gosdk.SetRecountEvery(0)() // count on every initialize
	h, err := gosdk.NewHandler(plainServer(), gosdk.HandlerOptions{MaxSessions: 2})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	ts := httptest.NewServer(h)
	defer ts.Close()

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
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"`+gosdk.MsgTooManySessions+`"}}`, body)

	tl := post(t, ts.URL, 2, "tools/list", "2026-07-28", nil)
	tl.Body.Close()
	assert.Equal(t, http.StatusOK, tl.StatusCode, "a stateless request opens no session and is served")

	del, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
	del.Header.Set("Mcp-Session-Id", ids[0])
	dr, err := http.DefaultClient.Do(del)
	require.NoError(t, err)
	dr.Body.Close()
	require.Less(t, dr.StatusCode, 300)
	resp, _ = initialize(t, ts.URL)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a closed session makes room")
}

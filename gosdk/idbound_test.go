package gosdk_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/gosdk"
)

// idOf returns a JSON string id token of n bytes, quotes included.
func idOf(n int) string { return `"` + strings.Repeat("i", n-2) + `"` }

// tooLargeID is the exact answer to a message whose id is over n bytes.
func tooLargeID(n string) string {
	return `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid request: id must be at most ` + n + ` bytes"}}`
}

// postRefused is postRaw for a request that should be refused: a response
// that is a stream (a listen served) is not read.
func postRefused(t *testing.T, endpoint, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp, "(a stream)"
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Over HTTP, every request's id is bounded (Options.Listen.MaxIDBytes, 256
// bytes by default), listens and the go-sdk's requests of both eras alike:
// a longer one is refused with 400 and -32600 without an id before the
// go-sdk sees it; one at the bound reaches the go-sdk and is answered with
// its id; the bound follows the option. Before, the go-sdk was handed (and
// echoed) any id the body limit let through.
func TestHTTPIDBound(t *testing.T) {
	h, err := gosdk.NewHandler(plainServer(), gosdk.HandlerOptions{})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	ts := httptest.NewServer(h)
	defer ts.Close()
	modern := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
	meta := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`

	for _, tc := range []struct {
		name, body string
		headers    map[string]string
	}{
		{"a server/discover", `{"jsonrpc":"2.0","id":` + idOf(257) + `,"method":"server/discover","params":` + meta + `}`, modern},
		{"an initialize", `{"jsonrpc":"2.0","id":` + idOf(250_000) + `,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"0"}}}`, nil},
		{"a listen", `{"jsonrpc":"2.0","id":` + idOf(257) + `,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}},
	} {
		resp, body := postRefused(t, ts.URL, tc.body, tc.headers)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, tc.name)
		assert.Equal(t, tooLargeID("256"), body, tc.name)
	}

	resp, body := postRaw(t, ts.URL, `{"jsonrpc":"2.0","id":`+idOf(256)+`,"method":"server/discover","params":`+meta+`}`, modern)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"id":`+idOf(256), "an id at the bound reaches the go-sdk")

	wide, err := gosdk.NewHandler(plainServer(), gosdk.HandlerOptions{Options: gosdk.Options{Listen: listen.Options{MaxIDBytes: 1000}}})
	require.NoError(t, err)
	defer wide.Shutdown(context.Background())
	ws := httptest.NewServer(wide)
	defer ws.Close()
	resp, body = postRaw(t, ws.URL, `{"jsonrpc":"2.0","id":`+idOf(1000)+`,"method":"server/discover","params":`+meta+`}`, modern)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"id":`+idOf(1000))
	resp, body = postRefused(t, ws.URL, `{"jsonrpc":"2.0","id":`+idOf(1001)+`,"method":"server/discover","params":`+meta+`}`, modern)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, tooLargeID("1000"), body)
}

// Over stdio likewise: a request for the go-sdk, a response for it and a
// listen whose id is over the bound are answered with -32600 without an id,
// and none reaches the go-sdk (which answers the next request as usual).
func TestStdioIDBound(t *testing.T) {
	r := startRaw(t, plainServer(), true, gosdk.StdioOptions{})
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":` + idOf(257) + `,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":` + idOf(250_000) + `,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"0"}}}`,
		`{"jsonrpc":"2.0","id":` + idOf(257) + `,"result":{}}`,
		`{"jsonrpc":"2.0","id":` + idOf(257) + `,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{}}}`,
	} {
		r.send(line)
		require.Equal(t, tooLargeID("256"), r.recv())
	}
	r.send(`{"jsonrpc":"2.0","id":` + idOf(256) + `,"method":"ping"}`)
	require.Equal(t, `{"jsonrpc":"2.0","id":`+idOf(256)+`,"result":{}}`, r.recv())
	rest, err := r.end()
	require.NoError(t, err)
	assert.Empty(t, rest)
}

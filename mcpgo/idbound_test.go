package mcpgo_test

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
	"github.com/mcplisten/listen/mcpgo"
)

// idOf returns a JSON string id token of n bytes, quotes included.
func idOf(n int) string { return `"` + strings.Repeat("i", n-2) + `"` }

// tooLargeID is the exact answer to a message whose id is over n bytes.
func tooLargeID(n string) string {
	return `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid request: id must be at most ` + n + ` bytes"}}`
}

// Over HTTP, every request's id is bounded (Options.Listen.MaxIDBytes, 256
// bytes by default), listens and mcp-go's requests of both eras alike: a
// longer one is refused with 400 and -32600 without an id before mcp-go
// sees it (an initialize opens no session); one at the bound reaches mcp-go
// and is answered with its id; the bound follows the option. Before, mcp-go
// was handed (and echoed) any id the body limit let through.
func TestHTTPIDBound(t *testing.T) {
	for _, tc := range []struct {
		name, limit string
		opts        mcpgo.HandlerOptions
		max         int
	}{
		{"the default", "256", mcpgo.HandlerOptions{}, 256},
		{"a bound of 1000", "1000", mcpgo.HandlerOptions{Options: mcpgo.Options{Listen: listen.Options{MaxIDBytes: 1000}}}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := mcpgo.NewHandler(plainServer(), tc.opts)
			require.NoError(t, err)
			ts := httptest.NewServer(h)
			defer ts.Close()

			msgs := call(t, ts.URL, idOf(tc.max), "server/discover", nil)
			require.Len(t, msgs, 1)
			assert.Equal(t, idOf(tc.max), string(decode(t, msgs[0]).ID), "an id at the bound reaches mcp-go")

			long := idOf(tc.max + 1)
			for _, m := range []struct{ method, version, body string }{
				{"server/discover", "2026-07-28", string(request(long, "server/discover", "2026-07-28", nil))},
				{"subscriptions/listen", "2026-07-28", string(request(long, "subscriptions/listen", "2026-07-28", map[string]any{"notifications": map[string]any{}}))},
				{"initialize", "2025-11-25", `{"jsonrpc":"2.0","id":` + long + `,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"0"}}}`},
			} {
				resp := post(t, ts.URL, m.method, m.version, []byte(m.body))
				if !assert.Equal(t, http.StatusBadRequest, resp.StatusCode, m.method) {
					resp.Body.Close() // perhaps a stream: not read
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				assert.Equal(t, tooLargeID(tc.limit), string(body), m.method)
				assert.Empty(t, resp.Header.Get("Mcp-Session-Id"), "no session for %s", m.method)
			}
			require.NoError(t, h.Shutdown(context.Background()))
		})
	}
}

// Over stdio likewise: a request for mcp-go, a response for it and a listen
// whose id is over the bound are answered with -32600 without an id, and
// none reaches mcp-go (which answers the next request as usual).
func TestStdioIDBound(t *testing.T) {
	x, err := mcpgo.NewStdio(plainServer(), mcpgo.StdioOptions{})
	require.NoError(t, err)
	c := startStdio(t, context.Background(), x)
	long := idOf(257)
	for _, line := range [][]byte{
		request(long, "server/discover", "2026-07-28", nil),
		request(idOf(250_000), "tools/list", "2026-07-28", nil),
		[]byte(`{"jsonrpc":"2.0","id":` + long + `,"result":{}}`),
		request(long, "subscriptions/listen", "2026-07-28", map[string]any{"notifications": map[string]any{}}),
	} {
		c.send(line)
		assert.Equal(t, tooLargeID("256"), string(c.out.next().raw))
	}
	c.send(request(idOf(256), "server/discover", "2026-07-28", nil))
	m := c.out.next()
	assert.Equal(t, idOf(256), string(m.ID), "%s", m.raw)
	assert.NotNil(t, m.Result, "%s", m.raw)
	_, err = c.end()
	require.NoError(t, err)
	require.NoError(t, x.Shutdown(context.Background()))
}

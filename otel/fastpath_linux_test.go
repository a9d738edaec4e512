//go:build linux

package otel_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/streamhttp"
)

// rawListen opens a listen on a raw HTTP/1.1 connection to addr and
// returns a reader positioned after the response head.
func rawListen(t *testing.T, addr, id string) *bufio.Reader {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	body := listenBody(id, `{"toolsListChanged":true}`)
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"+
		"Mcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return br
}

// nextData returns the data of the next SSE event on br.
func nextData(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			return strings.TrimSpace(data)
		}
	}
}

// A hub stream wrapped by Metrics.Source stays on streamhttp's fast path:
// once written to, an idle stream costs no goroutine, and each
// notification is counted.
func TestSourceKeepsTheFastPath(t *testing.T) {
	const n = 30
	m, reader := newMetrics(t)
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	lopts := listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}}
	m.Instrument(&lopts)
	var opts streamhttp.Options
	m.InstrumentHTTP(&opts)
	handler, err := streamhttp.New(listen.NewServer(m.Source(h), lopts), opts)
	require.NoError(t, err)
	ts := httptest.NewServer(handler)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, handler.Shutdown(ctx))
		ts.Close()
	}()
	addr := ts.Listener.Addr().String()

	// One stream first: the fast path's shared goroutines (its hang-up
	// watcher) then exist before the count starts.
	warm := rawListen(t, addr, `"warm"`)
	assert.Contains(t, nextData(t, warm), "acknowledged")
	h.ToolsListChanged()
	assert.Contains(t, nextData(t, warm), "tools/list_changed")
	before := goleak.IgnoreCurrent()

	conns := make([]*bufio.Reader, n)
	for i := range conns {
		conns[i] = rawListen(t, addr, fmt.Sprintf(`"s%d"`, i))
		assert.Contains(t, nextData(t, conns[i]), "acknowledged")
	}
	h.ToolsListChanged()
	for _, br := range append(conns, warm) {
		assert.Contains(t, nextData(t, br), "tools/list_changed")
	}
	// goleak waits for the writer loops that just ran dry and for
	// net/http's connection goroutines after the takeover to end.
	assert.NoError(t, goleak.Find(before), "goroutines for %d more idle wrapped streams", n)

	// A written notification is counted when the next one is pulled: once
	// every client has read a second one, the first round is counted (and
	// warm's first), the second not yet.
	h.ToolsListChanged()
	for _, br := range append(conns, warm) {
		assert.Contains(t, nextData(t, br), "tools/list_changed")
	}
	delivered := series(t, reader)["mcp.listen.notifications.delivered{mcp.listen.notification.kind=tools_list_changed,mcp.listen.transport=streamable_http}"]
	assert.GreaterOrEqual(t, delivered, int64(n+2))
	assert.LessOrEqual(t, delivered, int64(2*(n+1)+1))
}

package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/streamhttp"
)

// The quick start's shutdown: with several streams open, once shutdown
// returns every client has been sent its completion result, even if the
// process exits right then (here: every connection is cut), on HTTP/1.1
// (connections the handler took over) and on HTTP/2.
func TestShutdownCompletesEveryStream(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		name := "HTTP/1.1"
		if h2 {
			name = "HTTP/2"
		}
		t.Run(name, func(t *testing.T) {
			changes, err := hub.New(hub.Options{})
			require.NoError(t, err)
			listens, err := streamhttp.New(listen.NewServer(changes, listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}}), streamhttp.Options{})
			require.NoError(t, err)
			ts := httptest.NewUnstartedServer(listens)
			conns := &connListener{Listener: ts.Listener}
			ts.Listener = conns
			if h2 {
				ts.EnableHTTP2 = true
				ts.StartTLS()
			} else {
				ts.Start()
			}
			defer ts.Close()
			client := ts.Client()
			defer client.CloseIdleConnections()

			const streams = 4
			readers := make([]*listentest.SSEReader, streams)
			for i := range readers {
				resp := openListen(t, client, ts.URL, i)
				defer resp.Body.Close()
				if h2 {
					require.Equal(t, 2, resp.ProtoMajor)
				}
				readers[i] = listentest.NewSSEReader(resp.Body)
				assert.Contains(t, event(t, readers[i]), `"method":"notifications/subscriptions/acknowledged"`)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, shutdown(ctx, ts.Config, listens))
			conns.cut() // the process exits

			for i, rd := range readers {
				assert.Contains(t, event(t, rd), `"resultType":"complete"`, "stream %d", i)
			}
		})
	}
}

// openListen opens a listen for tool list changes whose id is i.
func openListen(t *testing.T, client *http.Client, url string, i int) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"subscriptions/listen","params":{` +
		`"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp
}

// event returns the data of the next SSE event (keep-alives skipped).
func event(t *testing.T, r *listentest.SSEReader) string {
	t.Helper()
	data, err := r.Data()
	require.NoError(t, err, "the stream ended")
	return string(data)
}

// connListener records every connection it accepts, so that cut can close
// them all, as a process exit would.
type connListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *connListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *connListener) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
}

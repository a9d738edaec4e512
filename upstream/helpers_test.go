package upstream_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/streamhttp"
)

// server is an upstream built on this library: a hub served by streamhttp
// on a loopback httptest server.
type server struct {
	hub     *hub.Hub
	handler *streamhttp.Handler
	ts      *httptest.Server
	URL     string
	// keepAlives receives a value per keep-alive written (when there is
	// room).
	keepAlives chan struct{}
}

// newServer starts an upstream advertising caps, with keep-alives every
// keepAlive (0: the default). It is shut down when the test ends.
func newServer(t *testing.T, caps listen.Capabilities, keepAlive time.Duration) *server {
	t.Helper()
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	kas := make(chan struct{}, 10)
	handler, err := streamhttp.New(listen.NewServer(h, listen.Options{Capabilities: caps, ServerInfo: listen.Implementation{Name: "upstream", Version: "1"}}), streamhttp.Options{
		KeepAlive: keepAlive,
		OnKeepAlive: func(*listen.Subscription) {
			select {
			case kas <- struct{}{}:
			default:
			}
		},
	})
	require.NoError(t, err)
	ts := httptest.NewServer(handler)
	s := &server{hub: h, handler: handler, ts: ts, URL: ts.URL, keepAlives: kas}
	t.Cleanup(s.stop)
	return s
}

func (s *server) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.handler.Shutdown(ctx)
	s.ts.Close()
}

// all is every core capability.
var all = listen.Capabilities{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourcesSubscribe: true}

// sse answers every POST with the given SSE body, ID replaced by the
// request's id, then holds the stream open until the request ends (hold)
// or closes it.
func sse(body string, hold bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(strings.ReplaceAll(body, "ID", string(req.ID))))
		w.(http.Flusher).Flush()
		if hold {
			<-r.Context().Done()
		}
	}
}

// event is one SSE message event.
func event(msg string) string { return "event: message\ndata: " + msg + "\n\n" }

const ackTools = `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":ID},"notifications":{"toolsListChanged":true}}}`

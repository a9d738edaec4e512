package adapter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/adapter"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/testkit"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
)

// toy is an SDK's server as an adapter would reach it: it advertises
// tools.listChanged, lists versions, broadcasts through the publish
// function Observe gave it, answers every other stdio message with an
// empty result, and counts Close calls.
type toy struct {
	versions   string // the supportedVersions JSON array
	observeErr error

	mu       sync.Mutex
	publish  func(method, uri string) error
	closes   int
	updated  []string
	discover int
}

// quiet drops the Bridges' logs.
var quiet = slog.New(slog.DiscardHandler)

func newToy() *toy { return &toy{versions: `["2026-07-28","2025-11-25"]`} }

func (x *toy) sdk() adapter.SDK {
	return adapter.SDK{
		Name:   "toy",
		Server: "the toy server",
		Discover: func(context.Context) (json.RawMessage, error) {
			x.mu.Lock()
			x.discover++
			x.mu.Unlock()
			return json.RawMessage(`{"supportedVersions":` + x.versions + `,"capabilities":{"tools":{"listChanged":true}},` +
				`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"toy","version":"1"}}}`), nil
		},
		Observe: func(_ context.Context, publish func(method, uri string) error) error {
			x.mu.Lock()
			defer x.mu.Unlock()
			x.publish = publish
			return x.observeErr
		},
		ResourceUpdated: func(_ context.Context, uri string) error {
			x.mu.Lock()
			x.updated = append(x.updated, uri)
			x.mu.Unlock()
			return x.publish(spec.MethodResourceUpdated, uri)
		},
		Close: func() error {
			x.mu.Lock()
			defer x.mu.Unlock()
			x.closes++
			return nil
		},
	}
}

func (x *toy) closed() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.closes
}

// A Bridge reads what the server advertises, republishes what the SDK
// hands it into the hub (counting what no listen can receive), reaches the
// SDK's own subscribers through SDK.ResourceUpdated, and closes the SDK
// once.
func TestBridge(t *testing.T) {
	x := newToy()
	var republished []string
	b, err := adapter.NewBridge(t.Context(), x.sdk(), adapter.Options{
		Logger:      quiet,
		OnRepublish: func(method, uri string, _ hub.Report) { republished = append(republished, method+" "+uri) },
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"2026-07-28", "2025-11-25"}, adapter.Versions(b))
	assert.Equal(t, "toy", adapter.ServerInfo(b).Name)
	caps, err := b.Capabilities(t.Context())
	require.NoError(t, err)
	assert.True(t, caps.ToolsListChanged)
	assert.False(t, caps.PromptsListChanged)

	require.NoError(t, x.publish(spec.MethodToolsListChanged, ""))
	require.NoError(t, x.publish("notifications/message", ""))
	require.NoError(t, b.ResourceUpdated(t.Context(), "file:///a"))
	assert.Error(t, b.ResourceUpdated(t.Context(), "not a uri"), "the hub refuses it")
	assert.Equal(t, []string{"file:///a", "not a uri"}, x.updated, "the SDK's own subscribers are told")
	assert.Equal(t, []string{spec.MethodToolsListChanged + " ", spec.MethodResourceUpdated + " file:///a"}, republished)
	st := b.Stats()
	assert.Equal(t, adapter.Stats{ListChanges: 1, ResourceUpdates: 1, Ignored: 2, Discovers: 2}, st)

	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	assert.Equal(t, 1, x.closed())
}

// NewBridge fails, and closes the SDK, when the server does not serve
// 2026-07-28 or observing fails.
func TestNewBridgeFails(t *testing.T) {
	old := newToy()
	old.versions = `["2025-11-25"]`
	_, err := adapter.NewBridge(t.Context(), old.sdk(), adapter.Options{Logger: quiet})
	require.Error(t, err)
	assert.Equal(t, `toy: the toy server does not serve protocol version 2026-07-28, which subscriptions/listen needs (it lists [2025-11-25])`, err.Error())
	assert.Equal(t, 1, old.closed())

	blind := newToy()
	blind.observeErr = errors.New("toy: cannot observe")
	_, err = adapter.NewBridge(t.Context(), blind.sdk(), adapter.Options{Logger: quiet})
	assert.ErrorIs(t, err, blind.observeErr)
	assert.Equal(t, 1, blind.closed())
}

// Over HTTP a listen is this library's; every other request goes to the
// SDK's handler of its era, and a version the server does not serve is
// refused with -32022 before the SDK sees it. Shutdown ends the SDK's
// sessions and closes the Bridge.
func TestHandlerRoutes(t *testing.T) {
	x := newToy()
	b, err := adapter.NewBridge(t.Context(), x.sdk(), adapter.Options{Logger: quiet})
	require.NoError(t, err)
	era := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) })
	}
	closed := make(chan struct{})
	h, err := adapter.NewHandler(b, adapter.HandlerOptions{
		Modern: era("modern"), Legacy: era("legacy"),
		Close: func(context.Context) { close(closed) },
	})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()

	post := func(version, body string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			req.Header.Set("MCP-Protocol-Version", version)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(got)
	}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, c := range []struct{ name, version, body, want string }{
		{"2026-07-28", "2026-07-28", ping, "modern"},
		{"version in _meta only", "", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "modern"},
		{"earlier version", "2025-11-25", ping, "legacy"},
		{"no version", "", ping, "legacy"},
	} {
		status, body := post(c.version, c.body)
		assert.Equal(t, http.StatusOK, status, c.name)
		assert.Equal(t, c.want, body, c.name)
	}
	status, body := post("1999-01-01", ping)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, `"code":-32022`)

	require.NoError(t, h.Shutdown(t.Context()))
	<-closed
	assert.Equal(t, 1, x.closed())
}

// Over stdio, listens are served from the Bridge's hub and every other
// message reaches the SDK, which answers on the same connection; Serve
// returns nil when the input ends, and nothing is served after Shutdown.
func TestStdio(t *testing.T) {
	x := newToy()
	b, err := adapter.NewBridge(t.Context(), x.sdk(), adapter.Options{Logger: quiet})
	require.NoError(t, err)
	s, err := adapter.NewStdio(b, adapter.StdioOptions{
		// The toy SDK answers every request with an empty result.
		Connect: func(ctx context.Context, c *stdio.Conn) (func() error, error) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					raw, err := c.ReadMessage(ctx)
					if err != nil {
						_ = c.Close()
						return
					}
					if m, err := jsonrpc.ParseMessage(raw); err == nil && m.HasID {
						_ = c.WriteMessage(ctx, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID.Raw())))
					}
				}
			}()
			return func() error { <-done; return nil }, nil
		},
	})
	require.NoError(t, err)

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- s.Serve(t.Context(), inR, outW) }()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	send := func(m string) {
		_, err := io.WriteString(inW, m+"\n")
		require.NoError(t, err)
	}
	send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"}},"notifications":{"toolsListChanged":true}}}`)
	assert.Contains(t, testkit.Recv(t, lines, 5*time.Second), "notifications/subscriptions/acknowledged")
	require.NoError(t, x.publish(spec.MethodToolsListChanged, ""))
	assert.Contains(t, testkit.Recv(t, lines, 5*time.Second), spec.MethodToolsListChanged)
	send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{}}`, testkit.Recv(t, lines, 5*time.Second))

	require.NoError(t, inW.Close())
	require.NoError(t, <-served)
	require.NoError(t, outW.Close())
	for range lines {
	}
	require.NoError(t, s.Shutdown(t.Context()))
	assert.ErrorIs(t, s.Serve(t.Context(), strings.NewReader(""), io.Discard), stdio.ErrServerClosed)
	assert.Equal(t, 1, x.closed())
}

package mcpgo_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/mcpgo"
	"github.com/mcplisten/listen/streamhttp"
)

// TestHTTPAuth: mcp-go's WithHTTPContextFunc runs for the requests mcp-go
// serves, never for a listen; a listen's principal (what CanRead gets) is
// what HTTP.Authenticate returns, and a Handler with a context function
// but no Authenticate says so at start-up.
func TestHTTPAuth(t *testing.T) {
	for _, c := range []struct {
		name         string
		authenticate func(*http.Request) (any, error)
		principal    any
		warns        bool
	}{
		{"context function only", nil, nil, true},
		{"and Authenticate", func(*http.Request) (any, error) { return "alice", nil }, "alice", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs logBuffer
			var contextCalls atomic.Int32
			principals := make(chan any, 4)
			h, err := mcpgo.NewHandler(plainServer(), mcpgo.HandlerOptions{
				Options: mcpgo.Options{
					Logger: logs.Logger(slog.LevelWarn),
					Listen: listen.Options{CanRead: func(_ context.Context, req *listen.Request, _ string) bool {
						principals <- req.Auth
						return true
					}},
				},
				HTTP: streamhttp.Options{Authenticate: c.authenticate},
				SDK: []server.StreamableHTTPOption{server.WithHTTPContextFunc(func(ctx context.Context, _ *http.Request) context.Context {
					contextCalls.Add(1)
					return ctx
				})},
			})
			require.NoError(t, err)
			ts := httptest.NewServer(h)
			defer ts.Close()
			if c.warns {
				assert.Contains(t, logs.String(), "HTTP.Authenticate is nil")
			} else {
				assert.Empty(t, logs.String())
			}

			s := openListen(t, ts.URL, "1", map[string]any{"resourceSubscriptions": []any{uriA}})
			assert.Equal(t, c.principal, <-principals, "CanRead gets what Authenticate returned")
			assert.Zero(t, contextCalls.Load(), "the context function never runs for a listen")
			s.close()
			require.NotEmpty(t, call(t, ts.URL, "2", "tools/list", nil))
			assert.EqualValues(t, 1, contextCalls.Load(), "it runs for a request mcp-go serves")
			require.NoError(t, h.Shutdown(context.Background()))
		})
	}
	t.Run("no context function", func(t *testing.T) {
		var logs logBuffer
		h, err := mcpgo.NewHandler(plainServer(), mcpgo.HandlerOptions{Options: mcpgo.Options{Logger: logs.Logger(slog.LevelWarn)}})
		require.NoError(t, err)
		assert.Empty(t, logs.String())
		require.NoError(t, h.Shutdown(context.Background()))
	})
}

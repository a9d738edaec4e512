package mcpgo_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/mcpgo"
)

const (
	folder = "file:///project/"
	file   = "file:///project/src/main.go"
)

// TestFoldersGetOneCopy: with listen.Options.SubResources, one broadcast of
// resources/updated reaches a listen naming the URI exactly and one naming
// its folder, once each, over HTTP and stdio alike; a listen on another
// folder gets nothing.
func TestFoldersGetOneCopy(t *testing.T) {
	opts := mcpgo.Options{Listen: listen.Options{SubResources: &listen.SubResources{}}}

	t.Run("http", func(t *testing.T) {
		srv := plainServer()
		h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{Options: opts})
		require.NoError(t, err)
		ts := httptest.NewServer(h)
		defer ts.Close()
		exact := openListen(t, ts.URL, "1", map[string]any{"resourceSubscriptions": []any{file}})
		dir := openListen(t, ts.URL, "2", map[string]any{"resourceSubscriptions": []any{folder, file}})
		other := openListen(t, ts.URL, "3", map[string]any{"resourceSubscriptions": []any{"file:///elsewhere/"}})
		updated(srv, file)
		require.NoError(t, h.Shutdown(context.Background()))
		for _, s := range []*stream{exact, dir} {
			rest := s.rest()
			require.Len(t, rest, 2, "one update, then the completion")
			assert.Equal(t, file, rest[0].Params.URI)
			assert.Equal(t, s.ack.tag(), rest[0].tag())
			s.resp.Body.Close()
		}
		assert.Len(t, other.rest(), 1, "only the completion")
		other.resp.Body.Close()
	})

	t.Run("stdio", func(t *testing.T) {
		srv := plainServer()
		x, err := mcpgo.NewStdio(srv, mcpgo.StdioOptions{Options: opts})
		require.NoError(t, err)
		c := startStdio(t, context.Background(), x)
		c.listen("1", map[string]any{"resourceSubscriptions": []any{file}})
		c.listen("2", map[string]any{"resourceSubscriptions": []any{folder}})
		c.listen("3", map[string]any{"resourceSubscriptions": []any{"file:///elsewhere/"}})
		updated(srv, file)
		updated(srv, "file:///last")
		got := map[string]int{}
		for range 2 {
			m := c.out.next()
			require.Equal(t, file, m.Params.URI)
			got[m.tag()]++
		}
		assert.Equal(t, map[string]int{"1": 1, "2": 1}, got)
		require.NoError(t, x.Shutdown(context.Background()))
		rest, _ := c.end()
		for _, m := range rest {
			assert.NotEqual(t, "notifications/resources/updated", m.Method, "%s", m.raw)
		}
	})
}

// TestHTTPOneSetOfRules: a cross-site request is refused with 403 before
// mcp-go sees it (the tool does not run), whatever the method, and so is a
// listen; a Host not in AllowedHosts is refused on every request.
func TestHTTPOneSetOfRules(t *testing.T) {
	srv := plainServer()
	ran := 0
	srv.AddTool(mcpTool("count"), countTool(&ran))
	h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	for _, method := range []string{"tools/call", "subscriptions/listen"} {
		body := request("1", method, "2026-07-28", map[string]any{"name": "count", "notifications": map[string]any{"toolsListChanged": true}})
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Origin", "http://evil.example")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		m := readMessages(t, resp)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: %s", method, m)
	}
	assert.Zero(t, ran, "the tool never ran")
	m := decode(t, call(t, ts.URL, "2", "tools/call", map[string]any{"name": "count"})[0])
	require.NotNil(t, m.Result, "%s", m.raw)
	assert.Equal(t, 1, ran, "without Origin it runs")
	require.NoError(t, h.Shutdown(context.Background()))
}

// TestOneCallReachesEveryoneOnce: Handler.ResourceUpdated (mcp-go's
// SendNotificationToAllClients, then a wait for the hub) reaches an exact
// listen, a folder listen and an older client's mcp-go session, one copy
// each; when it returns, the listens have it.
func TestOneCallReachesEveryoneOnce(t *testing.T) {
	srv := plainServer()
	h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{Options: mcpgo.Options{Listen: listen.Options{SubResources: &listen.SubResources{}}}})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	older, olderNotes := connect(t, ts.URL, true)
	defer older.Close()
	exact := openListen(t, ts.URL, "1", map[string]any{"resourceSubscriptions": []any{file}})
	dir := openListen(t, ts.URL, "2", map[string]any{"resourceSubscriptions": []any{folder}})

	require.NoError(t, h.ResourceUpdated(context.Background(), file))
	assert.Equal(t, uint64(1), h.Bridge().Stats().ResourceUpdates, "in the hub when ResourceUpdated returns")
	n := olderNotes.next(t)
	assert.Equal(t, "notifications/resources/updated", n.Method)
	assert.Equal(t, file, n.Params.AdditionalFields["uri"])
	require.NoError(t, h.Shutdown(context.Background()))
	for _, s := range []*stream{exact, dir} {
		rest := s.rest()
		require.Len(t, rest, 2, "one update, then the completion")
		assert.Equal(t, file, rest[0].Params.URI)
		s.resp.Body.Close()
	}
	select {
	case n := <-olderNotes:
		t.Fatalf("a second notification to the older client: %+v", n)
	default:
	}
	assert.Error(t, h.ResourceUpdated(context.Background(), ""))
}

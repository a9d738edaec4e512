package mcpgo_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/mcpgo"
)

// discoverCaps runs server/discover over HTTP and returns its capabilities.
func discoverCaps(t testing.TB, endpoint string) map[string]any {
	t.Helper()
	msgs := call(t, endpoint, "1", "server/discover", nil)
	require.Len(t, msgs, 1)
	var m struct {
		Result struct {
			Capabilities map[string]any `json:"capabilities"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(msgs[0], &m), "%s", msgs[0])
	require.NotNil(t, m.Result.Capabilities, "%s", msgs[0])
	return m.Result.Capabilities
}

var everything = map[string]any{
	"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
	"resourceSubscriptions": []any{uriA},
}

// TestHTTPPlainServer starts from an mcp-go server with no listen code in it
// and shows, over HTTP: acknowledgements exactly as server/discover
// advertises; AddTool, DeletePrompts, AddResource and a broadcast
// resources/updated each reaching the listens that asked for them, tagged
// with their ids, and no others.
func TestHTTPPlainServer(t *testing.T) {
	srv := plainServer()
	h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()

	caps := discoverCaps(t, ts.URL)
	want := ackFor(caps, []any{uriA})
	require.Equal(t, everything, want, "the plain server declares every kind")

	all := openListen(t, ts.URL, `"all"`, everything)
	assert.Equal(t, want, all.ack.Params.Notifications, "acknowledged exactly as server/discover advertises")
	tools := openListen(t, ts.URL, "1", map[string]any{"toolsListChanged": true})
	prompts := openListen(t, ts.URL, "2", map[string]any{"promptsListChanged": true})
	resources := openListen(t, ts.URL, "3", map[string]any{"resourcesListChanged": true})
	watchA := openListen(t, ts.URL, "4", map[string]any{"resourceSubscriptions": []any{uriA}})
	watchB := openListen(t, ts.URL, "5", map[string]any{"resourceSubscriptions": []any{uriB}})

	check := func(change func(), method string, uri string, got []*stream, tags []string) {
		t.Helper()
		change()
		for i, s := range got {
			m := s.next()
			assert.Equal(t, method, m.Method)
			assert.Equal(t, uri, m.Params.URI)
			assert.Equal(t, tags[i], m.tag(), "tagged with the listen's id")
		}
	}
	check(func() { addTool(srv, "added") }, "notifications/tools/list_changed", "", []*stream{tools, all}, []string{"1", `"all"`})
	check(func() { srv.DeletePrompts("greeting") }, "notifications/prompts/list_changed", "", []*stream{prompts, all}, []string{"2", `"all"`})
	check(func() { srv.AddResource(mcpResource("test://c"), nil) }, "notifications/resources/list_changed", "", []*stream{resources, all}, []string{"3", `"all"`})
	check(func() { updated(srv, uriA) }, "notifications/resources/updated", uriA, []*stream{watchA, all}, []string{"4", `"all"`})
	check(func() { updated(srv, uriB) }, "notifications/resources/updated", uriB, []*stream{watchB}, []string{"5"})

	// Nothing else came: each stream's next message is its completion.
	require.NoError(t, h.Shutdown(context.Background()))
	for _, s := range []*stream{all, tools, prompts, resources, watchA, watchB} {
		rest := s.rest()
		require.Len(t, rest, 1, "only the completion is left")
		assert.JSONEq(t, `{"resultType":"complete"}`, string(withoutMeta(t, rest[0].Result)))
		assert.Equal(t, s.ack.tag(), string(rest[0].ID))
		s.resp.Body.Close()
	}
}

// withoutMeta drops _meta from a result object.
func withoutMeta(t testing.TB, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	delete(m, "_meta")
	b, _ := json.Marshal(m)
	return b
}

// TestHTTPVersions: every listen is the library's whatever version it
// names (an older one: 404 -32601; an unknown one: 400 -32022 with the
// versions mcp-go serves), and any other request naming an unknown version
// gets the same -32022 as JSON, not mcp-go's plain text.
func TestHTTPVersions(t *testing.T) {
	srv := plainServer()
	h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	supported := `["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`
	for _, c := range []struct {
		method, version string
		status          int
		code            int
	}{
		{"subscriptions/listen", "2025-11-25", http.StatusNotFound, -32601},
		{"subscriptions/listen", "1900-01-01", http.StatusBadRequest, -32022},
		{"subscriptions/listen", "2099-01-01", http.StatusBadRequest, -32022},
		{"tools/list", "1900-01-01", http.StatusBadRequest, -32022},
		{"tools/list", "2099-01-01", http.StatusBadRequest, -32022},
	} {
		resp := post(t, ts.URL, c.method, c.version, request("5", c.method, c.version, map[string]any{"notifications": map[string]any{"toolsListChanged": true}}))
		msgs := readMessages(t, resp)
		resp.Body.Close()
		require.Len(t, msgs, 1, "%s %s", c.method, c.version)
		m := decode(t, msgs[0])
		assert.Equal(t, c.status, resp.StatusCode, "%s %s: %s", c.method, c.version, m.raw)
		require.NotNil(t, m.Error, "%s", m.raw)
		assert.Equal(t, c.code, m.Error.Code, "%s", m.raw)
		assert.Equal(t, "5", string(m.ID))
		if c.code == -32022 {
			assert.JSONEq(t, `{"supported":`+supported+`,"requested":"`+c.version+`"}`, string(m.Error.Data))
		}
	}
	require.NoError(t, h.Shutdown(context.Background()))
}

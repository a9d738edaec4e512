package gosdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/gosdk"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

var everything = map[string]any{
	"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
	"resourceSubscriptions": []any{uriA},
}

// TestHTTPPlainServer starts from a go-sdk server with no listen code in it
// and shows, over HTTP: inferred capabilities acknowledged exactly as
// server/discover advertises them; AddTool, RemovePrompts and
// Handler.ResourceUpdated each reaching the listens that asked for them and
// no others.
func TestHTTPPlainServer(t *testing.T) {
	srv := plainServer()
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := context.Background()

	caps := discoverCaps(t, ts.URL)
	want := ackFor(caps, []any{uriA})
	// Inferred by the go-sdk from what is registered (and SubscribeHandler).
	require.Equal(t, map[string]any{"toolsListChanged": true, "promptsListChanged": true,
		"resourcesListChanged": true, "resourceSubscriptions": []any{uriA}}, want)

	all, got := openListen(t, ts.URL, "all", everything)
	assert.Equal(t, want, got, "acknowledged exactly as server/discover advertises")
	tools, _ := openListen(t, ts.URL, 1, map[string]any{"toolsListChanged": true})
	prompts, _ := openListen(t, ts.URL, 2, map[string]any{"promptsListChanged": true})
	watchA, _ := openListen(t, ts.URL, 3, map[string]any{"resourceSubscriptions": []any{uriA}})
	watchB, _ := openListen(t, ts.URL, 4, map[string]any{"resourceSubscriptions": []any{uriB}})

	addTool(srv, "added") // no publish call: the go-sdk's own notification
	for _, s := range []*stream{tools, all} {
		m := s.next()
		assert.Equal(t, "notifications/tools/list_changed", m.Method)
	}
	srv.RemovePrompts("greeting")
	for _, s := range []*stream{prompts, all} {
		m := s.next()
		assert.Equal(t, "notifications/prompts/list_changed", m.Method)
	}
	require.NoError(t, h.ResourceUpdated(ctx, uriA))
	for _, s := range []*stream{watchA, all} {
		m := s.next()
		assert.Equal(t, "notifications/resources/updated", m.Method)
		assert.Equal(t, uriA, m.Params.URI)
	}

	// The shutdown's completion result is the next and last message of
	// every stream: nothing else reached any of them.
	require.NoError(t, h.Shutdown(ctx))
	for name, s := range map[string]*stream{"all": all, "tools": tools, "prompts": prompts, "watchA": watchA, "watchB": watchB} {
		assert.Equal(t, []string{"result"}, s.rest(), name)
	}
	st := h.Bridge().Stats()
	assert.Equal(t, uint64(1), st.ResourceUpdates)
	assert.Equal(t, uint64(2), st.ListChanges)
}

// TestHTTPNothingToListenFor: a server that advertises nothing a listen can
// receive is reported when the handler is made, and its listens are
// acknowledged with exactly what server/discover advertises: nothing.
func TestHTTPNothingToListenFor(t *testing.T) {
	logs := &logBuffer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "empty", Version: "0"}, nil)
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{Options: gosdk.Options{Logger: logs.Logger(slog.LevelWarn)}})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	assert.Contains(t, logs.String(), "advertises no capability a listen can receive")

	l, got := openListen(t, ts.URL, 1, everything)
	assert.Equal(t, ackFor(discoverCaps(t, ts.URL), []any{uriA}), got)
	assert.Empty(t, got)
	require.NoError(t, h.Shutdown(context.Background()))
	l.rest()
}

// TestHTTPCapabilitiesFollowTheServer: a capability the go-sdk infers
// later (tools, once the first tool is added) is acknowledged as soon as
// server/discover advertises it.
func TestHTTPCapabilitiesFollowTheServer(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "prompts-only", Version: "0"}, nil)
	noPrompt := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, noPrompt)
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()

	witness, _ := openListen(t, ts.URL, "w", map[string]any{"promptsListChanged": true})
	before, got := openListen(t, ts.URL, 1, everything)
	assert.Equal(t, ackFor(discoverCaps(t, ts.URL), []any{uriA}), got)
	assert.Equal(t, map[string]any{"promptsListChanged": true}, got, "no tools yet")

	addTool(srv, "t") // the tools capability is inferred from now on
	srv.AddPrompt(&mcp.Prompt{Name: "p2"}, noPrompt)
	// The go-sdk's prompts list change (debounced like the tools one,
	// which no listen could ask for) marks the reading stale before it
	// reaches the witness.
	assert.Equal(t, "notifications/prompts/list_changed", witness.next().Method)
	caps := discoverCaps(t, ts.URL)
	after, got := openListen(t, ts.URL, 2, everything)
	assert.Equal(t, ackFor(caps, []any{uriA}), got)
	assert.Equal(t, true, got["toolsListChanged"])

	require.NoError(t, h.Shutdown(context.Background()))
	for _, s := range []*stream{witness, before, after} {
		s.rest()
	}
}

// Every listen is this library's, whatever version it names: one of the
// server's versions before 2026-07-28 is answered 404 -32601 "Method not
// found: subscriptions/listen" (MCP: listen does not exist there), any other
// version 400 -32022 in the form of the specification's example, its
// supported list being the server's versions. Before, these listens went to
// the go-sdk, which served a stream of its own for the older versions and
// answered 1900-01-01 with plain text.
func TestHTTPListenVersions(t *testing.T) {
	srv := plainServer()
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	ts := httptest.NewServer(h)
	defer ts.Close()
	versions := []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	d, err := gosdk.Discover(context.Background(), srv)
	require.NoError(t, err)
	assert.Equal(t, versions, d.Versions)
	supported, _ := json.Marshal(versions)

	for _, tt := range []struct {
		version string
		status  int
		body    string
	}{
		{"2025-11-25", http.StatusNotFound, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: subscriptions/listen"}}`},
		{"2025-06-18", http.StatusNotFound, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: subscriptions/listen"}}`},
		{"2025-03-26", http.StatusNotFound, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: subscriptions/listen"}}`},
		{"2024-11-05", http.StatusNotFound, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: subscriptions/listen"}}`},
		{"1900-01-01", http.StatusBadRequest, `{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":` + string(supported) + `,"requested":"1900-01-01"}}}`},
		{"2027-01-01", http.StatusBadRequest, `{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":` + string(supported) + `,"requested":"2027-01-01"}}}`},
	} {
		resp := post(t, ts.URL, 7, "subscriptions/listen", tt.version, map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, tt.status, resp.StatusCode, tt.version)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), tt.version)
		assert.Equal(t, tt.body, string(b), tt.version)
	}
	assert.Zero(t, h.Server().Stats().Opened)
}

// 150 listens naming the server's earlier versions, under MaxStreams 5, open
// no stream: each is answered -32601 at once, nothing is counted open or
// refused for capacity, and the hub holds no listener. Before, each one
// opened a stream in the go-sdk, outside every limit of this library.
func TestHTTPOlderListensOpenNoStream(t *testing.T) {
	h, err := gosdk.NewHandler(plainServer(), gosdk.HandlerOptions{Options: gosdk.Options{Listen: listen.Options{MaxStreams: 5}}})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	ts := httptest.NewServer(h)
	defer ts.Close()
	older := []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	for i := range 150 {
		resp := post(t, ts.URL, i, "subscriptions/listen", older[i%len(older)], map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode, i)
	}
	st := h.Server().Stats()
	assert.Equal(t, listen.Stats{}, st)
	assert.Zero(t, h.Bridge().Hub().Stats().Subscriptions)
}

// A listen without its Mcp-Method header, or with another one, is this
// library's too (recognised by its body): refused with -32020, as the
// go-sdk requires the header; it never reaches the go-sdk's own listen.
func TestHTTPListenByBody(t *testing.T) {
	h, err := gosdk.NewHandler(plainServer(), gosdk.HandlerOptions{})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	ts := httptest.NewServer(h)
	defer ts.Close()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
		"params": map[string]any{"_meta": meta, "notifications": map[string]any{"toolsListChanged": true}}})
	for _, header := range []string{"", "tools/list"} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		if header != "" {
			req.Header.Set("Mcp-Method", header)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, header)
		assert.Contains(t, string(b), `"code":-32020`, header)
	}
	assert.Zero(t, h.Server().Stats().Opened)
}

// The Bridge's streams stay what the hub's are (a listen.NotifyStream),
// the resource listens it wraps included, so that streamhttp serves them on
// its fast path.
func TestBridgeStreamsStayNotifyStreams(t *testing.T) {
	ctx := context.Background()
	b, err := gosdk.NewBridge(ctx, plainServer(), gosdk.Options{})
	require.NoError(t, err)
	defer b.Close()
	for _, f := range []listen.Filter{
		{"toolsListChanged": true},
		{"resourceSubscriptions": []any{uriA}},
	} {
		_, st, err := b.Source().Open(ctx, &listen.Request{ID: jsonrpc.IntID(1), ProtocolVersion: spec.ProtocolVersion}, f)
		require.NoError(t, err)
		_, ok := st.(listen.NotifyStream)
		assert.True(t, ok, "%v", f)
		st.Close(nil)
	}
}

// TestHTTPFolderListen: with Options.Listen.SubResources, a folder listen
// behind a go-sdk server receives the updates of the files below it and
// nothing else, each published with one Handler.ResourceUpdated call
// whether or not some listen names the file exactly.
func TestHTTPFolderListen(t *testing.T) {
	const (
		dir       = "test://dir/"
		watched   = "test://dir/watched.txt"
		unnamed   = "test://dir/sub/unnamed.txt"
		outside   = "test://dirt/x.txt" // prefix, but not below the folder
		dotdot    = "test://dir/../etc/passwd"
		elsewhere = "test://other/dir/x.txt"
	)
	srv := plainServer()
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{Options: gosdk.Options{
		Listen: listen.Options{SubResources: &listen.SubResources{}},
	}})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := context.Background()

	folder, got := openListen(t, ts.URL, "folder", map[string]any{"resourceSubscriptions": []any{dir}})
	assert.Equal(t, map[string]any{"resourceSubscriptions": []any{dir}}, got, "the acknowledgement echoes the folder")
	exact, _ := openListen(t, ts.URL, "exact", map[string]any{"resourceSubscriptions": []any{watched}})

	updated := func(uri string) {
		t.Helper()
		require.NoError(t, h.ResourceUpdated(ctx, uri))
	}
	// A file some listen names exactly: the exact listen and the folder
	// listen.
	updated(watched)
	for _, s := range []*stream{exact, folder} {
		m := s.next()
		assert.Equal(t, "notifications/resources/updated", m.Method)
		assert.Equal(t, watched, m.Params.URI)
	}
	// The folder itself.
	updated(dir)
	assert.Equal(t, dir, folder.next().Params.URI)

	// Files nobody names exactly, and URIs that are not below the folder:
	// only the files below the folder arrive.
	for _, u := range []string{outside, dotdot, elsewhere, unnamed} {
		updated(u)
	}
	m := folder.next()
	assert.Equal(t, unnamed, m.Params.URI, "the next update of the folder listen is the file below it")

	require.NoError(t, h.Shutdown(ctx))
	assert.Equal(t, []string{"result"}, folder.rest(), "nothing else reached the folder listen")
	assert.Equal(t, []string{"result"}, exact.rest(), "nor the exact one")
}

// The capabilities are read again only for a listen that asks for a kind
// the last reading does not allow, and then at most once per
// refresh interval: listens the reading allows cost no server/discover.
func TestCapabilitiesReadingIsShared(t *testing.T) {
	// In a bubble: the Sleeps advance the fake clock and the opens take no
	// time on it, so the count of readings is exact.
	synctest.Test(t, testCapabilitiesReadingIsShared)
}

// refreshInterval is the Bridge's shortest time between two readings caused
// by listens asking for more (see adapter.Bridge).
const refreshInterval = 10 * time.Millisecond

func testCapabilitiesReadingIsShared(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "prompts-only", Version: "0"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	b, err := gosdk.NewBridge(ctx, srv, gosdk.Options{})
	require.NoError(t, err)
	defer b.Close()
	opts := b.ListenOptions()
	open := func(i int, f listen.Filter) listen.Filter {
		sub, err := listen.Open(ctx, b.Source(), &listen.Request{
			ID: jsonrpc.IntID(int64(i)), ProtocolVersion: spec.ProtocolVersion, Notifications: f,
		}, &opts)
		require.NoError(t, err)
		defer sub.Close(listen.ErrComplete)
		ack, err := sub.Acknowledgement()
		require.NoError(t, err)
		var msg struct {
			Params struct{ Notifications listen.Filter } `json:"params"`
		}
		require.NoError(t, json.Unmarshal(ack, &msg))
		return msg.Params.Notifications
	}

	time.Sleep(2 * refreshInterval) // the reading is old enough to be read again
	read := b.Stats().Discovers
	prompts := listen.Filter{spec.KeyPromptsListChanged: true}
	for i := range 20 {
		assert.Equal(t, prompts, open(i, prompts))
	}
	assert.Equal(t, read, b.Stats().Discovers, "the reading allows every one of them")

	time.Sleep(2 * refreshInterval) // and again
	more := listen.Filter{spec.KeyPromptsListChanged: true, spec.KeyToolsListChanged: true}
	for i := range 20 {
		assert.Equal(t, prompts, open(100+i, more), "no tools capability")
	}
	assert.Equal(t, read+1, b.Stats().Discovers, "a listen asking for more reads again, once")

	time.Sleep(refreshInterval / 2)
	open(200, more)
	assert.Equal(t, read+1, b.Stats().Discovers, "not again within the refresh interval")
	time.Sleep(refreshInterval/2 + time.Millisecond)
	open(201, more)
	assert.Equal(t, read+2, b.Stats().Discovers, "again once the refresh interval has passed")
}

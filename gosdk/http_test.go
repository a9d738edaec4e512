package gosdk_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/gosdk"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// wantAck is the acknowledgement of a listen asking for every kind and
// resourceSubscriptions uris, by the rules of narrowing, from the
// capabilities object server/discover advertised.
func wantAck(caps map[string]any, uris []any) map[string]any {
	flag := func(group, name string) bool {
		g, _ := caps[group].(map[string]any)
		b, _ := g[name].(bool)
		return b
	}
	want := map[string]any{}
	if flag("tools", "listChanged") {
		want["toolsListChanged"] = true
	}
	if flag("prompts", "listChanged") {
		want["promptsListChanged"] = true
	}
	if flag("resources", "listChanged") {
		want["resourcesListChanged"] = true
	}
	if flag("resources", "subscribe") {
		want["resourceSubscriptions"] = uris
	}
	return want
}

var everything = map[string]any{
	"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
	"resourceSubscriptions": []any{uriA},
}

// TestHTTPPlainServer starts from a go-sdk server with no listen code in it
// and shows, over HTTP: inferred capabilities acknowledged exactly as
// server/discover advertises them; AddTool, RemovePrompts and
// ResourceUpdated each reaching the listens that asked for them and no
// others.
func TestHTTPPlainServer(t *testing.T) {
	srv := plainServer()
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := context.Background()

	caps := discoverCaps(t, ts.URL)
	want := wantAck(caps, []any{uriA})
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
	require.NoError(t, srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uriA}))
	for _, s := range []*stream{watchA, all} {
		m := s.next()
		assert.Equal(t, "notifications/resources/updated", m.Method)
		assert.Equal(t, uriA, m.Params.URI)
	}
	assert.Equal(t, 2, h.Bridge().Stats().Watched, "uriA and uriB watched")

	// The shutdown's completion result is the next and last message of
	// every stream: nothing else reached any of them.
	require.NoError(t, h.Shutdown(ctx))
	for name, s := range map[string]*stream{"all": all, "tools": tools, "prompts": prompts, "watchA": watchA, "watchB": watchB} {
		assert.Equal(t, []string{"result"}, s.rest(), name)
	}
	st := h.Bridge().Stats()
	assert.Equal(t, 0, st.Watched, "every watch released")
	assert.Equal(t, uint64(2), st.Subscribes)
	assert.Equal(t, uint64(2), st.Unsubscribes)
}

// TestHTTPNothingToListenFor: a server that advertises nothing a listen can
// receive is reported when the handler is made, and its listens are
// acknowledged with exactly what server/discover advertises: nothing.
func TestHTTPNothingToListenFor(t *testing.T) {
	logs := &logBuffer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "empty", Version: "0"}, nil)
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{Options: gosdk.Options{Logger: logs.logger()}})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	assert.Contains(t, logs.String(), "advertises no capability a listen can receive")

	l, got := openListen(t, ts.URL, 1, everything)
	assert.Equal(t, wantAck(discoverCaps(t, ts.URL), []any{uriA}), got)
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
	assert.Equal(t, wantAck(discoverCaps(t, ts.URL), []any{uriA}), got)
	assert.Equal(t, map[string]any{"promptsListChanged": true}, got, "no tools yet")

	addTool(srv, "t") // the tools capability is inferred from now on
	srv.AddPrompt(&mcp.Prompt{Name: "p2"}, noPrompt)
	// The go-sdk's prompts list change (debounced like the tools one,
	// which no listen could ask for) marks the reading stale before it
	// reaches the witness.
	assert.Equal(t, "notifications/prompts/list_changed", witness.next().Method)
	caps := discoverCaps(t, ts.URL)
	after, got := openListen(t, ts.URL, 2, everything)
	assert.Equal(t, wantAck(caps, []any{uriA}), got)
	assert.Equal(t, true, got["toolsListChanged"])

	require.NoError(t, h.Shutdown(context.Background()))
	for _, s := range []*stream{witness, before, after} {
		s.rest()
	}
}

// TestHTTPUnsupportedVersionIsTheGoSDKs: a listen naming a version the
// server does not serve is answered by the go-sdk itself, byte for byte.
func TestHTTPUnsupportedVersionIsTheGoSDKs(t *testing.T) {
	srv := plainServer()
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{})
	require.NoError(t, err)
	defer h.Shutdown(context.Background())
	ours := httptest.NewServer(h)
	defer ours.Close()
	theirs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	defer theirs.Close()

	for _, version := range []string{"2027-01-01", "2026-13-99"} {
		answer := func(endpoint string) (int, string, string) {
			resp := post(t, endpoint, 7, "subscriptions/listen", version, map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
		}
		st1, ct1, b1 := answer(ours.URL)
		st2, ct2, b2 := answer(theirs.URL)
		t.Logf("%s: %d %s", version, st1, strings.TrimSpace(b1))
		assert.Equal(t, st2, st1)
		assert.Equal(t, ct2, ct1)
		assert.Equal(t, b2, b1)
		assert.Contains(t, b1, "-32022")
		assert.Contains(t, b1, `"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`)
	}
	assert.Equal(t, []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, h.Bridge().Versions())
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
// nothing else. Server.ResourceUpdated reaches it for a file that some
// listen names exactly (the go-sdk then reports the update to the bridge);
// for any other file the update is published with Handler.Hub, as the
// package doc says.
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
		require.NoError(t, srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}))
	}
	// A file some listen names exactly: the go-sdk's own call reaches the
	// exact listen and the folder listen.
	updated(watched)
	for _, s := range []*stream{exact, folder} {
		m := s.next()
		assert.Equal(t, "notifications/resources/updated", m.Method)
		assert.Equal(t, watched, m.Params.URI)
	}
	// The folder itself.
	updated(dir)
	assert.Equal(t, dir, folder.next().Params.URI)

	// Files nobody names exactly, and URIs that are not below the folder,
	// published with the hub: only the files below the folder arrive.
	for _, u := range []string{outside, dotdot, elsewhere, unnamed} {
		_, err := h.Hub().ResourceUpdated(u)
		require.NoError(t, err, u)
	}
	m := folder.next()
	assert.Equal(t, unnamed, m.Params.URI, "the next update of the folder listen is the file below it")

	require.NoError(t, h.Shutdown(ctx))
	assert.Equal(t, []string{"result"}, folder.rest(), "nothing else reached the folder listen")
	assert.Equal(t, []string{"result"}, exact.rest(), "nor the exact one")
}

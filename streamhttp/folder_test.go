package streamhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// Sub-resource listens (listen.Options.SubResources) over streamable HTTP,
// end to end: a hub source, a real loopback server, an SSE client. The
// tests use the package's public API only.

// folderUpdates are published in order to a listen on file:///project/ and
// file:///notes.txt; folder and exact say whether a listen with and without
// SubResources receives each.
var folderUpdates = []struct {
	uri           string
	folder, exact bool
}{
	{"file:///project/", true, true},
	{"file:///project/src/main.go", true, false},
	{"file:///project/a/b/c/d/e/f/g/h.txt", true, false},
	{"file:///project/README.md?rev=2", true, false},
	{"FILE:///project/x", true, false},
	{"file:///project", false, false},                   // the folder's parent name
	{"file:///projectx/a", false, false},                // a prefix, not a segment
	{"file:///project%2Fsecret", false, false},          // %2F is not a '/'
	{"file:///project/../etc/passwd", false, false},     // '..' never escapes
	{"file:///project/%2E%2E/etc/passwd", false, false}, // nor does %2E%2E
	{"file:///project/./a", false, false},
	{"file://other/project/a", false, false}, // another authority
	{"http:///project/a", false, false},      // another scheme
	{"file:///notes.txt", true, true},
	{"file:///notes.txt/x", true, false},
	{"file:///notes.txtx", false, false},
	{"file:///elsewhere", false, false},
}

// folderFence is published last: a listen has received everything it will
// of folderUpdates once it receives the fence.
const folderFence = "file:///project/zz-fence"

// folderServer serves a hub over a loopback HTTP server (HTTP/2 over TLS
// when h2) with opts, authenticating the X-User header as the principal.
func folderServer(t *testing.T, opts listen.Options, h2 bool) (*hub.Hub, *httptest.Server, *http.Client) {
	t.Helper()
	h, err := hub.New(hub.Options{MaxBuffer: 1000})
	require.NoError(t, err)
	opts.Capabilities = listen.Capabilities{ResourcesSubscribe: true}
	handler, err := (config{
		Listen:       opts,
		Authenticate: func(r *http.Request) (any, error) { return r.Header.Get("X-User"), nil },
	}).build(h)
	require.NoError(t, err)
	ts := httptest.NewUnstartedServer(handler)
	var client *http.Client
	if h2 {
		ts.EnableHTTP2 = true
		ts.StartTLS()
		client = ts.Client()
	} else {
		ts.Start()
		client = &http.Client{Transport: &http.Transport{}}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = handler.Shutdown(ctx)
		ts.CloseClientConnections()
		ts.Close()
		client.CloseIdleConnections()
	})
	return h, ts, client
}

// folderListen opens a listen of user's on uris and reads its
// acknowledgement; its request ends with the test (or after a failsafe).
func folderListen(t *testing.T, ts *httptest.Server, client *http.Client, user string, uris ...string) *sse {
	t.Helper()
	list, err := json.Marshal(uris)
	require.NoError(t, err)
	body := `{"jsonrpc":"2.0","id":"` + user + `","method":"subscriptions/listen","params":{` +
		`"notifications":{"resourceSubscriptions":` + string(list) + `},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", spec.ProtocolVersion)
	req.Header.Set("Mcp-Method", spec.MethodListen)
	req.Header.Set("X-User", user)
	resp, err := client.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := newSSE(resp)
	ack := s.message(t)
	require.Equal(t, spec.MethodAcknowledged, ack["method"])
	return s
}

// untilFence returns the URIs of the resources/updated notifications read
// up to the fence (excluded).
func untilFence(t *testing.T, s *sse) []string {
	t.Helper()
	var got []string
	for {
		m := s.message(t)
		require.Equal(t, spec.MethodResourceUpdated, m["method"], "%v", m)
		uri := m["params"].(map[string]any)["uri"].(string)
		if uri == folderFence {
			return got
		}
		got = append(got, uri)
	}
}

func publishFolderUpdates(t *testing.T, h *hub.Hub) {
	t.Helper()
	for _, u := range folderUpdates {
		_, err := h.ResourceUpdated(u.uri)
		require.NoError(t, err)
	}
	_, err := h.ResourceUpdated(folderFence)
	require.NoError(t, err)
}

// A folder listen receives the updates of the files inside its folders and
// nothing outside; a listen without SubResources behaves as before.
func TestFolderListenOverHTTP(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		name := "HTTP/1.1"
		if h2 {
			name = "HTTP/2"
		}
		t.Run(name, func(t *testing.T) {
			var wantFolder, wantExact []string
			for _, u := range folderUpdates {
				if u.folder {
					wantFolder = append(wantFolder, u.uri)
				}
				if u.exact {
					wantExact = append(wantExact, u.uri)
				}
			}
			h, ts, client := folderServer(t, listen.Options{SubResources: &listen.SubResources{}}, h2)
			s := folderListen(t, ts, client, "alice", "file:///project/", "file:///notes.txt")
			publishFolderUpdates(t, h)
			assert.Equal(t, wantFolder, untilFence(t, s))

			h, ts, client = folderServer(t, listen.Options{}, h2)
			s = folderListen(t, ts, client, "alice", "file:///project/", "file:///notes.txt", folderFence)
			publishFolderUpdates(t, h)
			assert.Equal(t, wantExact, untilFence(t, s))
		})
	}
}

// CanRead applies to every delivered sub-resource: bob never receives an
// update under file:///project/secret/, alice does; both get the rest.
func TestFolderListenCanReadOverHTTP(t *testing.T) {
	canRead := func(_ context.Context, req *listen.Request, uri string) bool {
		return req.Auth == "alice" || !strings.HasPrefix(uri, "file:///project/secret")
	}
	h, ts, client := folderServer(t, listen.Options{SubResources: &listen.SubResources{}, CanRead: canRead}, false)
	alice := folderListen(t, ts, client, "alice", "file:///project/")
	bob := folderListen(t, ts, client, "bob", "file:///project/")
	for _, u := range []string{"file:///project/a", "file:///project/secret/key", "file:///project/secret", "file:///project/b"} {
		_, err := h.ResourceUpdated(u)
		require.NoError(t, err)
	}
	_, err := h.ResourceUpdated(folderFence)
	require.NoError(t, err)
	assert.Equal(t, []string{"file:///project/a", "file:///project/secret/key", "file:///project/secret", "file:///project/b"}, untilFence(t, alice))
	assert.Equal(t, []string{"file:///project/a", "file:///project/b"}, untilFence(t, bob))
}

// A folder listen with a CanRead keeps the principal for its delivery
// checks, but not the request's params (the body): the retention rule of
// the core holds with SubResources.
func TestFolderListenDoesNotRetainParams(t *testing.T) {
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	var params weak.Pointer[byte]
	src := listentest.SourceFunc(func(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
		params = weak.Make(&req.Params[0])
		return h.Open(ctx, req, supported)
	})
	handler, err := (config{
		Listen: listen.Options{
			Capabilities:   listen.Capabilities{ResourcesSubscribe: true},
			SubResources:   &listen.SubResources{},
			CanRead:        func(_ context.Context, req *listen.Request, _ string) bool { return req.Auth == "alice" },
			MaxURIBytes:    2 << 20, // the padding below
			MaxFilterBytes: 4 << 20,
		},
		MaxBodyBytes: 4 << 20,
		Authenticate: func(r *http.Request) (any, error) { return r.Header.Get("X-User"), nil },
	}).build(src)
	require.NoError(t, err)
	ts := httptest.NewServer(handler)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = handler.Shutdown(ctx)
		ts.CloseClientConnections()
		ts.Close()
		client.CloseIdleConnections()
	})
	pad := "file:///pad/" + strings.Repeat("p", 1<<20)
	s := folderListen(t, ts, client, "alice", "file:///project/", pad)
	for i := 0; i < 10 && params.Value() != nil; i++ {
		runtime.GC()
	}
	assert.Nil(t, params.Value(), "the request's params are still reachable")
	_, err = h.ResourceUpdated("file:///project/a")
	require.NoError(t, err)
	_, err = h.ResourceUpdated(folderFence)
	require.NoError(t, err)
	assert.Equal(t, []string{"file:///project/a"}, untilFence(t, s), "CanRead still sees the principal")
}

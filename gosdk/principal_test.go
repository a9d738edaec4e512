package gosdk_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/gosdk"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// Listens bound to their principal through the go-sdk adapter: behind
// auth.RequireBearerToken, a listen's principal is the go-sdk's TokenInfo.

// tenantToken verifies "<user>@<tenant>" bearer tokens.
func tenantToken(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	user, tenant, ok := strings.Cut(token, "@")
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: user, Scopes: []string{"mcp"}, Expiration: time.Now().Add(time.Hour),
		Extra: map[string]any{"tenant": tenant}}, nil
}

// listenWith opens a listen with a bearer token and reads its
// acknowledgement.
func listenWith(t *testing.T, url, token, id string, notifications map[string]any) *stream {
	t.Helper()
	p := map[string]any{"_meta": meta, "notifications": notifications}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": p})
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	resp, err := (&http.Client{Transport: bearer{token}}).Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := &stream{t: t, resp: resp, msgs: make(chan msg, 100), done: make(chan struct{})}
	go s.read()
	require.Equal(t, spec.MethodAcknowledged, s.next().Method)
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// endReason returns the endReason of a completion result.
func endReason(t *testing.T, m msg) string {
	t.Helper()
	var res struct {
		Meta map[string]any `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &res))
	r, _ := res.Meta[spec.MetaEndReason].(string)
	return r
}

func userOf(a any) any { return a.(*auth.TokenInfo).UserID }

// A revoked user's listen ends with the revoked ending while another
// user's goes on; a tenant-scoped publication reaches that tenant only;
// with Deliver, an update of a resource the user may no longer read is not
// delivered; a lifetime ends a listen with its completion.
func TestPrincipalsThroughTheGoSDKAdapter(t *testing.T) {
	var mu sync.Mutex
	revoked := map[string]bool{}
	denied := map[string]bool{}
	access := &listen.Access{
		Key: userOf,
		Check: func(_ context.Context, a any) error {
			mu.Lock()
			defer mu.Unlock()
			if revoked[a.(*auth.TokenInfo).UserID] {
				return listen.ErrRevoked
			}
			return nil
		},
		Deliver: true,
	}
	srv := plainServer()
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{Options: gosdk.Options{Listen: listen.Options{
		Access: access,
		Scopes: func(req *listen.Request) []string {
			return []string{"tenant:" + req.Auth.(*auth.TokenInfo).Extra["tenant"].(string)}
		},
		CanRead: func(_ context.Context, req *listen.Request, uri string) bool {
			mu.Lock()
			defer mu.Unlock()
			return !denied[req.Auth.(*auth.TokenInfo).UserID+" "+uri]
		},
	}}})
	require.NoError(t, err)
	ts := httptest.NewServer(auth.RequireBearerToken(tenantToken, nil)(h))
	defer ts.Close()
	defer func() { require.NoError(t, h.Shutdown(context.Background())) }()

	ann := listenWith(t, ts.URL, "ann@acme", "ann", map[string]any{"toolsListChanged": true, "resourceSubscriptions": []any{uriA, uriB}})
	bob := listenWith(t, ts.URL, "bob@acme", "bob", map[string]any{"toolsListChanged": true})
	cy := listenWith(t, ts.URL, "cy@globex", "cy", map[string]any{"toolsListChanged": true})

	// Scoped: acme's listens only.
	_, err = h.Bridge().Hub().Publish(listen.ToolsListChanged().WithScope("tenant:acme"))
	require.NoError(t, err)
	assert.Equal(t, spec.MethodToolsListChanged, ann.next().Method)
	assert.Equal(t, spec.MethodToolsListChanged, bob.next().Method)

	// Revoked: bob ends, with the reason; ann goes on.
	mu.Lock()
	revoked["bob"] = true
	mu.Unlock()
	assert.Equal(t, 1, access.Recheck(context.Background(), func(a any) bool { return userOf(a) == "bob" }))
	end := bob.next()
	assert.Equal(t, "bob", end.ID)
	assert.Equal(t, "revoked", endReason(t, end))
	assert.Empty(t, bob.rest())

	// Deliver: after ann loses test://a, its updates stop; test://b's go on.
	mu.Lock()
	denied["ann "+uriA] = true
	mu.Unlock()
	access.Recheck(context.Background(), func(a any) bool { return userOf(a) == "ann" })
	require.NoError(t, h.ResourceUpdated(context.Background(), uriA))
	require.NoError(t, h.ResourceUpdated(context.Background(), uriB))
	m := ann.next()
	assert.Equal(t, spec.MethodResourceUpdated, m.Method)
	assert.Equal(t, uriB, m.Params.URI, "test://a is no longer delivered to ann")

	// An unscoped change reaches everyone left, globex included.
	addTool(srv, "another")
	assert.Equal(t, spec.MethodToolsListChanged, ann.next().Method)
	assert.Equal(t, spec.MethodToolsListChanged, cy.next().Method, "cy got the unscoped change, and only that one")
	assert.Equal(t, uint64(1), h.Server().Stats().Revoked)
}

// A lifetime bound ends a listen served by the adapter with its
// completion, reason "lifetime"; Disabled turns listen off while the
// go-sdk's methods go on.
func TestLifetimeAndDisabledThroughTheGoSDKAdapter(t *testing.T) {
	srv := plainServer()
	h, err := gosdk.NewHandler(srv, gosdk.HandlerOptions{Options: gosdk.Options{Listen: listen.Options{
		MaxLifetime: 200 * time.Millisecond, LifetimeJitter: 100 * time.Millisecond,
	}}})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	start := time.Now()
	s, _ := openListen(t, ts.URL, "l", map[string]any{"toolsListChanged": true})
	end := s.next()
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
	assert.Equal(t, "lifetime", endReason(t, end))
	assert.Empty(t, s.rest())
	require.NoError(t, h.Shutdown(context.Background()))

	off, err := gosdk.NewHandler(plainServer(), gosdk.HandlerOptions{
		Options: gosdk.Options{Listen: listen.Options{Disabled: true}},
		HTTP:    streamhttp.Options{},
	})
	require.NoError(t, err)
	ts2 := httptest.NewServer(off)
	defer ts2.Close()
	resp := post(t, ts2.URL, 1, "subscriptions/listen", "2026-07-28", map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	msgs := readMessages(t, resp)
	resp.Body.Close()
	require.Len(t, msgs, 1)
	assert.Contains(t, string(msgs[0]), "Method not found: subscriptions/listen is turned off on this server")
	resp = post(t, ts2.URL, 2, "tools/list", "2026-07-28", nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(readMessages(t, resp)[0]), `"echo"`)
	resp.Body.Close()
	require.NoError(t, off.Shutdown(context.Background()))
}

// Over the adapter's stdio (NewStdio), the connection's principal
// (stdio.Options.Auth) is bound to its listens: a re-check that refuses it
// tears them down (notifications/cancelled, then the ending with its
// reason), and the go-sdk's other methods go on.
func TestPrincipalThroughTheGoSDKStdio(t *testing.T) {
	var mu sync.Mutex
	revoked := false
	access := &listen.Access{Check: func(context.Context, any) error {
		mu.Lock()
		defer mu.Unlock()
		if revoked {
			return listen.ErrRevoked
		}
		return nil
	}}
	opts := gosdk.StdioOptions{Options: gosdk.Options{Listen: listen.Options{Access: access}}}
	opts.Stdio.Auth = func(context.Context) (any, time.Time) { return "the-stdio-user", time.Time{} }
	r := startRaw(t, plainServer(), true, opts)
	r.send(listenLine("1", "2026-07-28"))
	assert.Contains(t, r.recv(), `"method":"notifications/subscriptions/acknowledged"`)
	mu.Lock()
	revoked = true
	mu.Unlock()
	assert.Equal(t, 1, access.Recheck(context.Background(), nil))
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"reason":"Subscription ended: revoked","requestId":1}}`, r.recv())
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.github.mcplisten/endReason":"revoked","io.modelcontextprotocol/serverInfo":{"name":"plain","version":"1.2.3"},"io.modelcontextprotocol/subscriptionId":1},"resultType":"complete"}}`, r.recv())
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	assert.Contains(t, r.recv(), `"echo"`)
	rest, err := r.end()
	require.NoError(t, err)
	assert.Empty(t, rest)
}

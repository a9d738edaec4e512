package listen_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// Tests of Options.SubResources in the core: which updates a subscription
// shapes, CanRead on delivery, SubResources.Folders, and what it keeps. The
// subscriptions are opened on a hub, but shaped directly (Notification), so
// that what is tested is the core's own decision.

// within receives from ch, failing the test after a generous failsafe
// (never a synchronisation: the value is expected well before).
func within[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		require.FailNow(t, "timed out")
	}
	var zero T
	return zero
}

// subResRequest is a 2026-07-28 listen request for uris, with a principal.
func subResRequest(id string, uris ...string) *listen.Request {
	list := make([]any, len(uris))
	for i, u := range uris {
		list[i] = u
	}
	return &listen.Request{
		ID:                 jsonrpc.StringID(id),
		ProtocolVersion:    spec.ProtocolVersion,
		Notifications:      listen.Filter{spec.KeyResourceSubscriptions: list},
		ClientCapabilities: map[string]any{},
		ClientInfo:         &listen.Implementation{Name: "client", Version: "1"},
		Transport:          listen.Transport{Kind: "direct", RemoteAddr: "127.0.0.1:1", Header: map[string][]string{"X": {"y"}}},
		Auth:               "alice",
	}
}

func openSubRes(t testing.TB, opts listen.Options, uris ...string) *listen.Subscription {
	t.Helper()
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	opts.Capabilities = listen.Capabilities{ResourcesSubscribe: true}
	sub, err := listen.Open(context.Background(), h, subResRequest("s", uris...), &opts)
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close(nil) })
	return sub
}

// shaped reports whether sub delivers an update of uri, and its error.
func shaped(t testing.TB, sub *listen.Subscription, uri string) (bool, error) {
	t.Helper()
	msg, err := sub.Notification(listen.ResourceUpdated(uri))
	if msg != nil {
		m := decode(t, msg)
		assert.Equal(t, uri, m["params"].(map[string]any)["uri"], "the update's own URI is sent")
	}
	return msg != nil, err
}

func TestSubResourcesShaping(t *testing.T) {
	subscribed := []string{"file:///p/", "file:///q", "HTTP://Example.COM/docs", "file:///x/f.txt?v=1", "file:///y%2f"}
	for _, tc := range []struct {
		uri         string
		exact, tree bool
	}{
		{"file:///p/", true, true},
		{"file:///p/a", false, true},
		{"file:///p/a/b/c.go", false, true},
		{"file:///p", false, false},     // file:///p/ does not cover file:///p
		{"file:///pa", false, false},    // not a segment
		{"file:///q", true, true},       // itself
		{"file:///q/", false, true},     // file:///q covers file:///q/
		{"file:///q/r", false, true},    // and below
		{"file:///qr", false, false},    // prefix, not a segment
		{"file:///q%2Fr", false, false}, // %2F is not a '/'
		{"file:///q%2fr", false, false},
		{"file:///q/../etc/passwd", false, false}, // a dot segment never escapes
		{"file:///q/%2E%2E/etc", false, false},
		{"file:///q/./r", false, false},
		{"file:///Q/r", false, false},      // paths are case-sensitive
		{"FILE:///q/r", false, true},       // schemes are not
		{"file://host/q/r", false, false},  // another authority
		{"file:/q/r", false, false},        // no authority is not the empty one
		{"http:///q/r", false, false},      // another scheme
		{"file:///q/r?x=1#f", false, true}, // the update's query and fragment play no part
		{"http://example.com/docs/a", false, true},
		{"http://EXAMPLE.com/docs/a", false, true},
		{"http://example.com:80/docs/a", false, false},
		{"http://user@example.com/docs/a", false, false},
		{"file:///x/f.txt?v=1", true, true}, // a query: only itself
		{"file:///x/f.txt?v=2", false, false},
		{"file:///x/f.txt", false, false},
		{"file:///y%2F", false, true},   // %2f is %2F
		{"file:///y%2F/z", false, true}, // the segment y%2F, then z
		{"file:///y%2Fz", false, false},
		{"file:///other", false, false},
	} {
		exact := openSubRes(t, listen.Options{}, subscribed...)
		got, err := shaped(t, exact, tc.uri)
		require.NoError(t, err)
		assert.Equal(t, tc.exact, got, "exact mode: %s", tc.uri)

		tree := openSubRes(t, listen.Options{SubResources: &listen.SubResources{}}, subscribed...)
		got, err = shaped(t, tree, tc.uri)
		require.NoError(t, err)
		assert.Equal(t, tc.tree, got, "SubResources: %s", tc.uri)
	}
}

// The acknowledgement echoes the accepted URIs, folders included, the same
// with and without SubResources.
func TestSubResourcesAcknowledgementUnchanged(t *testing.T) {
	uris := []string{"file:///p/", "file:///q"}
	a, err := openSubRes(t, listen.Options{}, uris...).Acknowledgement()
	require.NoError(t, err)
	b, err := openSubRes(t, listen.Options{SubResources: &listen.SubResources{}}, uris...).Acknowledgement()
	require.NoError(t, err)
	assert.Equal(t, string(a), string(b))
	assert.Contains(t, string(b), `"resourceSubscriptions":["file:///p/","file:///q"]`)
}

// Other kinds are shaped as without SubResources.
func TestSubResourcesOtherKinds(t *testing.T) {
	sub := openSubRes(t, listen.Options{SubResources: &listen.SubResources{}}, "file:///p/")
	msg, err := sub.Notification(listen.ToolsListChanged())
	require.NoError(t, err)
	assert.Nil(t, msg, "not requested")
	_, err = sub.Notification(listen.ResourceUpdated("not a uri"))
	assert.ErrorIs(t, err, listen.ErrInvalidEvent)
}

// canReadRecorder is a CanRead policy that refuses the URIs under denied
// and records every call.
type canReadRecorder struct {
	denied string
	mu     sync.Mutex
	calls  []string
	reqs   []*listen.Request
	ctxs   []context.Context
}

func (c *canReadRecorder) canRead(ctx context.Context, req *listen.Request, uri string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, uri)
	c.reqs = append(c.reqs, req)
	c.ctxs = append(c.ctxs, ctx)
	return req.Auth == "alice" && !strings.HasPrefix(uri, c.denied)
}

func (c *canReadRecorder) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.reqs, c.ctxs = nil, nil, nil
}

// CanRead narrows the subscribed URIs at Open and is asked again for every
// covered sub-resource; a refused one is never delivered.
func TestSubResourcesCanReadPerDelivery(t *testing.T) {
	pol := &canReadRecorder{denied: "file:///p/secret"}
	sub := openSubRes(t, listen.Options{SubResources: &listen.SubResources{}, CanRead: pol.canRead},
		"file:///p/", "file:///p/secret/", "file:///p/open.txt")
	assert.Equal(t, []string{"file:///p/", "file:///p/secret/", "file:///p/open.txt"}, pol.calls, "Open asks about each URI")
	assert.Equal(t, []string{"file:///p/", "file:///p/open.txt"}, listen.Strings(sub.Accepted(), spec.KeyResourceSubscriptions))
	pol.reset()

	for _, tc := range []struct {
		uri       string
		delivered bool
		asked     bool
	}{
		{"file:///p/a.txt", true, true},
		{"file:///p/open.txt", true, false}, // accepted at Open: not asked again
		{"file:///p/secret/key", false, true},
		{"file:///p/secret", false, true},
		{"file:///p/secretive/x", false, true}, // the policy's own prefix rule
		{"file:///p/", true, false},
		{"FILE:///p/", true, true}, // covered, but not byte for byte: asked
		{"file:///elsewhere", false, false},
	} {
		pol.reset()
		got, err := shaped(t, sub, tc.uri)
		require.NoError(t, err)
		assert.Equal(t, tc.delivered, got, tc.uri)
		if tc.asked {
			assert.Equal(t, []string{tc.uri}, pol.calls, tc.uri)
		} else {
			assert.Empty(t, pol.calls, tc.uri)
		}
	}

	// On delivery CanRead sees a detached request: the principal, the id,
	// the client and the transport's kind and address; no headers, params
	// or capabilities.
	pol.reset()
	_, _ = shaped(t, sub, "file:///p/b")
	require.Len(t, pol.reqs, 1)
	r := pol.reqs[0]
	assert.Equal(t, "alice", r.Auth)
	assert.Equal(t, `"s"`, r.ID.Raw())
	assert.Equal(t, spec.ProtocolVersion, r.ProtocolVersion)
	assert.Equal(t, &listen.Implementation{Name: "client", Version: "1"}, r.ClientInfo)
	assert.Equal(t, listen.Transport{Kind: "direct", RemoteAddr: "127.0.0.1:1"}, r.Transport)
	assert.Nil(t, r.Notifications)
	assert.Nil(t, r.Params)
	assert.Nil(t, r.Meta)
	assert.Nil(t, r.ClientCapabilities)
	assert.NotNil(t, pol.ctxs[0], "AppendNotification gives context.Background()")
}

// Without SubResources, CanRead runs at Open only (as before).
func TestCanReadNotAskedOnDeliveryInExactMode(t *testing.T) {
	pol := &canReadRecorder{denied: "file:///none"}
	sub := openSubRes(t, listen.Options{CanRead: pol.canRead}, "file:///p/")
	pol.reset()
	for _, u := range []string{"file:///p/", "file:///p/a"} {
		_, err := shaped(t, sub, u)
		require.NoError(t, err)
	}
	assert.Empty(t, pol.calls)
}

type ctxKey struct{}

// Serve hands its own context to CanRead on delivery.
func TestSubResourcesCanReadGetsServeContext(t *testing.T) {
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	seen := make(chan any, 4)
	opts := &listen.Options{
		Capabilities: listen.Capabilities{ResourcesSubscribe: true},
		SubResources: &listen.SubResources{},
		CanRead: func(ctx context.Context, _ *listen.Request, uri string) bool {
			if uri != "file:///p/" {
				seen <- ctx.Value(ctxKey{})
			}
			return uri != "file:///p/denied"
		},
	}
	sub, err := listen.Open(context.Background(), h, subResRequest("s", "file:///p/"), opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "serve"))
	msgs := make(chan string, 8)
	done := make(chan error, 1)
	go func() {
		done <- sub.Serve(ctx, listen.Sink{Write: func(b []byte) error { msgs <- string(b); return nil }})
	}()
	assert.Contains(t, within(t, msgs), spec.MethodAcknowledged)
	_, err = h.ResourceUpdated("file:///p/denied")
	require.NoError(t, err)
	_, err = h.ResourceUpdated("file:///p/ok")
	require.NoError(t, err)
	assert.Equal(t, "serve", within(t, seen))
	assert.Equal(t, "serve", within(t, seen))
	assert.Contains(t, within(t, msgs), `"uri":"file:///p/ok"`, "the denied update was dropped, the next one delivered")
	cancel()
	assert.ErrorIs(t, within(t, done), listen.ErrDisconnected)
}

// A CanRead or SubResources.Folders that panics while an update is shaped fails
// the stream, as an invalid event does; the host keeps running. (The hub
// applies Folders too, before the subscription does: its Publish reports
// the panic.)
func TestSubResourcesPolicyPanicFailsTheStream(t *testing.T) {
	for name, opts := range map[string]listen.Options{
		"Options.CanRead": {SubResources: &listen.SubResources{}, CanRead: func(_ context.Context, _ *listen.Request, uri string) bool {
			if uri != "file:///p/" {
				panic("boom")
			}
			return true
		}},
		"SubResources.Folders": {SubResources: &listen.SubResources{Folders: func(string) ([]string, bool) { panic("boom") }}},
	} {
		t.Run(name, func(t *testing.T) {
			sub := openSubRes(t, opts, "file:///p/")
			ok, err := shaped(t, sub, "file:///p/")
			require.NoError(t, err)
			assert.True(t, ok, "an accepted URI needs no policy")
			_, err = shaped(t, sub, "file:///p/a")
			var pe *listen.PanicError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, name, pe.Op)
			var we *jsonrpc.Error
			require.ErrorAs(t, err, &we)
			assert.Equal(t, core.SourceFailed, we.Message)

			// Served, the stream ends with the failure.
			h, herr := hub.New(hub.Options{})
			require.NoError(t, herr)
			opts.Capabilities = listen.Capabilities{ResourcesSubscribe: true}
			sub, err = listen.Open(context.Background(), h, subResRequest("f", "file:///p/"), &opts)
			require.NoError(t, err)
			msgs := make(chan string, 8)
			done := make(chan error, 1)
			go func() {
				done <- sub.Serve(context.Background(), listen.Sink{Write: func(b []byte) error { msgs <- string(b); return nil }})
			}()
			within(t, msgs)
			_, perr := h.ResourceUpdated("file:///p/a")
			if opts.SubResources.Folders != nil {
				// The hub applies the same rule first: Publish reports the
				// panic and publishes nothing; the stream goes on.
				require.ErrorAs(t, perr, &pe)
				assert.Equal(t, name, pe.Op)
				sub.Close(nil)
				assert.ErrorIs(t, within(t, done), listen.ErrComplete)
				return
			}
			assert.Contains(t, within(t, msgs), `"message":"Subscription source failed"`)
			assert.ErrorIs(t, within(t, done), listen.ErrFailed)
		})
	}
}

// SubResources.Folders gives the hierarchy of a scheme whose path is not it; the
// built-in rule still applies to the URIs it does not claim.
func TestSubResourcesCustomFolders(t *testing.T) {
	folders := func(uri string) ([]string, bool) {
		rest, ok := strings.CutPrefix(uri, "db://h/")
		if !ok {
			return nil, false
		}
		var out []string
		for i := len(rest) - 1; i >= 0; i-- {
			if rest[i] == '.' {
				out = append(out, "db://h/"+rest[:i])
			}
		}
		return out, true
	}
	sub := openSubRes(t, listen.Options{SubResources: &listen.SubResources{Folders: folders}}, "db://h/s.t", "DB://H/x", "file:///p/")
	for uri, want := range map[string]bool{
		"db://h/s.t":     true,
		"db://h/s.t.r":   true,
		"db://h/s.t.r.c": true,
		"db://h/s.tr":    false,
		"db://h/s":       false,
		"db://h/s.t/r":   false, // claimed: the path rule does not apply
		"db://h/x":       true,  // itself, normalised
		"file:///p/a":    true,  // not claimed: the built-in rule
		"file:///pa":     false,
	} {
		got, err := shaped(t, sub, uri)
		require.NoError(t, err)
		assert.Equal(t, want, got, uri)
	}
}

// With SubResources and CanRead, an open subscription keeps the principal
// (Request.Auth's value) but not the request: neither its body, nor the
// Request itself, nor its headers.
func TestSubResourcesDoNotRetainTheRequest(t *testing.T) {
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	body := make([]byte, 0, 2<<20)
	body = append(body, listenBody(`"retain"`, `{"resourceSubscriptions":["file:///p/"]}`)...)
	body = body[:len(body)-2]
	body = append(body, `,"padding":"`...)
	body = append(body, strings.Repeat("p", 2<<20-len(body)-8)...)
	body = append(body, `"}}`...)
	weakBody := weak.Make(&body[0])
	req, err := listen.ParseRequest(body)
	require.NoError(t, err)
	type principal struct{ name string }
	auth := &principal{name: "alice"}
	req.Auth = auth
	req.Transport.Header = map[string][]string{"X-Big": {strings.Repeat("h", 1<<20)}}
	weakReq := weak.Make(req)
	weakAuth := weak.Make(auth)
	sub, err := listen.Open(context.Background(), h, req, &listen.Options{
		Capabilities: listen.Capabilities{ResourcesSubscribe: true},
		SubResources: &listen.SubResources{},
		CanRead: func(_ context.Context, r *listen.Request, _ string) bool {
			p, ok := r.Auth.(*principal)
			return ok && p.name == "alice"
		},
	})
	require.NoError(t, err)
	defer sub.Close(nil)
	body, req, auth = nil, nil, nil //nolint:ineffassign,wastedassign // drop our references

	runtime.GC()
	runtime.GC()
	assert.Nil(t, weakBody.Value(), "the request body is still reachable")
	assert.Nil(t, weakReq.Value(), "the Request is still reachable")
	assert.NotNil(t, weakAuth.Value(), "the principal is kept for CanRead")
	ok, err := shaped(t, sub, "file:///p/a")
	require.NoError(t, err)
	assert.True(t, ok)
}

// An error from shaping is not a drop.
func TestSubResourcesErrorIsNotADrop(t *testing.T) {
	sub := openSubRes(t, listen.Options{SubResources: &listen.SubResources{}, CanRead: func(_ context.Context, _ *listen.Request, u string) bool {
		if u == "file:///p/x" {
			panic(errors.New("policy bug"))
		}
		return true
	}}, "file:///p/")
	dst := []byte("prefix")
	out, ok, err := sub.AppendNotification(dst, listen.ResourceUpdated("file:///p/x"))
	assert.False(t, ok)
	require.Error(t, err)
	assert.Equal(t, "prefix", string(out))
}

// Open hands the server's sub-resource rule to any Source, in the request:
// a source that selects resource updates itself sees it, with no context
// value and no setting of its own.
func TestSourceSeesTheSubResourceRule(t *testing.T) {
	rule := &listen.SubResources{}
	for _, tc := range []struct {
		name string
		rule *listen.SubResources
	}{{"with a rule", rule}, {"without", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			var seen *listen.SubResources
			inner := newTestSource()
			src := listentest.SourceFunc(func(ctx context.Context, req *listen.Request, f listen.Filter) (listen.Filter, listen.Stream, error) {
				seen = req.SubResources
				return inner.Open(ctx, req, f)
			})
			opts := &listen.Options{Capabilities: listen.Capabilities{ResourcesSubscribe: true}, SubResources: tc.rule}
			sub, err := listen.Open(context.Background(), src, subResRequest("s", "file:///p/"), opts)
			require.NoError(t, err)
			defer sub.Close(nil)
			assert.Same(t, tc.rule, seen)
		})
	}
}

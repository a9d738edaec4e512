package streamhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/testkit"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// subID returns a message's _meta subscription id, as its JSON token.
func subID(t testing.TB, m map[string]any, in string) string {
	t.Helper()
	obj, ok := m[in].(map[string]any)
	require.True(t, ok, "%s: %v", in, m)
	meta, ok := obj["_meta"].(map[string]any)
	require.True(t, ok, "%s._meta: %v", in, m)
	b, err := json.Marshal(meta[spec.MetaSubscriptionID])
	require.NoError(t, err)
	return string(b)
}

// The whole life of a stream: headers, the ack first, one SSE event per
// message, one Next per written or dropped event, the completion result,
// the end of the response, and the close reasons.
func TestStreamLifecycle(t *testing.T) {
	e := newEnv(t, nil, &config{
		Listen: listen.Options{
			Capabilities: listen.Capabilities{
				ToolsListChanged:   true,
				ResourcesSubscribe: true,
			},
			ServerInfo: listen.Implementation{Name: "srv", Version: "1.2.3"},
		},
		Authenticate: func(r *http.Request) (any, error) { return "alice", nil },
	}, envConfig{})

	hdr := listenHeaders()
	hdr.Set("Last-Event-ID", "41")
	hdr.Set("Mcp-Session-Id", "session-1")
	resp := e.do(t, http.MethodPost, listenBody(`"listen-1"`,
		`{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["test://a"]}`), hdr)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
	assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
	assert.Empty(t, resp.Header.Values("Content-Length"))
	assert.EqualValues(t, -1, resp.ContentLength)
	assert.Empty(t, resp.Header.Values("Mcp-Session-Id"), "session ids are never echoed")
	assert.Empty(t, resp.Header.Values("Last-Event-ID"))
	s := newSSE(resp)

	// The acknowledgement is the first message, with the narrowed filter.
	ack := s.message(t)
	assert.Equal(t, spec.MethodAcknowledged, ack["method"])
	assert.NotContains(t, ack, "id")
	assert.Equal(t, `"listen-1"`, subID(t, ack, "params"))
	assert.Equal(t, jsonOf(t, `{"toolsListChanged":true,"resourceSubscriptions":["test://a"]}`),
		ack["params"].(map[string]any)["notifications"])

	st := streamOf(t, e.src, "listen-1")
	assert.Equal(t, streamhttp.TransportKind, st.Transport)
	assert.Equal(t, "alice", st.Auth, "Authenticate's result reaches Source.Open")
	assert.Equal(t, "listen-1", recv(t, e.opens, "OnOpen"))
	pulled(t, st) // the first Next follows the ack

	st.Send(listen.ToolsListChanged())
	m := s.message(t)
	assert.Equal(t, spec.MethodToolsListChanged, m["method"])
	assert.Equal(t, `"listen-1"`, subID(t, m, "params"))
	pulled(t, st)

	st.Send(listen.ResourceUpdated("test://other")) // not watched: dropped
	pulled(t, st)
	st.Send(listen.ResourceUpdated("test://a"))
	m = s.message(t)
	assert.Equal(t, spec.MethodResourceUpdated, m["method"])
	assert.Equal(t, "test://a", m["params"].(map[string]any)["uri"])
	pulled(t, st)

	st.End()
	done := s.message(t)
	assert.Equal(t, jsonOf(t, `{"jsonrpc":"2.0","id":"listen-1","result":{"resultType":"complete","_meta":{`+
		`"io.modelcontextprotocol/subscriptionId":"listen-1",`+
		`"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.2.3"}}}}`), any(done))
	s.end(t)

	assert.ErrorIs(t, reasonOf(t, st), listen.ErrComplete)
	c := recv(t, e.closes, "OnClose")
	assert.Equal(t, "listen-1", c.id)
	assert.ErrorIs(t, c.reason, listen.ErrComplete)
	stats := e.h.Server().Stats() // counted before OnClose ran
	assert.Equal(t, listen.Stats{Active: 0, Opened: 1, Closed: 1}, stats)
}

// An integer id is echoed as an integer everywhere.
func TestIntegerID(t *testing.T) {
	e := newEnv(t, nil, nil, envConfig{})
	s := e.listen(t, `42`, `{"promptsListChanged":true}`)
	assert.Equal(t, `42`, subID(t, s.message(t), "params"))
	st := streamOf(t, e.src, "42")
	st.Send(listen.PromptsListChanged())
	assert.Equal(t, `42`, subID(t, s.message(t), "params"))
	st.End()
	done := s.message(t)
	assert.Equal(t, json.Number("42"), done["id"])
	assert.Equal(t, `42`, subID(t, done, "result"))
	s.end(t)
}

// CanRead leaves unreadable URIs out of the acknowledgement, keeping order.
func TestCanReadNarrowsResources(t *testing.T) {
	e := newEnv(t, nil, &config{
		Listen: listen.Options{
			Capabilities: caps(),
			CanRead: func(ctx context.Context, req *listen.Request, uri string) bool {
				return uri != "test://static/data"
			},
		},
	}, envConfig{})
	s := e.listen(t, `"r"`, `{"resourceSubscriptions":["test://static/readme","test://static/data","test://unregistered/one"]}`)
	ack := s.message(t)
	assert.Equal(t, jsonOf(t, `{"resourceSubscriptions":["test://static/readme","test://unregistered/one"]}`),
		ack["params"].(map[string]any)["notifications"])
	st := streamOf(t, e.src, "r")
	assert.Equal(t, jsonOf(t, `["test://static/readme","test://unregistered/one"]`),
		jsonOf(t, string(mustJSON(t, st.Supported[spec.KeyResourceSubscriptions]))))
	st.End()
	s.message(t)
	s.end(t)
}

// A source failure ends the stream with the failure error frame.
func TestSourceFailure(t *testing.T) {
	e := newEnv(t, nil, nil, envConfig{})
	s := e.listen(t, `"f"`, `{"toolsListChanged":true}`)
	s.message(t)
	st := streamOf(t, e.src, "f")
	boom := errors.New("feed broke")
	st.Fail(boom)
	m := s.message(t)
	assert.Equal(t, jsonOf(t, `{"jsonrpc":"2.0","id":"f","error":{"code":-32603,"message":"Subscription source failed"}}`), any(m))
	s.end(t)
	reason := reasonOf(t, st)
	assert.ErrorIs(t, reason, listen.ErrFailed)
	assert.ErrorIs(t, reason, boom)
	c := recv(t, e.closes, "OnClose")
	assert.ErrorIs(t, c.reason, listen.ErrFailed)
}

// A client that goes away cancels its listen: the source is closed as
// Disconnected and no result is produced.
func TestClientDisconnect(t *testing.T) {
	for _, tt := range []struct {
		name  string
		http2 bool
		// cancel ends the client side: close the body, or cancel the request.
		viaContext bool
	}{
		{name: "body closed"},
		{name: "request cancelled", viaContext: true},
		{name: "HTTP/2 body closed", http2: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil, nil, envConfig{http2: tt.http2})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.ts.URL, strings.NewReader(listenBody(`"d"`, `{"toolsListChanged":true}`)))
			require.NoError(t, err)
			req.Header = listenHeaders()
			resp, err := e.client.Do(req)
			require.NoError(t, err)
			if tt.http2 {
				require.Equal(t, 2, resp.ProtoMajor)
			}
			s := newSSE(resp)
			s.message(t)
			st := streamOf(t, e.src, "d")
			pulled(t, st)
			if tt.viaContext {
				cancel()
			}
			resp.Body.Close()

			reason := reasonOf(t, st)
			assert.ErrorIs(t, reason, listen.ErrDisconnected)
			assert.Equal(t, "disconnected", listen.Classify(reason))
			c := recv(t, e.closes, "OnClose")
			assert.ErrorIs(t, c.reason, listen.ErrDisconnected)
			// Events after the disconnect go nowhere and nothing is pulled.
			st.Send(listen.ToolsListChanged())
			assert.Equal(t, listen.Stats{Opened: 1, Closed: 1}, e.h.Server().Stats(), "counted before OnClose ran")
		})
	}
}

// An idle stream gets keep-alive comments.
func TestKeepAlive(t *testing.T) {
	e := newEnv(t, nil, &config{KeepAlive: 5e6 /* 5ms */}, envConfig{})
	s := e.listen(t, `"k"`, `{"toolsListChanged":true}`)
	s.message(t)
	for range 3 {
		f, err := s.frame()
		require.NoError(t, err)
		assert.True(t, f.IsComment)
		assert.Equal(t, "keep-alive", f.Comment)
	}
	st := streamOf(t, e.src, "k")
	st.Send(listen.ToolsListChanged())
	assert.Equal(t, spec.MethodToolsListChanged, s.message(t)["method"])
	st.End()
	s.message(t)
	s.end(t)
}

// The write deadline bounds writes only: a stream idle for longer than the
// write timeout stays usable, on HTTP/1.1 and on HTTP/2 (where an expired
// stream deadline would reset the stream).
func TestIdleLongerThanWriteTimeout(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		name := "HTTP/1.1"
		if h2 {
			name = "HTTP/2"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil, &config{
				// Generous enough that a write completes within the deadline
				// on a loaded machine; each idle gap outlives a deadline.
				WriteTimeout: 30e6,  // 30ms
				KeepAlive:    100e6, // 100ms
			}, envConfig{http2: h2})
			resp := e.do(t, http.MethodPost, listenBody(`"i"`, `{"toolsListChanged":true}`), listenHeaders())
			require.Equal(t, http.StatusOK, resp.StatusCode)
			if h2 {
				require.Equal(t, 2, resp.ProtoMajor)
			} else {
				assert.True(t, resp.Close, "Connection: close")
			}
			s := newSSE(resp)
			s.message(t)
			for range 3 {
				f, err := s.frame()
				require.NoError(t, err)
				require.True(t, f.IsComment)
			}
			st := streamOf(t, e.src, "i")
			st.Send(listen.ToolsListChanged())
			assert.Equal(t, spec.MethodToolsListChanged, s.message(t)["method"])
			st.End()
			s.message(t)
			s.end(t)
			assert.ErrorIs(t, reasonOf(t, st), listen.ErrComplete)
		})
	}
}

// Two concurrent listens get independent acks and tags.
func TestConcurrentStreams(t *testing.T) {
	e := newEnv(t, nil, nil, envConfig{})
	a := e.listen(t, `"a"`, `{"toolsListChanged":true}`)
	b := e.listen(t, `"b"`, `{"toolsListChanged":true,"promptsListChanged":true}`)
	assert.Equal(t, `"a"`, subID(t, a.message(t), "params"))
	assert.Equal(t, `"b"`, subID(t, b.message(t), "params"))
	sa, sb := streamOf(t, e.src, "a"), streamOf(t, e.src, "b")
	sb.Send(listen.PromptsListChanged())
	sa.Send(listen.ToolsListChanged())
	ma, mb := a.message(t), b.message(t)
	assert.Equal(t, spec.MethodToolsListChanged, ma["method"])
	assert.Equal(t, `"a"`, subID(t, ma, "params"))
	assert.Equal(t, spec.MethodPromptsListChanged, mb["method"])
	assert.Equal(t, `"b"`, subID(t, mb, "params"))
	assert.Equal(t, 2, e.h.Server().Stats().Active)
	sa.End()
	sb.End()
	assert.Equal(t, `"a"`, subID(t, a.message(t), "result"))
	assert.Equal(t, `"b"`, subID(t, b.message(t), "result"))
	a.end(t)
	b.end(t)
}

// Options are copied by New: later changes to the caller's value, even to
// its capabilities map, have no effect.
func TestOptionsCopied(t *testing.T) {
	src := listentest.NewSource()
	c := caps()
	opts := &config{Listen: listen.Options{Capabilities: c}}
	e := newEnv(t, src, opts, envConfig{})
	c.Extensions = map[string]any{"x": map[string]any{}}
	opts.Listen.Capabilities = listen.Capabilities{}
	s := e.listen(t, `"c"`, `{"toolsListChanged":true}`)
	ack := s.message(t)
	assert.Equal(t, jsonOf(t, `{"toolsListChanged":true}`), ack["params"].(map[string]any)["notifications"])
	streamOf(t, e.src, "c").End()
	s.message(t)
	s.end(t)
}

// An OnOpen hook that panics is recovered and logged, as on every transport:
// the stream is served as if the hook had returned (before, the panic went
// up to net/http and the stream was abandoned).
func TestPanickingOnOpen(t *testing.T) {
	var logged testkit.LogBuffer
	e := newEnv(t, nil, &config{
		OnOpen: func(*listen.Subscription) { panic("OnOpen failed") },
		Logger: slog.New(slog.NewTextHandler(&logged, nil)),
	}, envConfig{})
	s := e.listen(t, `"p"`, `{"toolsListChanged":true}`)
	assert.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])
	assert.Contains(t, logged.String(), `msg="listen: OnOpen panicked" panic="OnOpen failed"`)
	streamOf(t, e.src, "p").End()
	assert.Equal(t, "complete", s.message(t)["result"].(map[string]any)["resultType"])
	s.end(t)
	recv(t, e.closes, "OnClose")
	assert.Equal(t, listen.Stats{Opened: 1, Closed: 1}, e.h.Server().Stats())
	require.NoError(t, e.h.Shutdown(context.Background()))
}

// An open stream does not retain a large unused request param: once the
// subscription is open, nothing holds the request's params.
func TestLargeParamNotRetained(t *testing.T) {
	src := listentest.NewSource()
	var params weak.Pointer[byte]
	src.BeforeOpen = func(_ context.Context, req *listen.Request) error {
		params = weak.Make(&req.Params[0])
		return nil
	}
	e := newEnv(t, src, &config{MaxBodyBytes: 4 << 20}, envConfig{})

	pad := strings.Repeat("x", 1900_000)
	body := `{"jsonrpc":"2.0","id":"big","method":"subscriptions/listen","params":{"pad":"` + pad + `",` +
		`"notifications":{"toolsListChanged":true},` + goodMeta + `}}`
	resp := e.do(t, http.MethodPost, body, listenHeaders())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := newSSE(resp)
	s.message(t)
	st := streamOf(t, e.src, "big")
	pulled(t, st) // the stream is being served
	for i := 0; i < 10 && params.Value() != nil; i++ {
		runtime.GC()
	}
	assert.Nil(t, params.Value(), "the request's params are still reachable")

	st.Send(listen.ToolsListChanged())
	assert.Equal(t, spec.MethodToolsListChanged, s.message(t)["method"])
	st.End()
	s.message(t)
	s.end(t)
}

package streamhttp_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/testkit"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// routeMark answers 204 with X-Routed: name, and records the body it read.
func routeMark(name string, bodies chan<- string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bodies != nil {
			select {
			case bodies <- string(b):
			default: // a test that expects none checks the channel is empty
			}
		}
		w.Header().Set("X-Routed", name)
		w.WriteHeader(http.StatusNoContent)
	})
}

// A POST is a listen by its body too: whatever its Mcp-Method header
// (missing, another method, another case), a body whose method is
// subscriptions/listen, alone or in a batch, goes to the listen handler,
// never to the other one; the other handler reads the very bytes the client
// sent. Before, Front routed on the header alone, and a listen without it
// reached the other handler (the go-sdk's own listen code).
func TestFrontRoutesListenBodies(t *testing.T) {
	listenMsg := listenBody("1", `{"toolsListChanged":true}`)
	tests := []struct {
		name   string
		method string
		header http.Header
		body   string
		want   string
	}{
		{"listen body without Mcp-Method", http.MethodPost, nil, listenMsg, "listen"},
		{"listen body with another Mcp-Method", http.MethodPost, http.Header{"Mcp-Method": {"tools/list"}}, listenMsg, "listen"},
		{"listen body with a wrong-case Mcp-Method", http.MethodPost, http.Header{"Mcp-Method": {"Subscriptions/Listen"}}, listenMsg, "listen"},
		{"listen notification", http.MethodPost, nil, `{"jsonrpc":"2.0","method":"subscriptions/listen"}`, "listen"},
		{"a batch holding a listen", http.MethodPost, nil, `[{"jsonrpc":"2.0","id":1,"method":"ping"},` + listenMsg + `]`, "listen"},
		{"tools/list", http.MethodPost, http.Header{"Mcp-Method": {"tools/list"}}, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "other"},
		{"a batch without a listen", http.MethodPost, nil, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "other"},
		{"a batch holding an escaped listen", http.MethodPost, nil, `[1,{"jsonrpc":"2.0","id":1,"\u006dethod":"subscriptions\/listen"}]`, "listen"},
		{"a batch holding an invalid listen", http.MethodPost, nil, `[{"id":1,"method":"subscriptions/listen"}]`, "other"},
		{"a malformed batch naming a listen", http.MethodPost, nil, `[` + listenMsg, "other"},
		{"listen named in a tool argument", http.MethodPost, nil,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"method":"subscriptions/listen"}}}`, "other"},
		{"malformed JSON", http.MethodPost, nil, `{"jsonrpc":`, "other"},
		{"a response", http.MethodPost, nil, `{"jsonrpc":"2.0","id":1,"result":{}}`, "other"},
		{"GET with a listen body", http.MethodGet, nil, listenMsg, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bodies := make(chan string, 1)
			f := streamhttp.Front(routeMark("listen", bodies), routeMark("other", bodies))
			r := httptest.NewRequest(tt.method, "/mcp", strings.NewReader(tt.body))
			for k, vs := range tt.header {
				r.Header[k] = vs
			}
			w := httptest.NewRecorder()
			f.ServeHTTP(w, r)
			assert.Equal(t, tt.want, w.Header().Get("X-Routed"))
			assert.Equal(t, tt.body, <-bodies, "the handler reads the body as sent")
		})
	}

	// With a real listen Handler, a listen without its headers is refused by
	// the listen Handler (RequireHeaders: -32020) and one with them opens.
	src := listentest.NewSource()
	h := newHandler(t, src, config{Listen: listen.Options{Capabilities: caps()}, RequireHeaders: true})
	other := make(chan string, 1)
	f := streamhttp.Front(h, routeMark("other", other))
	for _, hdr := range []http.Header{
		{"Mcp-Protocol-Version": {spec.ProtocolVersion}},
		{"Mcp-Protocol-Version": {spec.ProtocolVersion}, "Mcp-Method": {"tools/list"}},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(listenMsg))
		for k, vs := range hdr {
			r.Header[k] = vs
		}
		w := httptest.NewRecorder()
		f.ServeHTTP(w, r)
		assert.Equal(t, http.StatusBadRequest, w.Code)
		assert.Contains(t, w.Body.String(), `"code":-32020`)
	}
	assert.Empty(t, other)
	assert.Empty(t, src.Streams())
}

// FrontMessage gives the handler behind Front the message Front parsed.
func TestFrontMessage(t *testing.T) {
	type seen struct {
		m  jsonrpc.Message
		ok bool
	}
	got := make(chan seen, 1)
	f := streamhttp.Front(routeMark("listen", nil), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m, ok := streamhttp.FrontMessage(r)
		got <- seen{m, ok}
	}))
	f.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"c"}}`)))
	s := <-got
	require.True(t, s.ok)
	assert.Equal(t, "tools/list", s.m.Method)
	assert.Equal(t, "7", s.m.ID.Raw())
	assert.JSONEq(t, `{"cursor":"c"}`, string(s.m.Params))

	f.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`[1]`)))
	assert.False(t, (<-got).ok, "a batch is not one message")
	f.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/mcp", nil))
	assert.False(t, (<-got).ok, "no body")
	_, ok := streamhttp.FrontMessage(httptest.NewRequest(http.MethodPost, "/mcp", nil))
	assert.False(t, ok, "not served by Front")
}

// Every body Front reads is bounded by MaxBodyBytes: an announced length
// over it is refused at once, and a chunked body when it passes it, with 413
// and the listen path's -32600 message; the other handler never sees it.
// Before, the other handler got the body unbounded.
func TestFrontMaxBodyBytes(t *testing.T) {
	var reported []error
	h := newHandler(t, listentest.NewSource(), config{
		OnRefuse: func(_ *listen.Request, err error) { reported = append(reported, err) },
	})
	other := make(chan string, 1)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":"` + strings.Repeat("a", 100) + `"}}}`
	f := streamhttp.FrontWith(h, routeMark("other", other), streamhttp.FrontOptions{MaxBodyBytes: int64(len(body))})
	e := newEnv(t, nil, nil, envConfig{wrap: func(http.Handler) http.Handler { return f }})

	resp := e.do(t, http.MethodPost, body, http.Header{"Mcp-Method": {"tools/call"}})
	assert.Equal(t, http.StatusNoContent, resp.StatusCode, "a body of exactly MaxBodyBytes passes")
	assert.Equal(t, body, <-other)

	for _, chunked := range []bool{false, true} {
		reported = nil
		req, err := http.NewRequest(http.MethodPost, e.ts.URL, strings.NewReader(body+" "))
		require.NoError(t, err)
		if chunked {
			req.Body = io.NopCloser(strings.NewReader(body + " ")) // unknown length
			req.ContentLength = -1
		}
		resp, err := e.client.Do(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		b := readError(t, resp)
		resp.Body.Close()
		assert.Equal(t, jsonrpc.CodeInvalidRequest, b.Error.Code)
		assert.Equal(t, streamhttp.MsgBodyTooLarge, b.Error.Message)
		require.Len(t, reported, 1)
		assert.Equal(t, streamhttp.MsgBodyTooLarge, jsonrpc.AsError(reported[0], "").Message)
	}
	assert.Empty(t, other)
	assert.Panics(t, func() { streamhttp.FrontWith(h, nil, streamhttp.FrontOptions{MaxBodyBytes: -1}) })
	assert.Panics(t, func() { streamhttp.FrontWith(h, nil, streamhttp.FrontOptions{ReadTimeout: -1}) })
}

// newPipeFront serves f on a PipeListener (see newPipeServer) and returns
// the listener, a Transport dialling it and a function that stops the
// server.
func newPipeFront(t *testing.T, f http.Handler, h2 bool) (*testkit.PipeListener, *http.Transport, func()) {
	t.Helper()
	l := testkit.NewPipeListener()
	srv := &http.Server{Handler: f}
	tr := &http.Transport{DialContext: l.Dial}
	if h2 {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetUnencryptedHTTP2(true)
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	return l, tr, func() {
		tr.CloseIdleConnections()
		require.NoError(t, srv.Close())
		assert.ErrorIs(t, <-served, http.ErrServerClosed)
	}
}

// A request for the other handler whose body does not arrive in time (one
// byte short, one byte per second, chunked without end) is cut at
// ReadTimeout with 408 and the listen path's message, over HTTP/1.1 and
// HTTP/2, and never reaches the other handler; on HTTP/1.1 the connection
// is closed. Before, such bodies were held as long as their clients kept
// them open. A request the origin check refuses is answered 403 at once on
// HTTP/2; on HTTP/1.1 net/http first discards its unread body, within the
// same deadline (before, the deadline was set after the check, and a slow
// body held the connection until its last byte, 46 s here, or until
// net/http's 256 KiB discard limit: 72 h at a byte a second).
func TestFrontReadTimeout(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	tests := []struct {
		name     string
		origin   string
		length   int64
		n        int
		interval time.Duration
		status   int
		message  string
	}{
		{"one byte short", "", int64(len(body)), len(body) - 1, 0, http.StatusRequestTimeout, streamhttp.MsgBodyTimeout},
		{"one byte per second", "", int64(len(body)), len(body), time.Second, http.StatusRequestTimeout, streamhttp.MsgBodyTimeout},
		{"endless body of unknown length", "", -1, -1, time.Second, http.StatusRequestTimeout, streamhttp.MsgBodyTimeout},
		{"refused by the origin check, slow body", "https://evil.example", int64(len(body)), len(body), time.Second,
			http.StatusForbidden, streamhttp.MsgForbidden},
		{"refused by the origin check, endless body", "https://evil.example", -1, -1, time.Second,
			http.StatusForbidden, streamhttp.MsgForbidden},
	}
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		for _, tt := range tests {
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					other := make(chan string, 1)
					h := newHandler(t, listentest.NewSource(), config{})
					l, tr, stopServer := newPipeFront(t, streamhttp.Front(h, routeMark("other", other)), proto == "HTTP/2")
					stop := make(chan struct{})
					ab := &attackBody{b: body, n: tt.n, interval: tt.interval, stop: stop}
					hdr := http.Header{"Content-Type": {"application/json"}, "Mcp-Method": {"tools/list"}}
					if tt.origin != "" {
						hdr.Set("Origin", tt.origin)
					}
					start := time.Now()
					var resp *http.Response
					if proto == "HTTP/2" {
						req, err := http.NewRequest(http.MethodPost, "http://pipe/", ab)
						require.NoError(t, err)
						req.Header, req.ContentLength = hdr, tt.length
						resp, err = (&http.Client{Transport: tr}).Do(req)
						require.NoError(t, err)
					} else {
						conn, err := l.Dial(context.Background(), "", "")
						require.NoError(t, err)
						defer conn.Close()
						go sendHTTP1(conn, http.MethodPost, hdr, tt.length, ab)
						rd := bufio.NewReader(conn)
						resp, err = http.ReadResponse(rd, nil)
						require.NoError(t, err)
						defer func() {
							_, err := rd.ReadByte()
							assert.ErrorIs(t, err, io.EOF, "the connection is closed")
						}()
					}
					if proto == "HTTP/2" && tt.status != http.StatusRequestTimeout {
						assert.Zero(t, time.Since(start), "refused before its body was read: answered at once")
					} else {
						assert.Equal(t, streamhttp.DefaultReadTimeout, time.Since(start), "cut at the read deadline")
					}
					assert.Equal(t, tt.status, resp.StatusCode)
					b := readError(t, resp)
					close(stop)
					resp.Body.Close()
					assert.Equal(t, jsonrpc.CodeInvalidRequest, b.Error.Code)
					assert.Equal(t, tt.message, b.Error.Message)
					assert.Empty(t, other)
					stopServer()
					synctest.Wait()
				})
			})
		}
	}
}

// The read deadline ends with the body: a GET stream of the other handler
// (no body: no deadline at all) and a tool call that answers long after
// ReadTimeout are never cut, over HTTP/1.1 and HTTP/2.
func TestFrontReadDeadlineEndsWithTheBody(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "HTTP/1.1", true: "HTTP/2"}[h2], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				slow := func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.ReadAll(r.Body)
					w.WriteHeader(http.StatusOK)
					for range 3 {
						time.Sleep(2 * streamhttp.DefaultReadTimeout) // a long tool call, or a quiet GET stream
						if _, err := io.WriteString(w, "tick\n"); err != nil {
							return
						}
						http.NewResponseController(w).Flush()
					}
				}
				h := newHandler(t, listentest.NewSource(), config{})
				_, tr, stopServer := newPipeFront(t, streamhttp.Front(h, http.HandlerFunc(slow)), h2)
				client := &http.Client{Transport: tr}
				for _, method := range []string{http.MethodGet, http.MethodPost} {
					var body io.Reader
					if method == http.MethodPost {
						body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)
					}
					req, err := http.NewRequest(method, "http://pipe/", body)
					require.NoError(t, err)
					resp, err := client.Do(req)
					require.NoError(t, err)
					got, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					require.NoError(t, err, method)
					assert.Equal(t, "tick\ntick\ntick\n", string(got), method)
				}
				stopServer()
				synctest.Wait()
			})
		})
	}
}

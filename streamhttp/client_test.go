package streamhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// closed is one OnClose call.
type closed struct {
	id     string
	reason error
}

// env is a Handler on a real loopback HTTP server, with a test Source.
type env struct {
	src    *listentest.Source
	h      *streamhttp.Handler
	ts     *httptest.Server
	client *http.Client
	// served receives once per ServeHTTP return. A taken-over stream
	// (HTTP/1.1) goes on after it: to wait for the end of a stream, wait
	// for its OnClose (its slot is free and Stats count it by then).
	served chan struct{}
	// opens and closes receive every OnOpen and OnClose call.
	opens  chan string
	closes chan closed
}

type envConfig struct {
	http2 bool
	// sendBuffer, if set, is the socket send buffer of accepted connections.
	sendBuffer int
	// wrap, if set, wraps the Handler (Front tests).
	wrap func(h http.Handler) http.Handler
	// errorLog, if set, is the server's http.Server.ErrorLog.
	errorLog *log.Logger
}

// caps advertises everything the core can narrow against.
func caps() listen.Capabilities {
	return listen.Capabilities{
		ToolsListChanged:     true,
		PromptsListChanged:   true,
		ResourcesListChanged: true, ResourcesSubscribe: true,
	}
}

func newEnv(t *testing.T, src *listentest.Source, opts *config, cfg envConfig) *env {
	t.Helper()
	if src == nil {
		src = listentest.NewSource()
	}
	return newEnvOn(t, src, opts, cfg)
}

// newEnvOn is newEnv on any Source (env.src is set when it is a
// *listentest.Source).
func newEnvOn(t *testing.T, source listen.Source, opts *config, cfg envConfig) *env {
	t.Helper()
	src, _ := source.(*listentest.Source)
	e := &env{
		src:    src,
		served: make(chan struct{}, 1024),
		opens:  make(chan string, 1024),
		closes: make(chan closed, 1024),
	}
	var o config
	if opts != nil {
		o = *opts
	}
	if reflect.ValueOf(o.Listen.Capabilities).IsZero() {
		o.Listen.Capabilities = caps()
	}
	userOpen, userClose := o.OnOpen, o.OnClose
	o.OnOpen = func(sub *listen.Subscription) {
		if userOpen != nil {
			userOpen(sub)
		}
		e.opens <- sub.ID().String()
	}
	o.OnClose = func(sub *listen.Subscription, reason error) {
		if userClose != nil {
			userClose(sub, reason)
		}
		e.closes <- closed{sub.ID().String(), reason}
	}
	e.h = newHandler(t, source, o)
	var handler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { e.served <- struct{}{} }()
		e.h.ServeHTTP(w, r)
	})
	if cfg.wrap != nil {
		handler = cfg.wrap(handler)
	}
	e.ts = httptest.NewUnstartedServer(handler)
	e.ts.Config.ErrorLog = cfg.errorLog
	if cfg.sendBuffer > 0 {
		e.ts.Listener = &bufListener{Listener: e.ts.Listener, send: cfg.sendBuffer}
	}
	if cfg.http2 {
		e.ts.EnableHTTP2 = true
		e.ts.StartTLS()
		e.client = e.ts.Client()
	} else {
		e.ts.Start()
		e.client = &http.Client{Transport: &http.Transport{}}
	}
	t.Cleanup(func() {
		e.ts.CloseClientConnections()
		e.ts.Close()
		e.client.CloseIdleConnections()
	})
	return e
}

// bufListener sets the send buffer of every accepted TCP connection.
type bufListener struct {
	net.Listener
	send int
}

func (l *bufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		_ = tc.SetWriteBuffer(l.send)
	}
	return c, err
}

// listenBody returns a listen request. id is a JSON token ("\"listen-1\"",
// "7"); filter is the notifications object.
func listenBody(id, filter string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{` +
		`"notifications":` + filter + `,` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1.0.0"}}}}`
}

// listenHeaders are the headers of a conforming listen POST.
func listenHeaders() http.Header {
	return http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {spec.ProtocolVersion},
		"Mcp-Method":           {spec.MethodListen},
	}
}

// do sends a request to the env's server. The request's context ends with
// the test (failsafe for stream reads).
func (e *env) do(t *testing.T, method, body string, hdr http.Header) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, e.ts.URL, strings.NewReader(body))
	require.NoError(t, err)
	for k, vs := range hdr {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = vs[0]
			continue
		}
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	resp, err := e.client.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// listen opens a listen with id and filter and checks it streams.
func (e *env) listen(t *testing.T, id, filter string) *sse {
	t.Helper()
	resp := e.do(t, http.MethodPost, listenBody(id, filter), listenHeaders())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return newSSE(resp)
}

// errorBody is a decoded JSON-RPC error response.
type errorBody struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// readError reads resp as a JSON-RPC error response.
func readError(t *testing.T, resp *http.Response) errorBody {
	t.Helper()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var b errorBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&b), "body %s", raw)
	require.Equal(t, "2.0", b.JSONRPC)
	return b
}

// sse reads a listen's SSE response with listentest.SSEReader; its
// methods fail the test where the reader returns an error.
type sse struct {
	*listentest.SSEReader
	resp *http.Response
}

func newSSE(resp *http.Response) *sse {
	return &sse{SSEReader: listentest.NewSSEReader(resp.Body), resp: resp}
}

// frame reads the next event or comment, as Next does, and fails on what
// the Handler never sends: an event other than "message", one with an id
// or retry field, or data of several lines.
func (s *sse) frame() (listentest.SSEEvent, error) {
	ev, err := s.Next()
	if err != nil || ev.IsComment {
		return ev, err
	}
	if ev != (listentest.SSEEvent{Event: "message", Data: ev.Data}) || strings.Contains(ev.Data, "\n") {
		return ev, fmt.Errorf("not a message the Handler sends: %+v", ev)
	}
	return ev, nil
}

// event reads the next message event, skipping comments.
func (s *sse) event(t testing.TB) listentest.SSEEvent {
	t.Helper()
	for {
		ev, err := s.frame()
		require.NoError(t, err)
		if !ev.IsComment {
			return ev
		}
	}
}

// message reads the next JSON-RPC message, skipping comments.
func (s *sse) message(t testing.TB) map[string]any {
	t.Helper()
	m, ok := jsonOf(t, s.event(t).Data).(map[string]any)
	require.True(t, ok, "not a JSON object")
	return m
}

// end checks that the response ends cleanly, skipping comments.
func (s *sse) end(t testing.TB) {
	t.Helper()
	for {
		ev, err := s.frame()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		require.True(t, ev.IsComment, "want the end of the stream, got %+v", ev)
	}
}

// jsonOf decodes a JSON document with json.Number numbers.
func jsonOf(t testing.TB, s string) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&v))
	return v
}

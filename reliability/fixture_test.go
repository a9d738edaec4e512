package reliability_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
	"github.com/mcplisten/listen/streamhttp"
)

// allCaps advertises everything the core narrows against.
func allCaps() listen.Capabilities {
	return listen.Capabilities{
		ToolsListChanged:     true,
		PromptsListChanged:   true,
		ResourcesListChanged: true, ResourcesSubscribe: true,
	}
}

// Limits shared by both transports in the fault matrix.
const (
	maxRequestBytes = 64 << 10
	// releaseTimeout bounds how long a transport waits for a Next that
	// ignores Close.
	releaseTimeout = 100 * time.Millisecond
	// bigWrite is the size from which a write counts as "large".
	bigWrite = 1 << 20
)

func listenOptions() listen.Options {
	return listen.Options{
		Capabilities:   allCaps(),
		ServerInfo:     listen.Implementation{Name: "reliability", Version: "1.0.0"},
		ReleaseTimeout: releaseTimeout,
	}
}

// ending is how a client ends a listen.
type ending int

const (
	// endDisconnect: the HTTP client closes its connection.
	endDisconnect ending = iota
	// endCancel: the stdio client sends notifications/cancelled.
	endCancel
	// endEOF: the stdio client closes the server's input.
	endEOF
)

// class is the close class the ending gives the subscription.
func (e ending) class() string {
	if e == endCancel {
		return "cancelled"
	}
	return "disconnected"
}

// fixture is one server on one transport with its client side.
type fixture interface {
	name() string
	src() *faultSource
	ending() ending
	// gate returns a gate released at teardown at the latest.
	gate() *gate
	// listen sends a listen request and returns its client stream at once.
	listen(t testing.TB, id, filter string) *clientStream
	// request sends a raw request and returns its one reply, read from the
	// stdio messages keyed key (the echoed id token, or "" for none); the
	// HTTP status, or 0 on stdio.
	request(t testing.TB, body, key string) (int, msg)
	// abort ends the listen from the client's side and returns once the
	// server has seen it (as far as the transport lets a client tell).
	abort(t testing.TB, cs *clientStream)
	// holdOnOpen makes the transport's OnOpen hook for id block until g is
	// released; entered is closed when it blocks.
	holdOnOpen(id string) (entered <-chan struct{}, g *gate)
	// holdFirstWrite makes the next write of id's response (stdio: of the
	// connection) block until g is released; started is closed when it
	// blocks.
	holdFirstWrite(id string) (started <-chan struct{}, g *gate)
	// probe proves the server still serves: a new listen gets its
	// acknowledgement, an event and its completion.
	probe(t testing.TB)
	// shutdown drains the server; probeRefused checks it refuses listens.
	shutdown(t testing.TB)
	// beginDrain starts draining and returns once the drain has begun;
	// wait waits for the server to have drained.
	beginDrain(t testing.TB) (wait func())
	probeRefused(t testing.TB)
	// hookReasons returns the OnClose reasons of id; onClose waits for one.
	hookReasons(id string) []error
	onClose(t testing.TB, id string) error
	// transcript returns what the server wrote for id (complete after
	// teardown).
	transcript(t testing.TB, id string) []msg
	// teardown releases every gate, ends every client and stops the server
	// (idempotent).
	teardown(t testing.TB)
}

// fixtureKind names a transport variant and builds its fixtures.
type fixtureKind struct {
	name string
	make func(t testing.TB) fixture
}

// fixtureKinds are the transport variants the matrix runs over: HTTP/1.1
// and HTTP/2 (the client closes its connection or stream), and stdio on
// io.Pipe and os.Pipe, with each of its client endings.
func fixtureKinds() []fixtureKind {
	return []fixtureKind{
		{"http", func(t testing.TB) fixture { return newHTTPFixture(t, 0) }},
		{"http2", func(t testing.TB) fixture { return newHTTP2Fixture(t) }},
		{"stdio-iopipe-cancel", func(t testing.TB) fixture { return newStdioFixture(t, false, endCancel) }},
		{"stdio-iopipe-eof", func(t testing.TB) fixture { return newStdioFixture(t, false, endEOF) }},
		{"stdio-ospipe-cancel", func(t testing.TB) fixture { return newStdioFixture(t, true, endCancel) }},
		{"stdio-ospipe-eof", func(t testing.TB) fixture { return newStdioFixture(t, true, endEOF) }},
	}
}

// runCase runs body on a new fixture and then checks, whatever happened:
// every stream the source opened was closed exactly once, each OnClose
// reason has the class of its stream's close, and no goroutine is left.
func runCase(t *testing.T, kind fixtureKind, body func(t *testing.T, fx fixture)) {
	ignore := goleak.IgnoreCurrent()
	fx := kind.make(t)
	defer func() {
		fx.teardown(t)
		goleak.VerifyNone(t, ignore)     // also waits for the workers to leave their Nexts
		classes := map[string][]string{} // by id: the close classes of its streams
		for _, st := range fx.src().all() {
			assert.EqualValues(t, 1, st.closes.Load(), "closes of stream %s", st.id)
			reason := st.reasonAfterClose(t)
			classes[st.id] = append(classes[st.id], listen.Classify(reason))
			assert.Equal(t, st.nextCalls.Load(), st.nextsOut.Load(), "a Next of %s never returned", st.id)
		}
		for id, cs := range classes {
			// Each OnClose matches the close of one stream of its id (ids
			// may be reused once free).
			left := slices.Clone(cs)
			for _, h := range fx.hookReasons(id) {
				i := slices.Index(left, listen.Classify(h))
				if !assert.GreaterOrEqual(t, i, 0, "OnClose reason %v of %s matches no stream close %v", h, id, cs) {
					continue
				}
				left = slices.Delete(left, i, i+1)
			}
		}
	}()
	body(t, fx)
}

// wantTerminal checks, after teardown, the terminal messages the server
// wrote for id: kind "none", "complete", "failure" or "error" (exactly one,
// and nothing after it).
func wantTerminal(t testing.TB, fx fixture, id, kind string) {
	t.Helper()
	msgs := fx.transcript(t, id)
	var terms []msg
	for i, m := range msgs {
		if m.terminal() {
			terms = append(terms, m)
			assert.Equal(t, len(msgs)-1, i, "messages after the terminal of %s: %v", id, msgs[i+1:])
		}
	}
	if kind == "none" {
		assert.Empty(t, terms, "terminal messages of %s", id)
		return
	}
	if !assert.Len(t, terms, 1, "terminal messages of %s: %v", id, msgs) {
		return
	}
	m := terms[0]
	switch kind {
	case "complete":
		assert.True(t, m.completion(), "want a completion: %s", m)
	case "failure":
		e := m.wireErr()
		if assert.NotNil(t, e, "want a failure: %s", m) {
			assert.Equal(t, jsonrpc.CodeInternalError, e.Code)
			assert.Equal(t, core.SourceFailed, e.Message)
		}
	case "error":
		assert.NotNil(t, m.wireErr(), "want an error response: %s", m)
	}
}

// wantClass asserts the close class of st (waiting for its close).
func wantClass(t testing.TB, st *faultStream, class string) error {
	t.Helper()
	reason := st.reasonAfterClose(t)
	assert.Equal(t, class, listen.Classify(reason), "close reason of %s: %v", st.id, reason)
	return reason
}

// probeOn runs the probe listen through listenFn.
func probeOn(t testing.TB, fx fixture, id string, listenFn func(t testing.TB, id, filter string) *clientStream) {
	t.Helper()
	fx.src().script(id, plan{events: []listen.Event{listen.ToolsListChanged()}, end: listen.ErrClosed})
	cs := listenFn(t, id, `{"toolsListChanged":true}`)
	requireAck(t, cs.recv(t), id)
	requireNotification(t, cs.recv(t), id, spec.MethodToolsListChanged)
	requireCompletion(t, cs.recv(t), id)
	cs.end(t)
	wantClass(t, fx.src().stream(t, id), "complete")
}

// clientStream is the client side of one listen.
type clientStream struct {
	id   string
	msgs chan msg
	// HTTP only.
	status chan int
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// recv returns the stream's next message.
func (cs *clientStream) recv(t testing.TB) msg {
	t.Helper()
	m, ok := recv2(t, cs.msgs, "a message of "+cs.id)
	if !ok {
		t.Fatalf("stream %s ended: %v", cs.id, cs.endErr())
	}
	return m
}

func recv2[T any](t testing.TB, ch <-chan T, what string) (T, bool) {
	t.Helper()
	timer := time.NewTimer(failsafe)
	defer timer.Stop()
	select {
	case v, ok := <-ch:
		return v, ok
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// end checks that an HTTP response ended cleanly after the terminal
// message (a no-op on stdio, where the connection goes on).
func (cs *clientStream) end(t testing.TB) {
	t.Helper()
	if cs.done == nil {
		return
	}
	m, ok := recv2(t, cs.msgs, "the end of "+cs.id)
	require.False(t, ok, "a message after the terminal of %s: %s", cs.id, m)
	require.ErrorIs(t, cs.endErr(), io.EOF)
}

func (cs *clientStream) endErr() error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.err
}

func (cs *clientStream) setErr(err error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.err == nil {
		cs.err = err
	}
}

// hooks records the OnOpen gates and OnClose reasons of a fixture.
type hooks struct {
	closedCh keyed[error] // every OnClose reason, by id
	mu       sync.Mutex
	gates    []*gate
	onOpen   map[string]*openHold
	closes   map[string][]error
}

type openHold struct {
	entered chan struct{}
	g       *gate
}

func (h *hooks) gate() *gate {
	g := newGate()
	h.mu.Lock()
	h.gates = append(h.gates, g)
	h.mu.Unlock()
	return g
}

func (h *hooks) releaseAll() {
	h.mu.Lock()
	gates := h.gates
	h.mu.Unlock()
	for _, g := range gates {
		g.release()
	}
}

func (h *hooks) holdOnOpen(id string) (<-chan struct{}, *gate) {
	hold := &openHold{entered: make(chan struct{}), g: h.gate()}
	h.mu.Lock()
	if h.onOpen == nil {
		h.onOpen = make(map[string]*openHold)
	}
	h.onOpen[id] = hold
	h.mu.Unlock()
	return hold.entered, hold.g
}

func (h *hooks) opened(sub *listen.Subscription) {
	h.mu.Lock()
	hold := h.onOpen[sub.ID().Raw()]
	h.mu.Unlock()
	if hold != nil {
		close(hold.entered)
		hold.g.wait()
	}
}

func (h *hooks) closed(sub *listen.Subscription, reason error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closes == nil {
		h.closes = make(map[string][]error)
	}
	h.closes[sub.ID().Raw()] = append(h.closes[sub.ID().Raw()], reason)
	h.closedCh.put(sub.ID().Raw(), reason)
}

// onClose waits for the OnClose call of id.
func (h *hooks) onClose(t testing.TB, id string) error {
	t.Helper()
	return recv(t, h.closedCh.ch(id), "OnClose of "+id)
}

func (h *hooks) hookReasons(id string) []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.closes[id]...)
}

// ===================== HTTP =====================

// httpFixture is a streamhttp.Handler on a real loopback HTTP server,
// behind a recorder that keeps what the handler wrote for each request
// (keyed by the X-Test-Id header).
type httpFixture struct {
	hooks
	source *faultSource
	h      *streamhttp.Handler
	ts     *httptest.Server
	client *http.Client

	ctxs keyed[context.Context] // each request's context, by id

	h2 bool

	mu        sync.Mutex
	exchanges map[string]*exchange
	errors    []reported
	streams   []*clientStream
	probes    int
	raws      int
	once      sync.Once
}

func newHTTPFixture(t testing.TB, sendBuffer int) *httpFixture {
	return newHTTPFixtureProto(t, sendBuffer, false)
}

// newHTTP2Fixture serves HTTP/2 over TLS (one connection, many streams).
func newHTTP2Fixture(t testing.TB) *httpFixture { return newHTTPFixtureProto(t, 0, true) }

func newHTTPFixtureProto(t testing.TB, sendBuffer int, h2 bool) *httpFixture {
	fx := &httpFixture{source: newFaultSource(), exchanges: make(map[string]*exchange), h2: h2}
	lo := listenOptions()
	lo.CanRead = fx.source.canRead
	lo.OnOpen, lo.OnClose = fx.opened, fx.closed
	lo.OnRefuse = func(req *listen.Request, err error) {
		id := ""
		if req != nil {
			id = http.Header(req.Transport.Header).Get("X-Test-Id")
		}
		fx.mu.Lock()
		defer fx.mu.Unlock()
		fx.errors = append(fx.errors, reported{id, err})
	}
	h, err := streamhttp.New(listen.NewServer(fx.source, lo), streamhttp.Options{
		KeepAlive:    failsafe, // none during a test
		WriteTimeout: failsafe,
		MaxBodyBytes: maxRequestBytes,
	})
	require.NoError(t, err)
	fx.h = h
	fx.ts = httptest.NewUnstartedServer(http.HandlerFunc(fx.serve))
	if sendBuffer > 0 {
		fx.ts.Listener = &bufListener{Listener: fx.ts.Listener, send: sendBuffer}
	}
	if h2 {
		fx.ts.EnableHTTP2 = true
		fx.ts.StartTLS()
		fx.client = fx.ts.Client()
		return fx
	}
	fx.ts.Start()
	fx.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return fx
}

// reported is one OnError call.
type reported struct {
	id  string
	err error
}

// reportedErrors returns the OnRefuse calls so far.
func (fx *httpFixture) reportedErrors() []reported {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return append([]reported(nil), fx.errors...)
}

func (fx *httpFixture) name() string {
	if fx.h2 {
		return "http2"
	}
	return "http"
}
func (fx *httpFixture) src() *faultSource { return fx.source }
func (fx *httpFixture) ending() ending    { return endDisconnect }
func (fx *httpFixture) gate() *gate       { return fx.hooks.gate() }
func (fx *httpFixture) addr() string      { return fx.ts.Listener.Addr().String() }
func (fx *httpFixture) exchange(id string) *exchange {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	ex := fx.exchanges[id]
	if ex == nil {
		ex = &exchange{}
		fx.exchanges[id] = ex
	}
	return ex
}

func (fx *httpFixture) serve(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Test-Id")
	fx.ctxs.put(id, r.Context())
	fx.h.ServeHTTP(&recWriter{ResponseWriter: w, ex: fx.exchange(id)}, r)
}

func listenHeaders() http.Header {
	return http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {spec.ProtocolVersion},
		"Mcp-Method":           {spec.MethodListen},
	}
}

func (fx *httpFixture) listen(t testing.TB, id, filter string) *clientStream {
	return fx.post(t, id, listenBody(id, filter), listenHeaders())
}

// post sends a POST whose response is read into a clientStream by a
// goroutine of its own.
func (fx *httpFixture) post(t testing.TB, id, body string, hdr http.Header) *clientStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cs := &clientStream{id: id, msgs: make(chan msg, 1024), status: make(chan int, 1), cancel: cancel, done: make(chan struct{})}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fx.ts.URL, strings.NewReader(body))
	require.NoError(t, err)
	req.Header = hdr.Clone()
	req.Header.Set("X-Test-Id", id)
	fx.mu.Lock()
	fx.streams = append(fx.streams, cs)
	fx.mu.Unlock()
	go readHTTP(ctx, fx.client, req, cs)
	return cs
}

// readHTTP reads a response: every SSE message, or the one JSON body.
func readHTTP(ctx context.Context, client *http.Client, req *http.Request, cs *clientStream) {
	defer close(cs.done)
	defer close(cs.msgs)
	resp, err := client.Do(req)
	if err != nil {
		cs.setErr(err)
		cs.status <- 0
		return
	}
	defer resp.Body.Close()
	cs.status <- resp.StatusCode
	push := func(m msg) bool {
		select {
		case cs.msgs <- m:
			return true
		case <-ctx.Done():
			cs.setErr(ctx.Err())
			return false
		}
	}
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		r := listentest.NewSSEReader(resp.Body)
		for {
			data, err := r.Data()
			if err != nil {
				cs.setErr(err)
				return
			}
			m, err := parseMsg(data)
			if err != nil {
				cs.setErr(err)
				return
			}
			if !push(m) {
				return
			}
		}
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		cs.setErr(err)
		return
	}
	if len(b) > 0 {
		m, err := parseMsg(b)
		if err != nil {
			cs.setErr(err)
			return
		}
		if !push(m) {
			return
		}
	}
	cs.setErr(io.EOF)
}

func (fx *httpFixture) request(t testing.TB, body, key string) (int, msg) {
	t.Helper()
	fx.mu.Lock()
	fx.raws++
	id := fmt.Sprintf("raw-%d", fx.raws)
	fx.mu.Unlock()
	cs := fx.post(t, id, body, listenHeaders())
	status := recv(t, cs.status, "the status of "+id)
	m := cs.recv(t)
	cs.end(t)
	return status, m
}

func (fx *httpFixture) abort(t testing.TB, cs *clientStream) {
	t.Helper()
	cs.cancel()
	ctx := recv(t, fx.ctxs.ch(cs.id), "the server-side request of "+cs.id)
	await(t, ctx.Done(), "the server to see "+cs.id+" leave")
}

func (fx *httpFixture) holdFirstWrite(id string) (<-chan struct{}, *gate) {
	ex := fx.exchange(id)
	g := fx.gate()
	started := make(chan struct{})
	ex.mu.Lock()
	ex.hold, ex.holdStarted = g, started
	ex.mu.Unlock()
	return started, g
}

func (fx *httpFixture) probe(t testing.TB) {
	t.Helper()
	fx.mu.Lock()
	fx.probes++
	id := fmt.Sprintf(`"probe-%d"`, fx.probes)
	fx.mu.Unlock()
	probeOn(t, fx, id, fx.listen)
}

func (fx *httpFixture) shutdown(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	require.NoError(t, fx.h.Shutdown(ctx))
}

func (fx *httpFixture) beginDrain(t testing.TB) func() {
	// With a context that has already ended, Shutdown only starts.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = fx.h.Shutdown(ctx)
	return func() { fx.shutdown(t) }
}

func (fx *httpFixture) probeRefused(t testing.TB) {
	t.Helper()
	status, m := fx.request(t, listenBody(`"late"`, `{}`), `"late"`)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	requireError(t, m, `"late"`, jsonrpc.CodeInternalError, core.ShuttingDown)
}

func (fx *httpFixture) transcript(t testing.TB, id string) []msg {
	t.Helper()
	ex := fx.exchange(id)
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.body.Len() == 0 {
		return nil
	}
	if ex.ctype == "text/event-stream" {
		msgs, err := sseMessages(ex.body.Bytes())
		require.NoError(t, err)
		return msgs
	}
	m, err := parseMsg(ex.body.Bytes())
	require.NoError(t, err)
	return []msg{m}
}

func (fx *httpFixture) teardown(t testing.TB) {
	fx.once.Do(func() {
		fx.releaseAll()
		fx.mu.Lock()
		streams := fx.streams
		fx.mu.Unlock()
		for _, cs := range streams {
			cs.cancel()
		}
		fx.ts.CloseClientConnections()
		fx.ts.Close()
		fx.client.CloseIdleConnections()
		for _, cs := range streams {
			await(t, cs.done, "the client of "+cs.id)
		}
	})
}

// exchange is what the handler wrote for one request.
type exchange struct {
	mu          sync.Mutex
	status      int
	ctype       string
	body        bytes.Buffer
	writes      int
	hold        *gate
	holdStarted chan struct{}
	big         chan struct{} // closed at the first large write, if set
}

// recWriter records the handler's writes. It hides no method of the
// ResponseWriter from http.ResponseController (Unwrap).
type recWriter struct {
	http.ResponseWriter
	ex *exchange
}

func (w *recWriter) WriteHeader(code int) {
	w.ex.mu.Lock()
	if w.ex.status == 0 {
		w.ex.status = code
		w.ex.ctype = w.Header().Get("Content-Type")
	}
	w.ex.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

func (w *recWriter) Write(p []byte) (int, error) {
	w.ex.mu.Lock()
	if w.ex.status == 0 {
		w.ex.status = http.StatusOK
		w.ex.ctype = w.Header().Get("Content-Type")
	}
	w.ex.mu.Unlock()
	w.ex.record(p)
	return w.ResponseWriter.Write(p)
}

// record keeps body bytes the handler wrote, holding the first write and
// signalling the first large one when the test asked for it.
func (ex *exchange) record(p []byte) {
	ex.mu.Lock()
	ex.writes++
	hold, started := ex.hold, ex.holdStarted
	if ex.writes == 1 {
		ex.hold = nil
	} else {
		hold = nil
	}
	if len(p) >= bigWrite && ex.big != nil {
		close(ex.big)
		ex.big = nil
	}
	ex.body.Write(p)
	ex.mu.Unlock()
	if hold != nil {
		close(started)
		hold.wait()
	}
}

// Hijack hands the handler a connection that records what it writes, so a
// stream the Handler takes over (HTTP/1.x) is recorded like one written
// through the ResponseWriter: the status line and headers are read off the
// first write, the rest is the body.
func (w *recWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &recConn{Conn: c, ex: w.ex}, brw, nil
}

// recConn records the body bytes written to a taken-over connection.
type recConn struct {
	net.Conn
	ex     *exchange
	inBody bool
}

func (c *recConn) Write(p []byte) (int, error) {
	body := p
	if !c.inBody {
		i := bytes.Index(p, []byte("\r\n\r\n"))
		if i < 0 {
			return c.Conn.Write(p)
		}
		c.inBody = true
		head := string(p[:i])
		c.ex.mu.Lock()
		if c.ex.status == 0 && strings.HasPrefix(head, "HTTP/1.1 200 ") {
			c.ex.status = http.StatusOK
			for _, line := range strings.Split(head, "\r\n") {
				if v, ok := strings.CutPrefix(line, "Content-Type: "); ok {
					c.ex.ctype = v
				}
			}
		}
		c.ex.mu.Unlock()
		body = p[i+4:]
	}
	if len(body) > 0 {
		c.ex.record(body)
	}
	return c.Conn.Write(p)
}

func (w *recWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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

// ===================== stdio =====================

// stdioFixture is a stdio.Server serving connections over io.Pipe or
// os.Pipe pairs. Listens go to the main connection while its input is open.
type stdioFixture struct {
	hooks
	source *faultSource
	srv    *stdio.Server
	osPipe bool
	end    ending

	mu     sync.Mutex
	conns  []*stdioConn
	main   *stdioConn
	probes int
	once   sync.Once
}

func newStdioFixture(t testing.TB, osPipe bool, end ending) *stdioFixture {
	fx := &stdioFixture{source: newFaultSource(), osPipe: osPipe, end: end}
	lo := listenOptions()
	lo.CanRead = fx.source.canRead
	lo.OnOpen, lo.OnClose = fx.opened, fx.closed
	srv, err := stdio.New(listen.NewServer(fx.source, lo), stdio.Options{
		Handler:      pingHandler,
		MaxLineBytes: maxRequestBytes,
		WriteTimeout: failsafe,
	})
	require.NoError(t, err)
	fx.srv = srv
	fx.main = fx.connect(t)
	return fx
}

// pingHandler answers ping with {}: the stdio tests' barrier.
var pingHandler = stdio.HandlerFunc(func(_ context.Context, m jsonrpc.Message) (json.RawMessage, error) {
	if m.Method == "ping" {
		return json.RawMessage(`{}`), nil
	}
	return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: "+m.Method)
})

func (fx *stdioFixture) name() string {
	pipe := "iopipe"
	if fx.osPipe {
		pipe = "ospipe"
	}
	return "stdio-" + pipe
}
func (fx *stdioFixture) src() *faultSource { return fx.source }
func (fx *stdioFixture) ending() ending    { return fx.end }
func (fx *stdioFixture) gate() *gate       { return fx.hooks.gate() }

// connect starts Serve on a new pipe pair.
func (fx *stdioFixture) connect(t testing.TB) *stdioConn {
	t.Helper()
	c := newStdioConn(t, fx.srv, fx.osPipe, connOptions{routeBuf: 1024})
	fx.mu.Lock()
	fx.conns = append(fx.conns, c)
	fx.mu.Unlock()
	return c
}

func (fx *stdioFixture) listen(t testing.TB, id, filter string) *clientStream {
	t.Helper()
	return fx.main.listen(t, id, filter)
}

func (fx *stdioFixture) request(t testing.TB, body, key string) (int, msg) {
	t.Helper()
	fx.main.send(t, body)
	return 0, recv(t, fx.main.routes.ch(key), "the reply keyed "+key)
}

func (fx *stdioFixture) abort(t testing.TB, cs *clientStream) {
	t.Helper()
	c := fx.main
	switch fx.end {
	case endCancel:
		c.send(t, cancelLine(cs.id, "reliability"))
		if c.holding.Load() {
			return // the writer is held: no barrier can pass it
		}
		c.ping(t)
	case endEOF:
		c.closeInput(t)
		await(t, c.eof, "the server to read EOF")
	}
}

func (fx *stdioFixture) holdFirstWrite(string) (<-chan struct{}, *gate) {
	g := fx.gate()
	started := make(chan struct{})
	fx.main.holdNextWrite(g, started)
	return started, g
}

func (fx *stdioFixture) probe(t testing.TB) {
	t.Helper()
	next := func() string {
		fx.mu.Lock()
		defer fx.mu.Unlock()
		fx.probes++
		return fmt.Sprintf(`"probe-%d"`, fx.probes)
	}
	if !fx.main.inputClosed.Load() && !fx.main.isDead() {
		probeOn(t, fx, next(), fx.main.listen) // the same connection
	}
	probeOn(t, fx, next(), fx.connect(t).listen) // a new connection
}

func (fx *stdioFixture) shutdown(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	require.NoError(t, fx.srv.Shutdown(ctx))
}

func (fx *stdioFixture) beginDrain(t testing.TB) func() {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		done <- fx.srv.Shutdown(ctx)
	}()
	// A drain stops the pending Read of every connection it drains.
	await(t, fx.main.eof, "the drain to stop the main connection's read")
	return func() { require.NoError(t, recv(t, done, "Shutdown")) }
}

func (fx *stdioFixture) probeRefused(t testing.TB) {
	t.Helper()
	c := fx.connect(t)
	require.ErrorIs(t, recv(t, c.served, "Serve after Shutdown"), stdio.ErrServerClosed)
	c.served <- stdio.ErrServerClosed // for teardown
}

func (fx *stdioFixture) transcript(t testing.TB, id string) []msg {
	fx.mu.Lock()
	conns := fx.conns
	fx.mu.Unlock()
	var out []msg
	for _, c := range conns {
		c.mu.Lock()
		for _, m := range c.transcript {
			if m.key() == id {
				out = append(out, m)
			}
		}
		c.mu.Unlock()
	}
	return out
}

func (fx *stdioFixture) teardown(t testing.TB) {
	fx.once.Do(func() {
		fx.releaseAll()
		fx.mu.Lock()
		conns := fx.conns
		fx.mu.Unlock()
		for _, c := range conns {
			c.shut(t)
		}
		for _, c := range conns {
			c.mu.Lock()
			bad := c.bad
			c.mu.Unlock()
			assert.Empty(t, bad, "malformed output lines")
		}
	})
}

// stdioConn is one Serve call and its client side: a reader goroutine that
// records every output line and routes it by key (id or subscription id).
type stdioConn struct {
	inW  io.WriteCloser // the client's end of the server's input
	outR io.ReadCloser  // the client's end of the server's output
	outW io.WriteCloser // the server's end of its output
	inR  io.Closer      // the server's end of its input

	served  chan error    // Serve's result
	eof     chan struct{} // the server's Read returned an error (EOF)
	outDone chan struct{} // the output reader exited
	routes  keyed[msg]

	// readGate, when set, holds the output reader after its next Read
	// returned (so that the server's writes block for real); readHeld is
	// closed when it does.
	readGate atomic.Pointer[gate]
	readHeld chan struct{}
	// hold, when set, blocks the server's next Write; holding is set while
	// it does.
	holdMu      sync.Mutex
	hold        *gate
	holdStarted chan struct{}
	holding     atomic.Bool
	bigStarted  chan struct{} // closed at the first large Write, if set

	strict      bool
	late        atomic.Int64 // strict: messages nobody waited for
	lateTerms   atomic.Int64 // strict: of which terminal messages
	inputClosed atomic.Bool
	dead        atomic.Bool // Serve has returned
	pings       atomic.Int64

	mu         sync.Mutex
	transcript []msg
	bad        []string
	shutOnce   sync.Once
}

// connOptions configure the client side of a stdio connection.
type connOptions struct {
	routeBuf int // capacity of each key's channel
	// strict keeps no transcript and routes a message only to a key
	// someone asked for (and not yet dropped); the others are counted in
	// late. The soak uses it, so that the client keeps nothing per cycle.
	strict bool
}

// newStdioConn serves a new connection on srv.
func newStdioConn(t testing.TB, srv *stdio.Server, osPipe bool, o connOptions) *stdioConn {
	t.Helper()
	c := &stdioConn{
		served:   make(chan error, 1),
		eof:      make(chan struct{}),
		outDone:  make(chan struct{}),
		readHeld: make(chan struct{}),
		strict:   o.strict,
	}
	c.routes.size = o.routeBuf
	var in io.Reader
	var out io.Writer
	if osPipe {
		inR, inW, err := os.Pipe()
		require.NoError(t, err)
		outR, outW, err := os.Pipe()
		require.NoError(t, err)
		c.inW, c.outR, c.outW, c.inR = inW, outR, outW, inR
		in = &fileIn{serverIn: serverIn{r: inR, eof: c.eof}, f: inR}
		out = &fileOut{serverOut: serverOut{w: outW, c: c}, f: outW}
	} else {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		c.inW, c.outR, c.outW, c.inR = inW, outR, outW, inR
		in = &serverIn{r: inR, eof: c.eof}
		out = &serverOut{w: outW, c: c}
	}
	go func() {
		err := srv.Serve(context.Background(), in, out)
		c.dead.Store(true)
		c.served <- err
		_ = c.outW.Close()
	}()
	go c.readOutput()
	return c
}

func (c *stdioConn) readOutput() {
	defer close(c.outDone)
	br := bufio.NewReaderSize(&gatedReader{c: c}, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if len(line) > 0 && !c.isDead() {
				c.mu.Lock()
				c.bad = append(c.bad, "unterminated output: "+trunc(line))
				c.mu.Unlock()
			}
			return
		}
		m, perr := parseMsg(line[:len(line)-1])
		if perr != nil {
			c.mu.Lock()
			c.bad = append(c.bad, perr.Error())
			c.mu.Unlock()
			continue
		}
		if c.strict {
			if !c.routes.putExisting(m.key(), m) {
				c.late.Add(1)
				if m.terminal() {
					c.lateTerms.Add(1)
				}
			}
			continue
		}
		c.mu.Lock()
		c.transcript = append(c.transcript, m)
		c.mu.Unlock()
		c.routes.put(m.key(), m)
	}
}

func trunc(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// isDead reports whether Serve has returned.
func (c *stdioConn) isDead() bool { return c.dead.Load() }

func (c *stdioConn) send(t testing.TB, line string) {
	t.Helper()
	_, err := io.WriteString(c.inW, line+"\n")
	require.NoError(t, err)
}

func (c *stdioConn) listen(t testing.TB, id, filter string) *clientStream {
	t.Helper()
	cs := &clientStream{id: id, msgs: c.routes.ch(id)}
	c.send(t, listenBody(id, filter))
	return cs
}

// ping is a barrier: once its response is read, every line sent before it
// has been handled by the server's reader.
func (c *stdioConn) ping(t testing.TB) {
	t.Helper()
	id := fmt.Sprintf(`"ping-%d"`, c.pings.Add(1))
	c.send(t, pingLine(id))
	m := recv(t, c.routes.ch(id), "the response to "+id)
	require.JSONEq(t, `{}`, string(m.fields["result"]), "%s", m)
}

func (c *stdioConn) closeInput(t testing.TB) {
	t.Helper()
	c.inputClosed.Store(true)
	require.NoError(t, c.inW.Close())
}

func (c *stdioConn) holdNextWrite(g *gate, started chan struct{}) {
	c.holdMu.Lock()
	c.hold, c.holdStarted = g, started
	c.holdMu.Unlock()
}

// shut closes the connection's input and waits for Serve and the output
// reader.
func (c *stdioConn) shut(t testing.TB) {
	c.shutOnce.Do(func() {
		c.inputClosed.Store(true)
		_ = c.inW.Close()
		if g := c.readGate.Load(); g != nil {
			g.release()
		}
		err := recv(t, c.served, "Serve to return")
		c.served <- err
		await(t, c.outDone, "the output reader")
		_ = c.outR.Close()
		_ = c.inR.Close()
	})
}

// serverIn is the server's input: it reports when a Read fails (EOF).
type serverIn struct {
	r    io.ReadCloser
	eof  chan struct{}
	once sync.Once
}

func (s *serverIn) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil {
		s.once.Do(func() { close(s.eof) })
	}
	return n, err
}

func (s *serverIn) Close() error { return s.r.Close() }

// fileIn forwards read deadlines, so that Serve can stop a pending Read.
type fileIn struct {
	serverIn
	f *os.File
}

func (s *fileIn) SetReadDeadline(d time.Time) error { return s.f.SetReadDeadline(d) }

// serverOut is the server's output: it can hold a Write and reports large
// ones.
type serverOut struct {
	w io.WriteCloser
	c *stdioConn
}

func (s *serverOut) Write(p []byte) (int, error) {
	c := s.c
	c.holdMu.Lock()
	hold, started := c.hold, c.holdStarted
	c.hold = nil
	big := c.bigStarted
	if len(p) >= bigWrite {
		c.bigStarted = nil
	} else {
		big = nil
	}
	c.holdMu.Unlock()
	if hold != nil {
		c.holding.Store(true)
		close(started)
		hold.wait()
		c.holding.Store(false)
	}
	if big != nil {
		close(big)
	}
	return s.w.Write(p)
}

func (s *serverOut) Close() error { return s.w.Close() }

// fileOut forwards write deadlines, so that Serve can stop a pending Write.
type fileOut struct {
	serverOut
	f *os.File
}

func (s *fileOut) SetWriteDeadline(d time.Time) error { return s.f.SetWriteDeadline(d) }

// gatedReader is the client's end of the output; with a read gate set, it
// holds after its next Read returned data.
type gatedReader struct{ c *stdioConn }

func (g *gatedReader) Read(p []byte) (int, error) {
	n, err := g.c.outR.Read(p)
	if gt := g.c.readGate.Load(); gt != nil && n > 0 {
		select {
		case <-g.c.readHeld:
		default:
			close(g.c.readHeld)
		}
		gt.wait()
	}
	return n, err
}

package stdio_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/stdio"
)

// testSource is the stdio tests' Source: Open accepts the supported filter
// verbatim and reports the stream on opened; every Next reports the stream's
// id on nexts; Close records its reason on closed and releases a blocked Next.
// Tests drive a stream with emit, complete and fail.
type testSource struct {
	// openHook, if set, runs in Open first; an error fails the Open.
	openHook func(ctx context.Context, req *listen.Request) error

	opened chan *testStream
	nexts  chan string
	closed chan closeCall

	mu      sync.Mutex
	streams map[string]*testStream // by the listen id's raw token; last one wins
}

type closeCall struct {
	id     string
	reason error
}

var _ listen.Source = (*testSource)(nil)

func newTestSource() *testSource {
	return &testSource{
		opened:  make(chan *testStream, 64),
		nexts:   make(chan string, 256),
		closed:  make(chan closeCall, 64),
		streams: make(map[string]*testStream),
	}
}

func (s *testSource) Open(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	if s.openHook != nil {
		if err := s.openHook(ctx, req); err != nil {
			return nil, nil, err
		}
	}
	st := &testStream{
		src:    s,
		id:     req.ID.Raw(),
		events: make(chan listen.Event),
		end:    make(chan error),
		done:   make(chan struct{}),
	}
	s.mu.Lock()
	s.streams[st.id] = st
	s.mu.Unlock()
	s.opened <- st
	return supported, st, nil
}

func (s *testSource) stream(id string) *testStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[id]
}

type testStream struct {
	src    *testSource
	id     string
	events chan listen.Event
	end    chan error
	done   chan struct{}
	once   sync.Once
}

func (st *testStream) Next() (listen.Event, error) {
	st.src.nexts <- st.id
	select {
	case ev := <-st.events:
		return ev, nil
	case err := <-st.end:
		return listen.Event{}, err
	case <-st.done:
		return listen.Event{}, listen.ErrClosed
	}
}

func (st *testStream) Close(reason error) {
	st.once.Do(func() {
		close(st.done)
		st.src.closed <- closeCall{id: st.id, reason: reason}
	})
}

// emit hands ev to the stream's pending (or next) Next.
func (st *testStream) emit(ev listen.Event) { st.events <- ev }

// complete ends the stream gracefully from the source's side.
func (st *testStream) complete() { st.end <- listen.ErrClosed }

// fail ends the stream with an error from the source's side.
func (st *testStream) fail(err error) { st.end <- err }

// testCaps are the capabilities every test server advertises.
var testCaps = listen.Capabilities{
	ToolsListChanged:     true,
	PromptsListChanged:   true,
	ResourcesListChanged: true, ResourcesSubscribe: true,
}

// newServer is stdio.New for options a test knows are valid.
func newServer(t testing.TB, src listen.Source, opts stdio.Options) *stdio.Server {
	t.Helper()
	srv, err := stdio.New(src, opts)
	require.NoError(t, err)
	return srv
}

// harness runs a Server over two io.Pipe pairs: in carries the client's
// lines to Serve, and every line Serve writes is decoded onto lines.
type harness struct {
	t     *testing.T
	src   *testSource
	srv   *stdio.Server
	conn  *stdio.Conn // set by startConn
	in    *io.PipeWriter
	inR   *io.PipeReader
	outW  *io.PipeWriter
	lines chan msg
	done  chan error
}

// start starts Serve with ctx. opts may be nil; its Listen.Capabilities
// default to testCaps.
func start(t *testing.T, ctx context.Context, src *testSource, opts *stdio.Options) *harness {
	t.Helper()
	return startHarness(t, ctx, src, opts, false)
}

// startConn is start for a Conn: Conn.Serve with ctx; h.conn is the peer's
// side.
func startConn(t *testing.T, ctx context.Context, src *testSource, opts *stdio.Options) *harness {
	t.Helper()
	return startHarness(t, ctx, src, opts, true)
}

func startHarness(t *testing.T, ctx context.Context, src *testSource, opts *stdio.Options, conn bool) *harness {
	t.Helper()
	if src == nil {
		src = newTestSource()
	}
	if opts == nil {
		opts = &stdio.Options{}
	}
	if reflect.ValueOf(opts.Listen.Capabilities).IsZero() {
		opts.Listen.Capabilities = testCaps
	}
	h := &harness{t: t, src: src, srv: newServer(t, src, *opts), lines: make(chan msg, 1024), done: make(chan error, 1)}
	var outR *io.PipeReader
	h.inR, h.in = io.Pipe()
	outR, h.outW = io.Pipe()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for sc.Scan() {
			h.lines <- decode(t, sc.Bytes())
		}
		close(h.lines)
	}()
	serve := func() error { return h.srv.Serve(ctx, h.inR, h.outW) }
	if conn {
		h.conn = h.srv.NewConn(h.inR, h.outW)
		serve = func() error { return h.conn.Serve(ctx) }
	}
	go func() {
		err := serve()
		h.outW.Close()
		h.inR.Close()
		h.done <- err
	}()
	return h
}

// send writes one line (a newline is added).
func (h *harness) send(line string) {
	h.t.Helper()
	_, err := io.WriteString(h.in, line+"\n")
	require.NoError(h.t, err)
}

// recv returns the next output line.
func (h *harness) recv() msg {
	h.t.Helper()
	m, ok := <-h.lines
	require.True(h.t, ok, "output ended")
	return m
}

// quiet waits until every goroutine of the bubble is blocked and asserts that
// no output line is pending.
func (h *harness) quiet() {
	h.t.Helper()
	synctest.Wait()
	select {
	case m, ok := <-h.lines:
		if ok {
			h.t.Fatalf("unexpected output: %s", m.raw)
		}
	default:
	}
}

// nexts waits until the bubble is idle and returns the Next calls made since
// the last call, by stream id.
func (h *harness) nexts() []string {
	synctest.Wait()
	var ids []string
	for {
		select {
		case id := <-h.src.nexts:
			ids = append(ids, id)
		default:
			return ids
		}
	}
}

// closeInput sends EOF, waits for Serve and returns its error with the
// output lines not read yet.
func (h *harness) closeInput() (rest []msg, err error) {
	h.t.Helper()
	require.NoError(h.t, h.in.Close())
	err = <-h.done
	for m := range h.lines {
		rest = append(rest, m)
	}
	return rest, err
}

// wait waits for Serve (ended by other means than EOF) and returns its error
// with the output lines not read yet, then closes the client's input end.
func (h *harness) wait() (rest []msg, err error) {
	h.t.Helper()
	err = <-h.done
	for m := range h.lines {
		rest = append(rest, m)
	}
	h.in.Close()
	return rest, err
}

// closedReason returns the next recorded stream close.
func (h *harness) closedReason() closeCall {
	h.t.Helper()
	return <-h.src.closed
}

// msg is one decoded output line.
type msg struct {
	raw    []byte
	fields map[string]json.RawMessage
}

func decode(t *testing.T, line []byte) msg {
	raw := bytes.Clone(line)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Errorf("output line is not a JSON object: %q: %v", raw, err)
	}
	return msg{raw: raw, fields: fields}
}

// id returns the message's "id" token ("" when it has none).
func (m msg) id() string { return string(m.fields["id"]) }

func (m msg) method() string {
	var s string
	_ = json.Unmarshal(m.fields["method"], &s)
	return s
}

// subID returns params._meta's subscription id token ("" when absent).
func (m msg) subID() string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(m.fields["params"], &p)
	return string(p.Meta[jsonrpc.MetaSubscriptionID])
}

// tag returns the id a message belongs to: its "id", or its subscription id.
func (m msg) tag() string {
	if id := m.id(); id != "" {
		return id
	}
	return m.subID()
}

type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// err returns the message's error object (nil when it has none).
func (m msg) err() *wireError {
	raw, ok := m.fields["error"]
	if !ok {
		return nil
	}
	var e wireError
	_ = json.Unmarshal(raw, &e)
	return &e
}

// param decodes params[key] into v.
func (m msg) param(key string, v any) {
	var p map[string]json.RawMessage
	_ = json.Unmarshal(m.fields["params"], &p)
	_ = json.Unmarshal(p[key], v)
}

// requireAck asserts that m is the acknowledgement of id.
func requireAck(t *testing.T, m msg, id string) {
	t.Helper()
	require.Equal(t, jsonrpc.MethodAcknowledged, m.method(), "%s", m.raw)
	require.Equal(t, id, m.subID(), "%s", m.raw)
	require.Empty(t, m.id(), "a notification has no id: %s", m.raw)
}

// requireError asserts that m is an error response for id ("" for none) with
// code and message.
func requireError(t *testing.T, m msg, id string, code int, message string) {
	t.Helper()
	e := m.err()
	require.NotNil(t, e, "not an error: %s", m.raw)
	require.Equal(t, id, m.id(), "%s", m.raw)
	require.Equal(t, code, e.Code, "%s", m.raw)
	require.Equal(t, message, e.Message, "%s", m.raw)
}

// requireCompletion asserts that m is the completion result of id.
func requireCompletion(t *testing.T, m msg, id string) {
	t.Helper()
	require.Equal(t, id, m.id(), "%s", m.raw)
	var res struct {
		ResultType string                     `json:"resultType"`
		Meta       map[string]json.RawMessage `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(m.fields["result"], &res), "%s", m.raw)
	require.Equal(t, "complete", res.ResultType, "%s", m.raw)
	require.Equal(t, id, string(res.Meta[jsonrpc.MetaSubscriptionID]), "%s", m.raw)
}

// listenLine returns a 2026-07-28 subscriptions/listen request with the id
// token id and the notifications filter JSON.
func listenLine(id, notifications string) string {
	return listenLineVersion(id, notifications, jsonrpc.ProtocolVersion)
}

func listenLineVersion(id, notifications, version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"subscriptions/listen","params":{"_meta":{%q:%q,%q:{}},"notifications":%s}}`,
		id, jsonrpc.MetaProtocolVersion, version, jsonrpc.MetaClientCapabilities, notifications)
}

func cancelLine(id, reason string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":%q}}`, id, reason)
}

func requestLine(id, method string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{}}`, id, method)
}

// opened waits for the source to open the stream of id.
func (h *harness) opened(id string) *testStream {
	h.t.Helper()
	st := <-h.src.opened
	require.Equal(h.t, id, st.id)
	return st
}

// openListen sends a listen for toolsListChanged and returns its stream once
// its acknowledgement was read and its first Next made.
func (h *harness) openListen(id string) *testStream {
	h.t.Helper()
	h.send(listenLine(id, `{"toolsListChanged":true}`))
	st := h.opened(id)
	requireAck(h.t, h.recv(), id)
	require.Equal(h.t, id, <-h.src.nexts)
	return st
}

// requireReason asserts the reason matches target (errors.Is).
func requireReason(t *testing.T, c closeCall, id string, target error) {
	t.Helper()
	require.Equal(t, id, c.id)
	require.Truef(t, errors.Is(c.reason, target), "reason %v does not match %v", c.reason, target)
}

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
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
)

// The stdio tests' Source is a listentest.Source: Open accepts the
// supported filter; tests drive each stream (Send, End, Fail), see its
// demand (Nexts) and the streams' ends in order (Source.Closed); a test
// that must block or fail an Open sets BeforeOpen.

// closeCall is one stream's end: the listen's id token and the reason of
// its first Close.
type closeCall struct {
	id     string
	reason error
}

// testCaps are the capabilities every test server advertises.
var testCaps = listen.Capabilities{
	ToolsListChanged:     true,
	PromptsListChanged:   true,
	ResourcesListChanged: true, ResourcesSubscribe: true,
}

// options is what a test configures: the listen.Server's policy (Listen)
// and the transport's own options.
type options struct {
	Listen listen.Options
	stdio.Options
}

// newServer is listen.NewServer and stdio.New for options a test knows
// are valid.
func newServer(t testing.TB, src listen.Source, opts options) *stdio.Server {
	t.Helper()
	srv, _ := newServers(t, src, opts)
	return srv
}

// newServers is newServer that also returns the listen.Server.
func newServers(t testing.TB, src listen.Source, opts options) (*stdio.Server, *listen.Server) {
	t.Helper()
	ls := listen.NewServer(src, opts.Listen)
	srv, err := stdio.New(ls, opts.Options)
	require.NoError(t, err)
	return srv, ls
}

// harness runs a Server over two io.Pipe pairs: in carries the client's
// lines to Serve, and every line Serve writes is decoded onto lines.
type harness struct {
	t     *testing.T
	src   *listentest.Source
	srv   *stdio.Server
	ls    *listen.Server // srv's listen policy
	conn  *stdio.Conn    // set by startConn
	in    *io.PipeWriter
	inR   *io.PipeReader
	outW  *io.PipeWriter
	lines chan msg
	done  chan error
}

// start starts Serve with ctx. opts may be nil; its Listen.Capabilities
// default to testCaps.
func start(t *testing.T, ctx context.Context, src *listentest.Source, opts *options) *harness {
	t.Helper()
	return startHarness(t, ctx, src, opts, false)
}

// startConn is start for a Conn: Conn.Serve with ctx; h.conn is the peer's
// side.
func startConn(t *testing.T, ctx context.Context, src *listentest.Source, opts *options) *harness {
	t.Helper()
	return startHarness(t, ctx, src, opts, true)
}

func startHarness(t *testing.T, ctx context.Context, src *listentest.Source, opts *options, conn bool) *harness {
	t.Helper()
	if src == nil {
		src = listentest.NewSource()
	}
	if opts == nil {
		opts = &options{}
	}
	if reflect.ValueOf(opts.Listen.Capabilities).IsZero() {
		opts.Listen.Capabilities = testCaps
	}
	srv, ls := newServers(t, src, *opts)
	return serveHarness(t, ctx, src, srv, ls, conn)
}

// another serves a second connection on h's Server, with ctx.
func (h *harness) another(ctx context.Context) *harness {
	h.t.Helper()
	return serveHarness(h.t, ctx, h.src, h.srv, h.ls, false)
}

func serveHarness(t *testing.T, ctx context.Context, src *listentest.Source, srv *stdio.Server, ls *listen.Server, conn bool) *harness {
	h := &harness{t: t, src: src, srv: srv, ls: ls, lines: make(chan msg, 1024), done: make(chan error, 1)}
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
// the last call, as their streams' id tokens (stream by stream, in the order
// the streams were opened).
func (h *harness) nexts() []string {
	synctest.Wait()
	var ids []string
	for _, st := range h.src.Streams() {
		for drained := false; !drained; {
			select {
			case <-st.Nexts():
				ids = append(ids, st.RequestID.Raw())
			default:
				drained = true
			}
		}
	}
	return ids
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

// closedReason returns the next stream close of the source.
func (h *harness) closedReason() closeCall {
	h.t.Helper()
	return nextClose(h.src)
}

// nextClose waits for the next stream close of src.
func nextClose(src *listentest.Source) closeCall {
	st := <-src.Closed()
	return closeCall{id: st.RequestID.Raw(), reason: st.Reason()}
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
	return string(p.Meta[spec.MetaSubscriptionID])
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
	require.Equal(t, spec.MethodAcknowledged, m.method(), "%s", m.raw)
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
	require.Equal(t, id, string(res.Meta[spec.MetaSubscriptionID]), "%s", m.raw)
}

// listenLine returns a 2026-07-28 subscriptions/listen request with the id
// token id and the notifications filter JSON.
func listenLine(id, notifications string) string {
	return listenLineVersion(id, notifications, spec.ProtocolVersion)
}

func listenLineVersion(id, notifications, version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"subscriptions/listen","params":{"_meta":{%q:%q,%q:{}},"notifications":%s}}`,
		id, spec.MetaProtocolVersion, version, spec.MetaClientCapabilities, notifications)
}

func cancelLine(id, reason string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":%q}}`, id, reason)
}

func requestLine(id, method string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{}}`, id, method)
}

// opened waits for the source to open the stream of id.
func (h *harness) opened(id string) *listentest.Stream {
	h.t.Helper()
	st := <-h.src.Opened()
	require.Equal(h.t, id, st.RequestID.Raw())
	return st
}

// openListen sends a listen for toolsListChanged and returns its stream once
// its acknowledgement was read and its first Next made.
func (h *harness) openListen(id string) *listentest.Stream {
	h.t.Helper()
	h.send(listenLine(id, `{"toolsListChanged":true}`))
	st := h.opened(id)
	requireAck(h.t, h.recv(), id)
	<-st.Nexts()
	return st
}

// requireReason asserts the reason matches target (errors.Is).
func requireReason(t *testing.T, c closeCall, id string, target error) {
	t.Helper()
	require.Equal(t, id, c.id)
	require.Truef(t, errors.Is(c.reason, target), "reason %v does not match %v", c.reason, target)
}

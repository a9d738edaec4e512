package reliability_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// The exact messages of streamhttp's refusals these tests compare.
const (
	msgBodyTimeout = "Request timeout: the request body was not received in time"
)

// Attacks: cheap inputs that cost the server more than they cost the
// sender, and rules looser than MCP asks, tried over real loopback HTTP/1.1
// and HTTP/2. Each test failed before its fix.

// attackTarget is a hub served by a streamhttp.Handler behind Front, next to
// a stand-in for the rest of an MCP server (such as the go-sdk's handler)
// that counts the requests it sees.
type attackTarget struct {
	hub    *hub.Hub
	h      *streamhttp.Handler
	ts     *httptest.Server
	client *http.Client
	h2     bool
	// others counts the requests that reached the stand-in server.
	others atomic.Int64
}

// newAttackTarget starts a target; listener, if set, wraps the server's
// listener.
func newAttackTarget(t *testing.T, h2 bool, lo listen.Options, opts streamhttp.Options, listener func(net.Listener) net.Listener) *attackTarget {
	t.Helper()
	changes, err := hub.New(hub.Options{})
	require.NoError(t, err)
	lo.Capabilities, lo.ServerInfo = allCaps(), listen.Implementation{Name: "attack", Version: "1.0.0"}
	h, err := streamhttp.New(listen.NewServer(changes, lo), opts)
	require.NoError(t, err)
	at := &attackTarget{hub: changes, h: h, h2: h2}
	other := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at.others.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	})
	at.ts = httptest.NewUnstartedServer(streamhttp.Front(h, other))
	if listener != nil {
		at.ts.Listener = listener(at.ts.Listener)
	}
	if h2 {
		at.ts.EnableHTTP2 = true
		at.ts.StartTLS()
		at.client = at.ts.Client()
	} else {
		at.ts.Start()
		at.client = &http.Client{Transport: &http.Transport{}}
	}
	t.Cleanup(at.close)
	return at
}

// close ends every stream gracefully, then the server (idempotent).
func (at *attackTarget) close() {
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	_ = at.h.Shutdown(ctx)
	at.ts.CloseClientConnections()
	at.ts.Close()
	at.client.CloseIdleConnections()
}

// protos runs body over HTTP/1.1 and HTTP/2, each with goroutines checked.
func protos(t *testing.T, body func(t *testing.T, h2 bool)) {
	for _, h2 := range []bool{false, true} {
		name := "http1"
		if h2 {
			name = "http2"
		}
		t.Run(name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			// The first cleanup runs last: after the responses are closed
			// and the target is shut down.
			t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
			body(t, h2)
		})
	}
}

// post sends a POST with body and headers (a "Host" entry sets the Host) and
// returns the response; the response's context ends with the test.
func (at *attackTarget) post(t *testing.T, body string, hdr http.Header) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, at.ts.URL+"/mcp", strings.NewReader(body))
	require.NoError(t, err)
	for k, vs := range hdr {
		if k == "Host" {
			req.Host = vs[0]
			continue
		}
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	resp, err := at.client.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// with returns the conforming headers of method with kv pairs added.
func with(method string, kv ...string) http.Header {
	hdr := listenHeaders()
	hdr.Set("Mcp-Method", method)
	for i := 0; i+1 < len(kv); i += 2 {
		hdr[kv[i]] = []string{kv[i+1]}
	}
	return hdr
}

// stream reads an SSE response's messages.
type stream struct {
	resp *http.Response
	rd   *listentest.SSEReader
}

func (at *attackTarget) listen(t *testing.T, id string, hdr http.Header) *stream {
	t.Helper()
	resp := at.post(t, listenBody(id, `{"toolsListChanged":true}`), hdr)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := &stream{resp: resp, rd: listentest.NewSSEReader(resp.Body)}
	m := s.next(t)
	require.Equal(t, spec.MethodAcknowledged, m.method(), "%s", m)
	return s
}

func (s *stream) next(t *testing.T) msg {
	t.Helper()
	type result struct {
		m   msg
		err error
	}
	ch := make(chan result, 1)
	go func() {
		data, err := s.rd.Data()
		if err != nil {
			ch <- result{err: err}
			return
		}
		m, err := parseMsg(data)
		ch <- result{m, err}
	}()
	r := recv(t, ch, "a message")
	require.NoError(t, r.err)
	return r.m
}

// end checks that the response ends after what was read.
func (s *stream) end(t *testing.T) {
	t.Helper()
	ch := make(chan error, 1)
	go func() {
		_, err := s.rd.Data()
		ch <- err
	}()
	assert.ErrorIs(t, recv(t, ch, "the end of the stream"), io.EOF)
}

// wantRefusal checks a JSON-RPC error response.
func wantRefusal(t *testing.T, resp *http.Response, status, code int, message string) {
	t.Helper()
	assert.Equal(t, status, resp.StatusCode)
	// require: a stream would be read for ever.
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "status %d", resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	m, err := parseMsg(b)
	require.NoError(t, err)
	if e := m.wireErr(); assert.NotNil(t, e, "%s", m) {
		assert.Equal(t, code, e.Code)
		assert.Equal(t, message, e.Message)
	}
}

const toolsCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_everything","arguments":{}}}`

// Requests that never finish arriving. 20 connections of each kind
// (a body sent one byte every 100 ms, a body one byte short of its
// Content-Length, a chunked body, or HTTP/2 DATA frames, without end) are
// each cut by the Handler's ReadTimeout (here 300 ms): answered 408 -32600,
// and on HTTP/1.1 closed. Nothing was admitted, and a listen still opens.
// Before, each stayed open for as long as its client kept it (here: until
// the failsafe).
func TestAttackIncompleteRequests(t *testing.T) {
	const perKind = 20
	body := listenBody(`"slow"`, `{"toolsListChanged":true}`)
	kinds := []struct {
		name   string
		length int64 // -1: unknown (chunked)
		send   func(w io.Writer, stop <-chan struct{}) error
	}{
		{"one byte every 100 ms", int64(len(body)), func(w io.Writer, stop <-chan struct{}) error {
			return trickle(w, stop, 100*time.Millisecond, func(i int) []byte { return []byte{body[i%len(body)]} })
		}},
		{"one byte short", int64(len(body)), func(w io.Writer, stop <-chan struct{}) error {
			if _, err := io.WriteString(w, body[:len(body)-1]); err != nil {
				return err
			}
			<-stop
			return nil
		}},
		{"endless body of unknown length", -1, func(w io.Writer, stop <-chan struct{}) error {
			return trickle(w, stop, 50*time.Millisecond, func(int) []byte { return []byte(" ") })
		}},
	}
	protos(t, func(t *testing.T, h2 bool) {
		at := newAttackTarget(t, h2, listen.Options{}, streamhttp.Options{ReadTimeout: 300 * time.Millisecond}, nil)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		type outcome struct {
			kind   string
			status int
			msg    string
			closed bool
			err    error
		}
		outcomes := make(chan outcome, perKind*len(kinds))
		for _, k := range kinds {
			for range perKind {
				wg.Add(1)
				go func() {
					defer wg.Done()
					o := outcome{kind: k.name}
					var resp *http.Response
					var rd *bufio.Reader
					if h2 {
						pr, pw := io.Pipe()
						go func() { pw.CloseWithError(errors.Join(k.send(pw, stop), io.ErrUnexpectedEOF)) }()
						req, _ := http.NewRequest(http.MethodPost, at.ts.URL+"/mcp", pr)
						req.Header = listenHeaders()
						req.ContentLength = k.length
						resp, o.err = at.client.Do(req)
						if o.err != nil {
							pr.CloseWithError(o.err)
						}
					} else {
						var conn net.Conn
						conn, o.err = net.Dial("tcp", at.ts.Listener.Addr().String())
						if o.err == nil {
							defer conn.Close()
							go sendRaw(conn, listenHeaders(), k.length, k.send, stop)
							rd = bufio.NewReader(conn)
							resp, o.err = http.ReadResponse(rd, nil)
						}
					}
					if o.err != nil {
						outcomes <- o
						return
					}
					defer resp.Body.Close()
					o.status = resp.StatusCode
					b, _ := io.ReadAll(resp.Body)
					if m, err := parseMsg(b); err == nil && m.wireErr() != nil {
						o.msg = m.wireErr().Message
					}
					if rd != nil {
						// EOF, or a reset: the server closed the connection
						// with the client's bytes unread.
						_, err := rd.ReadByte()
						o.closed = err != nil
					}
					outcomes <- o
				}()
			}
		}
		for range perKind * len(kinds) {
			o := recv(t, outcomes, "an incomplete request to be cut")
			require.NoError(t, o.err, o.kind)
			assert.Equal(t, http.StatusRequestTimeout, o.status, o.kind)
			assert.Equal(t, msgBodyTimeout, o.msg, o.kind)
			if !h2 {
				assert.True(t, o.closed, "%s: the connection is closed", o.kind)
			}
		}
		close(stop)
		wg.Wait()
		assert.Equal(t, listen.Stats{}, at.h.Server().Stats(), "nothing was admitted")

		s := at.listen(t, `"probe"`, listenHeaders())
		at.hub.ToolsListChanged()
		assert.Equal(t, spec.MethodToolsListChanged, s.next(t).method())
		at.close()
	})
}

// trickle writes part(i) every interval until a write fails or stop.
func trickle(w io.Writer, stop <-chan struct{}, interval time.Duration, part func(i int) []byte) error {
	tick := time.NewTicker(interval) // the attacker's pace
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		if _, err := w.Write(part(i)); err != nil {
			return err
		}
	}
}

// sendRaw writes an HTTP/1.1 POST of /mcp to conn, chunked for an unknown
// length, its body written by send.
func sendRaw(conn net.Conn, hdr http.Header, length int64, send func(w io.Writer, stop <-chan struct{}) error, stop <-chan struct{}) {
	var head strings.Builder
	head.WriteString("POST /mcp HTTP/1.1\r\nHost: " + conn.RemoteAddr().String() + "\r\n")
	if length >= 0 {
		head.WriteString("Content-Length: " + strconv.FormatInt(length, 10) + "\r\n")
	} else {
		head.WriteString("Transfer-Encoding: chunked\r\n")
	}
	_ = hdr.Write(&head)
	head.WriteString("\r\n")
	if _, err := io.WriteString(conn, head.String()); err != nil {
		return
	}
	if length >= 0 {
		_ = send(conn, stop)
		return
	}
	_ = send(chunked{conn}, stop)
}

// chunked writes each Write as one HTTP/1.1 chunk.
type chunked struct{ w io.Writer }

func (c chunked) Write(p []byte) (int, error) {
	if _, err := fmt.Fprintf(c.w, "%x\r\n%s\r\n", len(p), p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// A cross-origin browser request through Front. A tools/call (or a
// GET) from http://evil.example is refused with 403 before the rest of the
// server sees it, as a listen is; a non-browser client and a same-origin
// page are served. Before, Front checked only listens: the cross-site
// tools/call ran and got 200.
func TestAttackCrossOriginThroughFront(t *testing.T) {
	protos(t, func(t *testing.T, h2 bool) {
		at := newAttackTarget(t, h2, listen.Options{}, streamhttp.Options{}, nil)
		evil := []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}

		wantRefusal(t, at.post(t, toolsCall, with("tools/call", evil...)),
			http.StatusForbidden, jsonrpc.CodeInvalidRequest, streamhttp.MsgForbidden)
		wantRefusal(t, at.post(t, toolsCall, with("tools/call", "Origin", "http://evil.example")),
			http.StatusForbidden, jsonrpc.CodeInvalidRequest, streamhttp.MsgForbidden)
		wantRefusal(t, at.post(t, listenBody(`"x"`, `{}`), with(spec.MethodListen, evil...)),
			http.StatusForbidden, jsonrpc.CodeInvalidRequest, streamhttp.MsgForbidden)
		req, err := http.NewRequest(http.MethodGet, at.ts.URL+"/mcp", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "http://evil.example")
		resp, err := at.client.Do(req)
		require.NoError(t, err)
		wantRefusal(t, resp, http.StatusForbidden, jsonrpc.CodeInvalidRequest, streamhttp.MsgForbidden)
		resp.Body.Close()
		assert.Zero(t, at.others.Load(), "a refused request reached the server behind Front")

		resp = at.post(t, toolsCall, with("tools/call"))
		assert.Equal(t, http.StatusOK, resp.StatusCode, "a non-browser client")
		resp = at.post(t, toolsCall, with("tools/call", "Origin", at.ts.URL, "Sec-Fetch-Site", "same-origin"))
		assert.Equal(t, http.StatusOK, resp.StatusCode, "a same-origin page")
		assert.EqualValues(t, 2, at.others.Load())
		at.close()
	})
}

// publicAddrListener makes every accepted connection report a non-loopback
// local address, as on a server bound to 0.0.0.0 reached through a public
// interface (the tests may only use loopback).
type publicAddrListener struct{ net.Listener }

func (l publicAddrListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return publicAddrConn{c}, nil
}

type publicAddrConn struct{ net.Conn }

func (publicAddrConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 8080}
}

// DNS rebinding against a server on a non-loopback address. A page
// of attacker.example whose name now resolves to the server sends a listen
// and a tools/call with Host and Origin both attacker.example (same-origin,
// to the browser). With AllowedHosts both are refused with 403; the names
// the server answers to are served. Without AllowedHosts both are served:
// on a public address the default check cannot tell the attacker's name
// from the server's, which is why a server that binds one must list its
// names (and the example server refuses to start without them).
func TestAttackDNSRebindingOnAPublicBind(t *testing.T) {
	public := func(l net.Listener) net.Listener { return publicAddrListener{l} }
	protos(t, func(t *testing.T, h2 bool) {
		at := newAttackTarget(t, h2, listen.Options{}, streamhttp.Options{AllowedHosts: []string{"mcp.example.com"}}, public)
		_, port, err := net.SplitHostPort(at.ts.Listener.Addr().String())
		require.NoError(t, err)
		attacker := "attacker.example:" + port
		rebound := []string{"Host", attacker, "Origin", "http://" + attacker, "Sec-Fetch-Site", "same-origin"}
		wantRefusal(t, at.post(t, listenBody(`"x"`, `{}`), with(spec.MethodListen, rebound...)),
			http.StatusForbidden, jsonrpc.CodeInvalidRequest, streamhttp.MsgForbidden)
		wantRefusal(t, at.post(t, toolsCall, with("tools/call", rebound...)),
			http.StatusForbidden, jsonrpc.CodeInvalidRequest, streamhttp.MsgForbidden)
		assert.Zero(t, at.others.Load())

		own := []string{"Host", "mcp.example.com:" + port}
		at.listen(t, `"own"`, with(spec.MethodListen, own...))
		assert.Equal(t, http.StatusOK, at.post(t, toolsCall, with("tools/call", own...)).StatusCode)
		at.close()

		open := newAttackTarget(t, h2, listen.Options{}, streamhttp.Options{}, public)
		_, port, err = net.SplitHostPort(open.ts.Listener.Addr().String())
		require.NoError(t, err)
		attacker = "attacker.example:" + port
		rebound = []string{"Host", attacker, "Origin", "http://" + attacker, "Sec-Fetch-Site", "same-origin"}
		open.listen(t, `"rebound"`, with(spec.MethodListen, rebound...))
		assert.Equal(t, http.StatusOK, open.post(t, toolsCall, with("tools/call", rebound...)).StatusCode)
		open.close()
	})
}

// One client tries to take every slot. With MaxStreams 20 and
// MaxStreamsPerKey 5, keyed by the principal, the greedy client gets 5
// streams, then 429 with Retry-After; 15 other clients each still open
// theirs, and once the Handler is full the next listen gets 503 with
// Retry-After. Before, the greedy client took all 20 slots and the capacity
// 503 had no Retry-After.
func TestAttackOneClientTakesEverySlot(t *testing.T) {
	protos(t, func(t *testing.T, h2 bool) {
		at := newAttackTarget(t, h2, listen.Options{MaxStreams: 20, MaxStreamsPerKey: 5,
			StreamKey: func(req *listen.Request) string { return req.Auth.(string) }}, streamhttp.Options{
			Authenticate: func(r *http.Request) (any, error) {
				user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
				if !ok {
					return nil, errors.New("no token")
				}
				return user, nil
			},
		}, nil)
		as := func(user string) http.Header { return with(spec.MethodListen, "Authorization", "Bearer "+user) }

		var greedy int
		for i := range 20 {
			resp := at.post(t, listenBody(strconv.Itoa(i), `{}`), as("greedy"))
			if resp.StatusCode != http.StatusOK {
				wantRefusal(t, resp, http.StatusTooManyRequests, jsonrpc.CodeInternalError, core.TooManyForKey)
				assert.Equal(t, "5", resp.Header.Get("Retry-After"))
				break
			}
			greedy++
		}
		assert.Equal(t, 5, greedy, "streams the greedy client got")
		for i := range 15 {
			at.listen(t, `"other"`, as(fmt.Sprintf("user-%d", i)))
		}
		resp := at.post(t, listenBody(`"late"`, `{}`), as("late"))
		wantRefusal(t, resp, http.StatusServiceUnavailable, jsonrpc.CodeInternalError, core.CapacityExhausted)
		assert.Equal(t, "5", resp.Header.Get("Retry-After"))
		st := at.h.Server().Stats()
		assert.Equal(t, 20, st.Active)
		assert.EqualValues(t, 2, st.Refused)
		at.close()
	})
}

// A principal's credential is revoked while its streams are open.
// The server makes Authenticate refuse it and calls EndStreams: each of its
// three streams gets its completion result (reason "revoked" in its _meta)
// and ends (reason ErrEnded, a listen.ErrRevoked), a
// new listen with the revoked credential gets 401, and another principal's
// stream goes on receiving. Before, the streams lived on with the revoked
// credential until the client left.
func TestAttackRevokedPrincipal(t *testing.T) {
	protos(t, func(t *testing.T, h2 bool) {
		var revoked sync.Map
		var closes sync.Map // id -> reason
		at := newAttackTarget(t, h2, listen.Options{
			OnClose: func(sub *listen.Subscription, reason error) { closes.Store(sub.ID().String(), reason) },
		}, streamhttp.Options{
			Authenticate: func(r *http.Request) (any, error) {
				user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
				if _, gone := revoked.Load(user); !ok || gone {
					return nil, errors.New("invalid token")
				}
				return user, nil
			},
		}, nil)
		as := func(user string) http.Header { return with(spec.MethodListen, "Authorization", "Bearer "+user) }
		var alice []*stream
		for i := range 3 {
			alice = append(alice, at.listen(t, strconv.Itoa(i), as("alice")))
		}
		bob := at.listen(t, `"bob"`, as("bob"))

		revoked.Store("alice", true)
		assert.Equal(t, 3, at.h.Server().EndStreams(func(auth any) bool {
			_, gone := revoked.Load(auth)
			return gone
		}, listen.ErrRevoked))
		for i, s := range alice {
			m := s.next(t)
			assert.True(t, m.completion(), "%s", m)
			assert.Equal(t, strconv.Itoa(i), m.id())
			s.end(t)
		}
		wantRefusal(t, at.post(t, listenBody(`"again"`, `{}`), as("alice")),
			http.StatusUnauthorized, jsonrpc.CodeInvalidRequest, streamhttp.MsgUnauthorized)

		at.hub.ToolsListChanged()
		assert.Equal(t, spec.MethodToolsListChanged, bob.next(t).method())
		assert.Equal(t, 1, at.h.Server().Stats().Active)
		at.close()
		for i := range 3 {
			reason, ok := closes.Load(strconv.Itoa(i))
			if assert.True(t, ok, "OnClose of %d", i) {
				assert.ErrorIs(t, reason.(error), listen.ErrRevoked)
			}
		}
	})
}

// Bytes a client sends after its listen request on a
// taken-over HTTP/1.1 connection (4 MiB of them, or a pipelined request
// right behind the listen) end its stream at once, as Disconnected with
// streamhttp.ErrUnexpectedBytes; the server reads no further (it used to
// read them one byte per system call, 6.1 s of CPU for 4 MiB), closes the
// connection and goes on serving. Over the Linux fast path (a hub stream)
// and the portable one (a Source whose Next blocks).
func TestAttackTrailingBytes(t *testing.T) {
	for _, source := range []string{"hub", "blocking"} {
		for _, when := range []string{"after the acknowledgement", "with the request"} {
			t.Run(source+"/"+when, func(t *testing.T) {
				ignore := goleak.IgnoreCurrent()
				t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
				closes := make(chan error, 4)
				lo := listen.Options{OnClose: func(_ *listen.Subscription, reason error) { closes <- reason }}
				at := newAttackTarget(t, false, lo, streamhttp.Options{}, nil)
				if source == "blocking" {
					src := listentest.NewSource()
					h, err := streamhttp.New(listen.NewServer(src, listen.Options{Capabilities: allCaps(), OnClose: lo.OnClose}), streamhttp.Options{})
					require.NoError(t, err)
					t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
					at.ts.Config.Handler = streamhttp.Front(h, http.NotFoundHandler())
				}

				conn, err := net.Dial("tcp", at.ts.Listener.Addr().String())
				require.NoError(t, err)
				defer conn.Close()
				body := listenBody(`"t"`, `{"toolsListChanged":true}`)
				var extra string
				if when == "with the request" {
					extra = "POST /mcp HTTP/1.1\r\nHost: x\r\n\r\n"
				}
				_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", conn.RemoteAddr(), len(body))
				require.NoError(t, err)
				require.NoError(t, listenHeaders().Write(conn))
				_, err = io.WriteString(conn, "\r\n"+body+extra)
				require.NoError(t, err)
				if when == "after the acknowledgement" {
					br := bufio.NewReader(conn)
					for {
						line, err := br.ReadString('\n')
						require.NoError(t, err)
						if strings.Contains(line, spec.MethodAcknowledged) {
							break
						}
					}
					sent := make(chan struct{})
					go func() {
						defer close(sent)
						chunk := make([]byte, 64<<10)
						for range 64 { // 4 MiB, until the server closes
							if _, err := conn.Write(chunk); err != nil {
								return
							}
						}
					}()
					defer func() { <-sent }()
				}
				reason := recv(t, closes, "the stream's end")
				assert.ErrorIs(t, reason, listen.ErrDisconnected)
				assert.ErrorIs(t, reason, streamhttp.ErrUnexpectedBytes)
				// The server closed the connection: reads end (EOF, or a
				// reset for the bytes it never read), never time out.
				require.NoError(t, conn.SetReadDeadline(time.Now().Add(failsafe)))
				_, err = io.Copy(io.Discard, conn)
				var ne net.Error
				assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection stayed open: %v", err)
				if source == "hub" {
					// And the hub serves the next listen.
					s := at.listen(t, `"next"`, listenHeaders())
					at.hub.ToolsListChanged()
					assert.Equal(t, spec.MethodToolsListChanged, s.next(t).method())
				}
			})
		}
	}
}

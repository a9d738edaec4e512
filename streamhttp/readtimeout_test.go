package streamhttp_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"reflect"
	"strconv"
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

// pipeServer is a Handler served by an http.Server on a pipeListener, for
// tests in a synctest bubble, over HTTP/1.1 or unencrypted HTTP/2.
type pipeServer struct {
	h      *streamhttp.Handler
	l      *testkit.PipeListener
	srv    *http.Server
	tr     *http.Transport
	served chan error
}

func newPipeServer(t *testing.T, src listen.Source, opts config, h2 bool) *pipeServer {
	t.Helper()
	if reflect.ValueOf(opts.Listen.Capabilities).IsZero() {
		opts.Listen.Capabilities = caps()
	}
	p := &pipeServer{h: newHandler(t, src, opts), l: testkit.NewPipeListener(), served: make(chan error, 1)}
	p.srv = &http.Server{Handler: p.h}
	p.tr = &http.Transport{DialContext: p.l.Dial}
	if h2 {
		p.srv.Protocols = new(http.Protocols)
		p.srv.Protocols.SetUnencryptedHTTP2(true)
		p.tr.Protocols = new(http.Protocols)
		p.tr.Protocols.SetUnencryptedHTTP2(true)
	}
	go func() { p.served <- p.srv.Serve(p.l) }()
	return p
}

// close shuts the Handler down, then the server, and waits for both.
func (p *pipeServer) close(t *testing.T) {
	t.Helper()
	p.tr.CloseIdleConnections()
	require.NoError(t, p.h.Shutdown(context.Background()))
	require.NoError(t, p.srv.Close())
	assert.ErrorIs(t, <-p.served, http.ErrServerClosed)
}

// attackBody is a request body sent the way an attacker sends it: n bytes
// of b, one every interval (all at once for 0), then nothing more until
// stop is closed; an endless body (n < 0) repeats b. Read reports how far it
// got.
type attackBody struct {
	b        string
	n        int
	interval time.Duration
	stop     <-chan struct{}
	sent     int
}

func (a *attackBody) Read(p []byte) (int, error) {
	if a.n >= 0 && a.sent >= a.n {
		<-a.stop // one byte short, or more: the client goes silent
		return 0, io.ErrUnexpectedEOF
	}
	if a.interval > 0 {
		select {
		case <-time.After(a.interval): // the attacker's pace, on the bubble's clock
		case <-a.stop:
			return 0, io.ErrUnexpectedEOF
		}
		p = p[:1]
	}
	k := 0
	for k < len(p) && (a.n < 0 || a.sent < a.n) {
		p[k] = a.b[a.sent%len(a.b)]
		k++
		a.sent++
	}
	return k, nil
}

// sendHTTP1 writes an HTTP/1.1 request with body to conn, chunked for an
// unknown length; it stops at the first failed write.
func sendHTTP1(conn net.Conn, method string, hdr http.Header, length int64, body io.Reader) {
	head := method + " / HTTP/1.1\r\nHost: pipe\r\n"
	if length >= 0 {
		head += "Content-Length: " + strconv.FormatInt(length, 10) + "\r\n"
	} else {
		head += "Transfer-Encoding: chunked\r\n"
	}
	var b strings.Builder
	_ = hdr.Write(&b)
	if _, err := io.WriteString(conn, head+b.String()+"\r\n"); err != nil {
		return
	}
	if length < 0 {
		cw := httputil.NewChunkedWriter(conn)
		_, _ = io.Copy(cw, body)
		return
	}
	_, _ = io.Copy(conn, body)
}

// An incomplete request is cut exactly ReadTimeout (default 10 s) after
// ServeHTTP began, on the fake clock of a synctest bubble, over HTTP/1.1 and
// HTTP/2: a body one byte short of its Content-Length, a body sent one byte
// per second, a body of unknown length (chunked, or HTTP/2 DATA frames) that
// never ends (each answered 408, -32600); and on HTTP/1.1 requests refused
// before their body is read (405 for a GET, 401), whose unread body net/http
// discards before it answers (HTTP/2 answers them at once and ends the
// stream). On HTTP/1.1 the connection is closed. Before the read deadline
// each request stayed open as long as its client kept sending: the bubble
// deadlocked.
func TestReadTimeout(t *testing.T) {
	body := listenBody(`"slow"`, `{"toolsListChanged":true}`)
	tests := []struct {
		name     string
		method   string
		auth     string
		length   int64 // ContentLength announced; -1: unknown
		n        int   // bytes sent; -1: endless
		interval time.Duration
		status   int
		message  string
	}{
		{"one byte short", http.MethodPost, "", int64(len(body)), len(body) - 1, 0,
			http.StatusRequestTimeout, streamhttp.MsgBodyTimeout},
		{"one byte per second", http.MethodPost, "", int64(len(body)), len(body), time.Second,
			http.StatusRequestTimeout, streamhttp.MsgBodyTimeout},
		{"endless body of unknown length", http.MethodPost, "", -1, -1, time.Second,
			http.StatusRequestTimeout, streamhttp.MsgBodyTimeout},
		{"GET with an endless body", http.MethodGet, "", -1, -1, time.Second,
			http.StatusMethodNotAllowed, streamhttp.MsgMethodNotAllowed},
		{"refused by Authenticate, slow body", http.MethodPost, "Bearer bad", int64(len(body)), len(body), time.Second,
			http.StatusUnauthorized, streamhttp.MsgUnauthorized},
	}
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		for _, tt := range tests {
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					src := listentest.NewSource()
					p := newPipeServer(t, src, config{
						Authenticate: func(r *http.Request) (any, error) {
							if r.Header.Get("Authorization") == "Bearer bad" {
								return nil, errors.New("bad token")
							}
							return nil, nil
						},
					}, proto == "HTTP/2")
					stop := make(chan struct{})
					ab := &attackBody{b: body, n: tt.n, interval: tt.interval, stop: stop}
					hdr := listenHeaders()
					if tt.auth != "" {
						hdr.Set("Authorization", tt.auth)
					}
					start := time.Now()
					var resp *http.Response
					if proto == "HTTP/2" {
						req, err := http.NewRequest(tt.method, "http://pipe/", ab)
						require.NoError(t, err)
						req.Header, req.ContentLength = hdr, tt.length
						resp, err = (&http.Client{Transport: p.tr}).Do(req)
						require.NoError(t, err)
					} else {
						// On a connection of its own: the Transport may
						// report the failed write of the body rather than
						// the response.
						conn, err := p.l.Dial(context.Background(), "", "")
						require.NoError(t, err)
						defer conn.Close()
						go sendHTTP1(conn, tt.method, hdr, tt.length, ab)
						rd := bufio.NewReader(conn)
						resp, err = http.ReadResponse(rd, nil)
						require.NoError(t, err)
						defer func() {
							_, err := rd.ReadByte()
							assert.ErrorIs(t, err, io.EOF, "the connection is closed")
						}()
					}
					elapsed := time.Since(start)
					assert.Equal(t, map[string]int{"HTTP/1.1": 1, "HTTP/2": 2}[proto], resp.ProtoMajor)
					assert.Equal(t, tt.status, resp.StatusCode)
					b := readError(t, resp)
					close(stop) // the client gives up
					resp.Body.Close()
					assert.Equal(t, jsonrpc.CodeInvalidRequest, b.Error.Code)
					assert.Equal(t, tt.message, b.Error.Message)
					if proto == "HTTP/2" && tt.status != http.StatusRequestTimeout {
						// Refused before its body was read: HTTP/2 ends the
						// stream at once, and the body with it.
						assert.Zero(t, elapsed)
					} else {
						assert.Equal(t, streamhttp.DefaultReadTimeout, elapsed, "cut at the read deadline")
					}
					assert.Empty(t, src.Streams())
					p.close(t)
					synctest.Wait()
				})
			})
		}
	}
}

// The read deadline ends with the request's body: a Source.Open slower than
// ReadTimeout and a stream idle for longer are untouched by it, over
// HTTP/1.1 (taken over or not) and HTTP/2.
func TestReadTimeoutEndsWithTheBody(t *testing.T) {
	for _, tt := range []struct {
		name       string
		h2         bool
		noTakeover bool
	}{{"HTTP/1.1 taken over", false, false}, {"HTTP/1.1 inside net/http", false, true}, {"HTTP/2", true, false}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := listentest.NewSource()
				gate := make(chan struct{})
				src.Gate = gate
				p := newPipeServer(t, src, config{NoTakeover: tt.noTakeover, KeepAlive: time.Hour}, tt.h2)
				go func() {
					time.Sleep(3 * streamhttp.DefaultReadTimeout) // a slow Source.Open
					close(gate)
				}()
				req, err := http.NewRequest(http.MethodPost, "http://pipe/", strings.NewReader(listenBody(`"r"`, `{"toolsListChanged":true}`)))
				require.NoError(t, err)
				req.Header = listenHeaders()
				resp, err := (&http.Client{Transport: p.tr}).Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode)
				s := newSSE(resp)
				assert.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])
				st := streamOf(t, src, "r")
				time.Sleep(5 * streamhttp.DefaultReadTimeout) // idle
				st.Send(listen.ToolsListChanged())
				assert.Equal(t, spec.MethodToolsListChanged, s.message(t)["method"])
				st.End()
				s.message(t)
				s.end(t)
				assert.ErrorIs(t, reasonOf(t, st), listen.ErrComplete)
				p.close(t)
				synctest.Wait()
			})
		})
	}
}

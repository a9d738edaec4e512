package streamhttp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"fmt"
	"slices"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// Handler serves subscriptions/listen over MCP 2026-07-28 Streamable HTTP:
// each listen is one POST whose response is an SSE stream (ServeHTTP lists
// the request checks; the package documentation the stream and its
// endings).
//
// A Handler is safe for concurrent use. Shutdown ends every stream
// gracefully and waits for them; the Handler is not reusable after that.
//
// # Goroutines and ownership
//
// ServeHTTP runs a listen in named steps: decode (the request checks above),
// admit (listen.Slot.Admit: the Server's limits), open (Slot.Open on the
// Source), serve, end. The first three, and OnOpen, run on the net/http goroutine of
// the request on every path. The stream is then served in one of three
// ways:
//
//   - HTTP/2, and HTTP/1.x with Options.NoTakeover (or a ResponseWriter that
//     cannot be hijacked): the request's goroutine serves the stream
//     (Subscription.Serve) and writes every message; ServeHTTP returns when
//     the stream has ended, OnClose included, and net/http then ends the
//     response.
//   - HTTP/1.x by default: once the subscription is open, the Handler takes
//     the connection over (http.Hijacker) and writes the status line, the
//     headers and raw SSE events itself (Connection: close, no chunked
//     encoding); ServeHTTP returns at once, and net/http's per-connection
//     buffers (about 12 KB) and goroutine are freed.
//   - On Linux, a taken-over stream whose subscription can be served in
//     steps (internal/fastpath: a hub's streams can, unless their
//     shaping asks CanRead about covered sub-resources) on a TCP or Unix
//     socket takes the fast path: it has no goroutine while idle. Its
//     stream calls a function when an event is ready, which puts it on the
//     ready list of one of GOMAXPROCS writer loops; a loop's goroutine runs
//     only while its list is not empty, and writes each message with one
//     non-blocking write(2) straight to the socket. A write that does not
//     fit in the socket hands that stream to a slow path of its own, a
//     goroutine that writes with the WriteTimeout as deadline while the
//     source queues what comes meanwhile (the hub's bounded queue and
//     overflow policy), until it has caught up; so a client that stops
//     reading never holds a loop, and is cut by its deadline. The slow path
//     registers the socket with Go's poller on the stream's first trip and
//     keeps it, so a client that keeps its window nearly full costs a
//     goroutine per trip, not a dup and a registration. One epoll
//     instance per Handler, watched by one goroutine parked in Go's poller
//     while any fast stream is open, sees clients hang up; one keep-alive
//     sweeper (a timer, every KeepAlive/4) marks the streams that wrote
//     nothing for KeepAlive, which then get ": keep-alive" (so an idle
//     stream's keep-alive comes between KeepAlive and 1.25 KeepAlive after
//     its last write). The stream's end (OnClose, then the connection's
//     close) runs on a goroutine of its own, so a slow OnClose holds no
//     loop.
//   - Elsewhere (other systems, a TLS connection, a stream that cannot be
//     served in steps, such as a Source whose Next blocks), a taken-over
//     stream is served on a goroutine of its own (Subscription.Serve), with
//     a small reader goroutine that sees the client leave; the stream's
//     goroutine ends the stream, then closes the connection and waits for
//     the reader.
//
// Every goroutine of a stream, and of the fast path, has ended when
// Shutdown returns nil. A client has nothing to send after its listen
// request: on a taken-over connection the first byte it sends (with the
// request, or later) ends the stream as Disconnected with cause
// ErrUnexpectedBytes, without reading further.
//
// Every path ends a stream in the same order: the subscription is closed
// (Serve has returned, or the fast path is done); the stream's slot is Done
// (freed and counted in the Server's Stats, then OnClose, a panic in it
// recovered and logged to the Server's Logger); the response ends
// (net/http ends it after ServeHTTP returns, or the taken-over connection
// is closed); and the stream is over for Shutdown. So a client that has seen its stream
// end, and an OnClose hook, both find the slot free and Stats up to date;
// http.Server.Shutdown, which does not track hijacked connections, waits
// for none of this.
//
// Serve adds no worker goroutine for a hub stream (listen.NotifyStream), and
// one for any other Source. Shutdown only cancels the streams' serving
// contexts; each stream ends on its own goroutine.
//
// The stream owns its subscription (it is opened without an owner
// context): however the stream ends (even by a panic, which then goes on
// up to net/http), a subscription still open is closed (reason
// Disconnected, cause listen.ErrOwnerGone), so a subscription never outlives
// its stream. A client disconnect is seen through the stream's serving
// context (the request's end, the reader of a taken-over connection, or the
// epoll instance), so the stream is closed with the precise reason.
// Source.Open, CanRead and the extension hooks get the request's context:
// it ends if the client goes away while the listen is being opened
// (nothing is then written or reported as an error), but not on Shutdown,
// so a listen being opened during a shutdown still gets its acknowledgement
// and completion. Once opened, a subscription keeps no reference to the
// request or its body.
type Handler struct {
	srv  *listen.Server
	opts Options
	// checkOrigin is the Origin and Host check (see CheckOrigin).
	checkOrigin func(r *http.Request) error
	// fast serves taken-over hub streams without a goroutine each (nil
	// where unsupported; see fanout).
	fast *fanout

	mu sync.Mutex
	// live counts the admitted listens that are not over: a stream is over
	// after its slot is Done and its connection is let go (see end).
	live         int
	shuttingDown bool
	// over is closed (under mu) once shutting down and live is zero.
	over chan struct{}
}

// New returns a Handler that serves the listens of srv over Streamable
// HTTP, configured by opts (copied; see Options for the defaults). srv
// holds the listen policy (admission, hooks, Stats, drain): see
// listen.Server. It fails for a nil srv, and, with an error matching
// ErrInvalidOptions that names the field, for a negative limit.
func New(srv *listen.Server, opts Options) (*Handler, error) {
	if srv == nil {
		return nil, errNilServer
	}
	o, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	g, err := newOriginGuard(o.AllowedHosts, o.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	h := &Handler{
		srv:  srv,
		opts: o,
		over: make(chan struct{}),
	}
	h.fast = newFanout(h)
	switch {
	case o.CheckOrigin == nil:
		h.checkOrigin = g.check
	case len(g.hosts) > 0:
		h.checkOrigin = func(r *http.Request) error {
			if err := g.checkHost(r); err != nil {
				return err
			}
			return o.CheckOrigin(r)
		}
	default:
		h.checkOrigin = o.CheckOrigin
	}
	return h, nil
}

// CheckOrigin runs the Handler's Origin and Host check on r: AllowedHosts,
// then Options.CheckOrigin, or by default DefaultCheckOrigin's rules with
// AllowedOrigins trusted. It is what ServeHTTP checks first (403 on an
// error) and what Front applies to every request it routes; use it to
// protect other handlers of the same server the same way.
func (h *Handler) CheckOrigin(r *http.Request) error { return h.checkOrigin(r) }

var errNilServer = errors.New("streamhttp: New needs a listen.Server, got nil")

// Server returns the listen.Server the Handler serves.
func (h *Handler) Server() *listen.Server { return h.srv }

// ServeHTTP serves one listen request in steps, each a method below: decode
// (the request checks and the body), admit (the Server's Slot.Admit), open
// (the subscription, on the Source), serve (the stream, here or on the
// goroutine of a taken-over connection) and end (the one order every
// stream ends in). A request refused by a step is answered with a JSON-RPC
// error response.
//
// Reading the request is bounded by ReadTimeout: the read deadline is set
// first, so it bounds every read of the request, and is cleared as soon as
// the body has been read, before the listen is admitted (on HTTP/1.x
// net/http clears it too, when the body ends), so neither a slow
// Source.Open nor the stream is touched by it.
//
// # Request checks
//
// A request is checked in this order; the first failure is answered with an
// application/json JSON-RPC error response that echoes the request id when
// it could be read, and the Source is never opened:
//
//	method other than POST (GET, DELETE, ...)    405  -32600 "Method not allowed: subscriptions/listen is served over POST", Allow: POST
//	origin check refuses (Origin, Host)          403  -32600 "Forbidden: invalid Origin or Host", no id
//	Authenticate refuses                         401  -32600 "Unauthorized", no id (or AuthError's status, headers)
//	body over MaxBodyBytes                       413  -32600 "Request body too large"
//	body not received within ReadTimeout         408  -32600 "Request timeout: the request body was not received in time"
//	body unreadable (a read error)               400  -32600 "Invalid request: the request body could not be read", no id
//	request ended once its body was read         nothing is written (an HTTP/2 stream reset after its listen, a client gone)
//	malformed JSON / not a JSON-RPC request      400  -32700 "Parse error" / -32600
//	id over MaxIDBytes (256 by default)          400  -32600 "Invalid request: id must be at most 256 bytes", no id
//	Mcp-Method header ≠ body method              400  -32020 "Header mismatch: ..."
//	a notification (no id), not a listen         202  accepted and ignored, no body
//	another method                               404  -32601 "Method not found: <method>"
//	listen without id                            400  -32600
//	bad params (_meta, notifications)            400  -32602, the core's exact messages
//	MCP-Protocol-Version header ≠ _meta version  400  -32020 "Header mismatch: ..."
//	the Server refuses (listen.Slot.Admit)       its error: 404 for an older protocol version, 400 for another
//	                                             unsupported one, 503 while draining and over MaxStreams,
//	                                             429 over MaxStreamsPerKey or a Quota (Retry-After on 503, 429)
//	the open fails (listen.Slot.Open)            500 for -32603, 404 for -32601, else 400; the error as given
//
// The MCP-Protocol-Version and Mcp-Method headers are compared with the body
// when present; Options.RequireHeaders also refuses their absence.
// Last-Event-ID and Mcp-Session-Id are ignored and never echoed: streams are
// not resumable and have no session.
//
// The Server's options are what the listen is narrowed against: the requested filter
// keeps only what the capabilities advertise, and CanRead leaves out the
// resource URIs the caller may not read (they are missing from the
// acknowledgement; it is not an error). The Source gets the request with
// Request.Auth set to what Authenticate returned, and Request.Transport
// (kind "streamable_http", the remote address and the headers).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(h.opts.ReadTimeout))
	req, st, f := h.decode(w, r)
	if f == nil {
		_ = rc.SetReadDeadline(time.Time{})
		f = h.admitAndServe(w, r, st, req)
	}
	if f != nil {
		f.write(h, w, r)
	}
}

// admitAndServe admits, opens and serves st, the stream of the decoded
// listen req. It returns the reply to write when the listen is not
// admitted or does not open (a refusal), or noReply when its client has
// already left (see gone); nothing is left of it then.
func (h *Handler) admitAndServe(w http.ResponseWriter, r *http.Request, st *stream, req *listen.Request) *reply {
	if gone(r) {
		st.slot.Done(nil)
		st.stop()
		return noReply()
	}
	if err := st.slot.Admit(r.Context(), req); err != nil {
		st.stop()
		return h.refusal(req.ID, err)
	}
	h.mu.Lock()
	h.live++
	h.mu.Unlock()
	// A panic from here on ends the stream as if its request had ended,
	// then goes on up to net/http.
	defer h.abandonOnPanic(st)
	if f := h.open(st, r, req); f != nil {
		h.end(st, nil, nil)
		return f
	}
	h.serve(st, w, r)
	return nil
}

// refusal is the reply to a listen the Server refused (Admit, Open):
// already reported to OnRefuse.
func (h *Handler) refusal(id jsonrpc.ID, err error) *reply {
	status, after := refusalStatus(err, h.srv.Options().RetryAfter)
	f := refuse(status, id, jsonrpc.AsError(err, "Internal error"))
	f.reported = true
	if after > 0 {
		f.header = http.Header{"Retry-After": {strconv.FormatInt(int64((after+time.Second-1)/time.Second), 10)}}
	}
	return f
}

// gone reports whether r's client has already left: its request ended
// after its body had arrived. On HTTP/2 that is a stream the client reset
// (RST_STREAM) after sending its listen, which costs it a few bytes: such a
// listen is neither admitted nor opened, and nothing is written (net/http
// keeps a reset stream's body readable, so without this check the whole
// open would run, and the acknowledgement be shaped, for nobody).
func gone(r *http.Request) bool { return r.Context().Err() != nil }

// open opens st's subscription for req. The request's context reaches
// Source.Open, CanRead and the extension hooks, so a slow open sees the
// client leave; st owns the subscription afterwards (see stream.stop). Once
// open, neither the request nor its body is referenced: the subscription
// kept copies of what it serves.
func (h *Handler) open(st *stream, r *http.Request, req *listen.Request) *reply {
	if gone(r) {
		return noReply()
	}
	sub, err := st.slot.Open(r.Context(), context.Background(), req)
	if err != nil {
		if r.Context().Err() != nil {
			// The client left while the source was opening: there is
			// nobody to answer, and it is not a server error.
			return noReply()
		}
		return h.refusal(req.ID, err)
	}
	st.sub = sub
	return nil
}

// serve serves the open stream: an HTTP/1.x
// stream, once its connection is taken over, on the Handler's fanout (on
// Linux, a stream served in steps: no goroutine while idle; see
// serveTakenOver) or on a goroutine of its own (this goroutine then
// returns at once); any other here.
func (h *Handler) serve(st *stream, w http.ResponseWriter, r *http.Request) {
	if !h.opts.NoTakeover && r.ProtoMajor == 1 {
		if conn, head, early, ok := h.takeover(w, r); ok {
			h.serveTakenOver(st, r, conn, head, early)
			return
		}
	}
	reason := h.serveInline(st, w, r)
	h.end(st, reason, nil)
}

// serveInline serves st inside net/http: the response is the SSE stream.
// The request's end (the client leaving) ends st's serving context.
func (h *Handler) serveInline(st *stream, w http.ResponseWriter, r *http.Request) error {
	st.serving(r, nil)
	// The callback runs (in a goroutine of the runtime's) only if the
	// request ends while the stream is served here; it only cancels
	// st.ctx, so one that stop finds already started is not waited for.
	stop := context.AfterFunc(r.Context(), func() {
		st.cancel(listen.Disconnected(context.Cause(r.Context())))
	})
	defer stop()

	hdr := w.Header()
	setStreamHeaders(hdr)
	hdr.Del("Content-Length")
	if r.ProtoMajor == 1 {
		// A listen holds its connection for its whole life; do not reuse it
		// afterwards (its write deadline would outlive the stream).
		hdr.Set("Connection", "close")
	}
	sw := newSSEWriter(w, h.opts.WriteTimeout, r.ProtoMajor == 1)
	sink := listen.Sink{Write: sw.message, KeepAlive: h.opts.KeepAlive, Ping: h.pinger(st.sub, sw.ping)}
	reason := st.sub.Serve(st.ctx, sink)
	sw.finish()
	return reason
}

// setStreamHeaders sets the headers of a stream's 200 response.
func setStreamHeaders(hdr http.Header) {
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
}

// end ends st, whose subscription has ended with reason (or was never
// opened: no reason). Every path ends a stream in this order:
//
//  1. its slot is Done: freed and counted (Stats), then OnClose runs, if
//     it was opened (see listen.Slot.Done);
//  2. letGo, if not nil, lets go of a taken-over connection (closes it and
//     waits for its reader); inside net/http, the response ends when
//     ServeHTTP returns, just after end;
//  3. the stream is over: Shutdown stops waiting for it.
func (h *Handler) end(st *stream, reason error, letGo func()) {
	st.stop()
	st.slot.Done(reason)
	if letGo != nil {
		letGo()
	}
	h.mu.Lock()
	h.live--
	if h.shuttingDown && h.live == 0 {
		close(h.over)
	}
	h.mu.Unlock()
}

// abandonOnPanic, deferred while st is served on the request's goroutine,
// ends st when a panic unwinds it, then lets the
// panic go on: st.stop closes the subscription (reason Disconnected, cause
// listen.ErrOwnerGone), and st ends as usual.
func (h *Handler) abandonOnPanic(st *stream) {
	v := recover()
	if v == nil {
		return
	}
	st.stop()
	var reason error
	if st.sub != nil {
		<-st.sub.Closed()
		reason = st.sub.CloseReason()
	}
	h.end(st, reason, nil)
	panic(v)
}

// Shutdown drains the Handler's Server (listen.Server.Shutdown: new
// listens are refused with 503 and Retry-After, every open stream gets its
// completion, paced over listen.Options.DrainWindow if set) and waits until
// every stream of this Handler, on every path (HTTP/2, NoTakeover and
// taken-over HTTP/1.x connections), has written its completion and ended,
// OnClose included. If ctx ends first, Shutdown returns ctx's error and the
// streams go on ending on their own, each within one write timeout of its
// completion write.
//
// Shutdown is idempotent: a later call waits again. The Handler is not
// reusable after it. http.Server.Shutdown does not wait for streams (it
// does not even track a taken-over connection): call Shutdown first (see
// the package documentation, "Shutting down").
func (h *Handler) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if !h.shuttingDown {
		h.shuttingDown = true
		if h.live == 0 {
			close(h.over)
		}
	}
	h.mu.Unlock()
	if err := h.srv.Shutdown(ctx); err != nil {
		return err
	}
	select {
	case <-h.over:
	case <-ctx.Done():
		return ctx.Err()
	}
	if h.fast != nil {
		return h.fast.wait(ctx) // its goroutines end with its last stream
	}
	return nil
}

// stream is one admitted listen, from its admission to its end (see
// Handler.end). It is created on the request's goroutine, and served there
// or, once its connection is taken over, on a goroutine of its own or on
// the Handler's fanout (Linux, a hub stream: see internal/fastpath).
type stream struct {
	// ctx is the serving context given to Subscription.Serve, made when
	// the stream is served on a path of its own (serveInline, or
	// serveTakenOver for takenOver.run; see serving): it keeps the
	// request's context values, not its cancellation. It ends through
	// cancel, with the cause Serve acts on:
	// listen.ErrShutdown (Shutdown: the completion is written), a
	// Disconnected reason (the client left: the request ended, or a
	// taken-over connection's reader saw it close), or nil once the stream
	// has ended. A fast stream has no context (see fanout.start): its
	// transport's end is fastpath.Stream.Cancel.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// sub is the subscription, once opened. The stream owns it: it is
	// opened without an owner context (listen.Slot.Open with context.Background() as the owner),
	// and stop closes it if it is still open, however the stream ends (even
	// by a panic in a hook), so a subscription never outlives its stream. A
	// client disconnect or a failed write ends ctx instead, so that Serve
	// closes the subscription with the precise reason.
	sub *listen.Subscription
	// slot is the listen's place on the Server, from Begin (once its
	// request is authenticated) to Done (see Handler.end).
	slot *listen.Slot
}

// serving gives st its serving context: r's context values (CanRead gets
// them for a covered sub-resource), not its cancellation, since the stream
// may outlive its request (see takeover). An early end (not nil) ends it at
// once.
func (st *stream) serving(r *http.Request, early error) {
	st.ctx, st.cancel = context.WithCancelCause(context.WithoutCancel(r.Context()))
	if early != nil {
		st.cancel(early)
	}
}

// stop ends st: its subscription, if still open, is closed (reason
// Disconnected with cause listen.ErrOwnerGone; normally it has been closed
// with its own reason already), and its context ends.
func (st *stream) stop() {
	if st.sub != nil {
		st.sub.Close(listen.Disconnected(listen.ErrOwnerGone))
	}
	if st.cancel != nil { // nil for a fast stream, which has no context
		st.cancel(nil)
	}
}

// Defaults of Options. A zero field of Options means its default.
const (
	// defaultMaxBodyBytes is the default Options.MaxBodyBytes (256 KiB):
	// twice the largest filter the core accepts by default
	// (listen.Options.MaxFilterBytes, 128 KiB), room for the rest of a
	// listen request. A real listen is a few hundred bytes.
	defaultMaxBodyBytes = 256 << 10
	// defaultReadTimeout is the default Options.ReadTimeout.
	defaultReadTimeout = 10 * time.Second
	// defaultKeepAlive is the default Options.KeepAlive.
	defaultKeepAlive = 15 * time.Second
	// defaultWriteTimeout is the default Options.WriteTimeout.
	defaultWriteTimeout = 10 * time.Second
)

// Options configure a Handler. The zero value means every default. New
// copies them (the capabilities map included): changing an Options value
// after New has no effect on the Handler. A negative limit is an error (see
// New).
//
// # Limits and defaults
//
//	MaxBodyBytes      256 KiB  request body; 413 over it
//	ReadTimeout       10 s     reading the request, up to the end of its body; 408 over it
//	KeepAlive         15 s     idle time before a keep-alive comment
//	WriteTimeout      10 s     per write (an event or keep-alive and its flush); idle
//	                           streams are not affected
//
// A zero Options field means its default; a negative one is an error of New.
// The read deadline, like the write deadline, is set with
// http.ResponseController. It is set when ServeHTTP starts and cleared once
// the body has been read, so it bounds an incomplete request (a slow body,
// one byte short, chunked without end) and, on HTTP/1.x, net/http's
// discarding of the body of a request refused before its body was read,
// never a stream. The request line and headers are the http.Server's to
// bound: set its ReadHeaderTimeout, IdleTimeout and MaxHeaderBytes (MCP
// requests need a few KiB of headers), not its ReadTimeout, which would
// also cut every stream served inside net/http.
// The write deadline is set with http.ResponseController; behind a
// middleware whose ResponseWriter hides SetWriteDeadline (no Unwrap method)
// it has no effect, and a client that stops reading then holds its own
// handler goroutine, and nothing else, until its connection breaks. The
// per-write deadline replaces http.Server.WriteTimeout for a stream from its
// first write on (on HTTP/2, a server WriteTimeout that expires before that
// first write, during a slow Source.Open, still ends the stream).
//
// # HTTP/2
//
// Over HTTP/2 (TLS, or h2c with http.Server.Protocols'
// SetUnencryptedHTTP2) each listen holds one stream of its connection and
// its handler goroutine for its whole life: measured, 1 goroutine and about
// 10.5 KiB of heap per idle listen, against none and 1.5 KiB for a
// taken-over HTTP/1.1 hub stream on Linux. A stream the client resets
// right after sending its listen (a rapid reset) is neither parsed, nor
// admitted, nor opened once the reset has reached the server: nothing is
// written for it. net/http bounds the rest: at most MaxConcurrentStreams
// handlers run per connection, and it closes a connection that queues
// more than four times that many. Set http.Server.HTTP2 for listens:
//
//	srv.HTTP2 = &http.HTTP2Config{
//		MaxConcurrentStreams: 250,              // listens (and other requests) per connection; net/http's default
//		WriteByteTimeout:     10 * time.Second, // close a connection whose client stopped reading (WriteTimeout cuts one stream)
//		SendPingTimeout:      30 * time.Second, // ping a silent connection,
//		PingTimeout:          15 * time.Second, // and close it if unanswered
//	}
//
// and bound one client's listens across its connections with
// listen.Options.MaxStreamsPerKey. (golang.org/x/net/http2.Server has the
// same fields.)
// The other HTTP2Config defaults fit listens: a listen's body is at most
// MaxBodyBytes, and net/http's receive windows bound what a connection
// buffers.
type Options struct {
	// MaxBodyBytes bounds the request body. A larger body is refused with 413
	// and -32600 "Request body too large". Zero means defaultMaxBodyBytes
	// (256 KiB); a negative value is an error.
	MaxBodyBytes int64

	// ReadTimeout bounds the time to read a request: from the moment
	// ServeHTTP starts (the headers have been read) to the end of its body.
	// It is set with http.ResponseController.SetReadDeadline and cleared
	// once the body has been read, so it never touches an open stream. A
	// body that has not fully arrived by then (sent slowly, one byte short of
	// its Content-Length, or chunked without end) is refused with 408 and
	// -32600 "Request timeout: the request body was not received in time"
	// (on HTTP/1.x its connection is then closed; on HTTP/2 its stream
	// ends). On HTTP/1.x a request refused before its body is read (405,
	// 403, 401) keeps the deadline, which also bounds net/http's discarding
	// of the unread body. Zero means
	// defaultReadTimeout (10 s); a negative value is an error. It has no
	// effect on a ResponseWriter that does not support read deadlines (see
	// http.ResponseController). Unlike http.Server.ReadTimeout, which would
	// also cut every stream served inside net/http, it ends with the read.
	// The headers are the http.Server's to bound (ReadHeaderTimeout,
	// MaxHeaderBytes).
	ReadTimeout time.Duration

	// KeepAlive is how long a stream may stay idle before the Handler writes
	// an SSE comment (": keep-alive") to keep proxies from closing it. Zero
	// means defaultKeepAlive (15 s); a negative value is an error.
	KeepAlive time.Duration

	// WriteTimeout bounds every write to a stream (one SSE event or
	// keep-alive, including its flush), through
	// http.ResponseController.SetWriteDeadline (or the connection's, once
	// taken over). A client that stops reading is cut off when it expires:
	// its subscription is closed as Disconnected and nothing else waits for
	// it. Idle streams are not affected: on HTTP/2 each write sets and clears
	// its deadline; on HTTP/1.x, to save work on busy streams, the deadline
	// is refreshed only when less than half of it is left (so a write gets
	// between half and all of WriteTimeout) and is renewed before any write
	// once expired. Zero means defaultWriteTimeout (10 s); a negative value
	// is an error. It has no effect on a ResponseWriter that does not
	// support write deadlines (see http.ResponseController).
	WriteTimeout time.Duration

	// CheckOrigin validates the request's origin. A non-nil error refuses it
	// with 403 and a JSON-RPC error without id (-32600 "Forbidden: invalid
	// Origin or Host"). Nil means DefaultCheckOrigin's rules, with
	// AllowedHosts and AllowedOrigins applied: DNS-rebinding protection and
	// the cross-origin checks. Front applies the same check to every request
	// it routes (see Handler.CheckOrigin).
	CheckOrigin func(r *http.Request) error

	// AllowedHosts, if not empty, lists the Host header values the server
	// answers to, as "name" (any port, or none) or "name:port", IPv6
	// addresses in brackets ("[::1]:8080"); names are compared without
	// regard to case. A request naming another Host is refused with 403,
	// whatever its Origin: the protection against DNS rebinding for a server
	// that listens on a non-loopback address, where the default check
	// (which refuses only a non-loopback Host on a loopback address) cannot
	// tell a rebinding attack from a legitimate name. With AllowedHosts the
	// loopback rule is replaced by the list. It applies before CheckOrigin,
	// when that is set too. The TypeScript and Python SDKs have the same
	// option.
	AllowedHosts []string

	// AllowedOrigins lists the origins ("https://app.example", scheme, host
	// and port, no path) whose cross-origin browser requests are accepted;
	// a same-origin request is always accepted. Every other request with an
	// Origin, or with a Sec-Fetch-Site other than same-origin or none, is
	// refused with 403. It is part of the default check: setting it with
	// CheckOrigin is an error of New.
	AllowedOrigins []string

	// Authenticate, if set, authenticates every listen before its body is
	// read. Its result is handed to the Source as listen.Request.Auth. An
	// error refuses the request with 401 and -32600 "Unauthorized"; return
	// an *AuthError to choose the status (such as 403) and add headers
	// (such as WWW-Authenticate).
	Authenticate func(r *http.Request) (auth any, err error)

	// Expiry, if set, returns when the stream of a listen must end, given
	// what Authenticate returned for it (nil without Authenticate): the
	// expiry of the credential it was opened with, such as a bearer token's
	// exp. The zero time means never. It is called once per listen, right
	// after Authenticate, and must be safe for concurrent use. A listen
	// whose expiry has already passed is refused like a failed
	// Authenticate (401, -32600 "Unauthorized", cause listen.ErrExpired); an
	// admitted stream is ended when its expiry passes (its subscription's
	// listen.Request.Expiry): it is sent the early ending of an expired
	// credential (by default the completion result with the reason
	// "expired"; see listen.Options.EndWithError), then closed with reason
	// ErrExpired (listen.ErrExpired), so its client re-listens with a fresh
	// credential. Each such stream holds one runtime timer, and no
	// goroutine, until then.
	Expiry func(r *http.Request, auth any) time.Time

	// RequireHeaders makes the MCP-Protocol-Version and Mcp-Method headers
	// mandatory, as MCP 2026-07-28 requires of clients: a listen without one
	// of them is refused with 400 and -32020. By default a missing header is
	// accepted; a present one must always match the body.
	RequireHeaders bool

	// NoTakeover keeps HTTP/1.x streams inside net/http. By default, once a
	// listen is open, the Handler takes over its HTTP/1.x connection
	// (http.Hijacker) and writes the response itself: the status line and
	// headers, then raw SSE events, the body ending when the connection
	// closes (Connection: close, no chunked encoding). The request's
	// goroutine and net/http's per-connection buffers (about 12 KB) are then
	// freed for the life of the stream; the stream runs on the Handler's
	// goroutines (on Linux, a hub stream has none while idle: see the
	// Handler, "Goroutines and ownership"). HTTP/2 streams,
	// and ResponseWriters that cannot be hijacked, always stay inside
	// net/http.
	NoTakeover bool

	// OnKeepAlive, if set, is called after each keep-alive comment was
	// written to a stream (see KeepAlive), on the goroutine that serves the
	// stream: on Linux, for a taken-over hub stream, that is a writer loop
	// shared by many streams, so it must return quickly. A panic in it is
	// recovered and ignored.
	OnKeepAlive func(sub *listen.Subscription)
}

// AuthError lets Options.Authenticate choose how a refused request is
// answered.
type AuthError struct {
	// Status is the HTTP status; zero means 401 Unauthorized.
	Status int
	// Header holds headers to add to the response, such as
	// WWW-Authenticate.
	Header http.Header
	// Err is the underlying error, for OnRefuse and logs; it is not sent.
	Err error
}

// Error describes the refusal for logs; the client is sent only
// "Unauthorized".
func (e *AuthError) Error() string {
	if e.Err == nil {
		return "streamhttp: authentication failed"
	}
	return "streamhttp: authentication failed: " + e.Err.Error()
}

// Unwrap returns Err.
func (e *AuthError) Unwrap() error { return e.Err }

// ErrInvalidOptions matches every error New returns for invalid Options.
var ErrInvalidOptions = errors.New("streamhttp: invalid options")

// withDefaults returns a copy of o with defaults filled in and the mutable
// parts (capabilities, version list) copied, or an error matching
// ErrInvalidOptions that names the first invalid field.
func withDefaults(o Options) (Options, error) {
	for _, f := range []struct {
		name     string
		negative bool
		value    any
	}{
		{"MaxBodyBytes", o.MaxBodyBytes < 0, o.MaxBodyBytes},
		{"ReadTimeout", o.ReadTimeout < 0, o.ReadTimeout},
		{"KeepAlive", o.KeepAlive < 0, o.KeepAlive},
		{"WriteTimeout", o.WriteTimeout < 0, o.WriteTimeout},
	} {
		if f.negative {
			return Options{}, fmt.Errorf("%w: %s must not be negative (zero means the default), got %v", ErrInvalidOptions, f.name, f.value)
		}
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = defaultReadTimeout
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = defaultKeepAlive
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = defaultWriteTimeout
	}
	if o.CheckOrigin != nil && len(o.AllowedOrigins) > 0 {
		return Options{}, fmt.Errorf("%w: AllowedOrigins is part of the default origin check: it cannot be combined with CheckOrigin", ErrInvalidOptions)
	}
	o.AllowedHosts = slices.Clone(o.AllowedHosts)
	o.AllowedOrigins = slices.Clone(o.AllowedOrigins)
	return o, nil
}

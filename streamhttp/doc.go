// Package streamhttp serves MCP 2026-07-28 subscriptions/listen over
// Streamable HTTP: a listen is one POST whose response is a long-lived SSE
// stream, driven by the core's listen.Subscription.Serve.
//
//	h, err := streamhttp.New(src, streamhttp.Options{
//		Listen: listen.Options{Capabilities: caps, ServerInfo: info},
//	})
//	srv := &http.Server{Addr: addr, Handler: h}
//	go srv.ListenAndServe()
//	...
//	h.Shutdown(ctx)   // every open stream gets its completion result
//	srv.Shutdown(ctx) // then the HTTP server stops
//
// To add listens to an existing MCP server, such as one built with the
// official go-sdk, put Front in front of it (see "Next to an existing
// server" below).
//
// # Request checks
//
// A request is checked in this order; the first failure is answered with an
// application/json JSON-RPC error response that echoes the request id when
// it could be read, and the Source is never opened:
//
//	method other than POST (GET, DELETE, ...)    405  -32600, Allow: POST
//	origin check refuses (Origin, Host)          403  -32600 "Forbidden: invalid Origin or Host", no id
//	Authenticate refuses                         401  -32600 "Unauthorized", no id (or AuthError's status, headers)
//	body over MaxBodyBytes                       413  -32600 "Request body too large"
//	body not received within ReadTimeout         408  -32600 "Request timeout: the request body was not received in time"
//	request ended once its body was read         nothing is written (an HTTP/2 stream reset after its listen, a client gone)
//	malformed JSON / not a JSON-RPC request      400  -32700 "Parse error" / -32600
//	Mcp-Method header ≠ body method              400  -32020 "Header mismatch: ..."
//	a notification (no id), not a listen         202  accepted and ignored, no body
//	another method                               404  -32601 "Method not found: <method>"
//	listen without id                            400  -32600
//	bad params (_meta, notifications)            400  -32602, the core's exact messages (listen.Msg...)
//	MCP-Protocol-Version header ≠ _meta version  400  -32020 "Header mismatch: ..."
//	protocol version older than 2026-07-28       404  -32601 "Method not found: subscriptions/listen"
//	any other unsupported protocol version       400  -32022 "Unsupported protocol version", data.supported/requested
//	shutting down                                503  -32603 "Server is shutting down"
//	over MaxStreamsPerKey (one client's share)   429  -32603 "Too many subscriptions open for this client", Retry-After
//	over MaxStreams                              503  -32603 "Server subscription capacity exhausted", Retry-After
//	listen.Open fails                            500 for -32603, 404 for -32601, else 400; the error as given
//
// The MCP-Protocol-Version and Mcp-Method headers are compared with the body
// when present; Options.RequireHeaders also refuses their absence.
// Last-Event-ID and Mcp-Session-Id are ignored and never echoed: streams are
// not resumable and have no session.
//
// Options.Listen is what listen.Open narrows against: the requested filter
// keeps only what the capabilities advertise, and CanRead leaves out the
// resource URIs the caller may not read (they are missing from the
// acknowledgement; it is not an error). The Source gets the request with
// Request.Auth set to what Authenticate returned, and Request.Transport
// (kind "streamable_http", the remote address and the headers).
//
// # The stream
//
// A listen that opens is answered 200 with Content-Type text/event-stream,
// Cache-Control no-cache, X-Accel-Buffering no and no Content-Length (on
// HTTP/1.1 also Connection: close: a listen holds its connection for its
// whole life). Each JSON-RPC message is one SSE event, flushed at once:
//
//	event: message
//	data: <the message on one line>
//
// The acknowledgement comes first, then the notifications, then at most one
// terminal message. After KeepAlive without a write the Handler sends the
// comment ": keep-alive".
//
// # Endings
//
//   - The source ends its stream: the completion result (resultType
//     "complete"), then the response ends; reason listen.ErrComplete.
//   - The source fails: the error -32603 "Subscription source failed", then
//     the response ends; reason Failed.
//   - The client disconnects (closes the response or the connection): this
//     is the cancellation of the listen; nothing more is written, there is
//     no result; reason Disconnected.
//   - A write fails or misses its WriteTimeout (a client that stopped
//     reading): as a disconnect, reason Disconnected with the write error
//     as cause (os.ErrDeadlineExceeded for a deadline).
//   - Shutdown: every open stream gets its completion result, then its
//     response ends; reason listen.ErrShutdown. New listens get 503.
//     Shutdown waits for every stream to end, or for its ctx.
//   - EndStreams: the streams of the principals it selects get their
//     completion result, then their responses end; reason ErrEnded (which
//     also matches listen.ErrShutdown). See "Long-lived trust" below.
//   - Options.Expiry passes (the stream's credential expired): the
//     completion result, then the response ends; reason ErrExpired (which
//     also matches listen.ErrShutdown).
//
// OnOpen and OnClose observe every opened subscription, OnKeepAlive every
// keep-alive written, OnError every refused request; Stats counts them.
//
// # Long-lived trust
//
// Authenticate runs once per listen, when it is opened, and a stream may
// then live for days: longer than the token it was opened with, or the
// grant behind it. To end the streams of a principal whose credential was
// revoked, first make Authenticate refuse it, then call
// Handler.EndStreams with a match that selects it (match gets what
// Authenticate returned, as listen.Request.Auth):
//
//	revoked.Store(user, true) // Authenticate refuses user from now on
//	listens.EndStreams(func(auth any) bool { return auth.(*Principal).User == user })
//
// For credentials that expire, set Options.Expiry (gosdk.NewHandler sets
// it to the go-sdk token's expiry): each stream then ends when its
// credential expires. Each stream ended gets its completion result, so its
// client may open a new listen at once, with a fresh credential that
// Authenticate judges. EndStreams also reaches a listen
// whose body was still being read when it was called. On stdio the whole
// connection is one principal: see the stdio package.
//
// # Fair shares
//
// MaxStreams bounds the streams of the whole Handler; MaxStreamsPerKey, off
// by default, bounds those of one client, so that one client cannot take
// every slot. The key is StreamKey's (by default RemoteIP, the client's IP
// address; key by the authenticated principal behind a reverse proxy). Both
// refusals happen before the Source is opened and carry Retry-After
// (RetryAfter, 5 s by default).
//
// # Limits and defaults
//
//	MaxStreams        1024     concurrent listens; 503 over it, checked before the Source is opened
//	MaxStreamsPerKey  off      concurrent listens per StreamKey; 429 over it
//	RetryAfter        5 s      Retry-After of the 503 and 429 capacity refusals
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
// MaxStreamsPerKey. (golang.org/x/net/http2.Server has the same fields.)
// The other HTTP2Config defaults fit listens: a listen's body is at most
// MaxBodyBytes, and net/http's receive windows bound what a connection
// buffers.
//
// # Goroutines and ownership
//
// ServeHTTP runs a listen in named steps: decode (the request checks above),
// admit (a slot under MaxStreams), open (listen.OpenOwned on the Source),
// serve, end. The first three, and OnOpen, run on the net/http goroutine of
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
//     steps (listen.Subscription.Poller: a hub's streams can, unless their
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
// (Serve has returned, or the Poller is done); the stream's slot is freed
// and Stats count it closed; OnClose runs (a panic in it is recovered and
// logged to the http.Server's ErrorLog); the response ends (net/http ends
// it after ServeHTTP returns, or the taken-over connection is closed); and
// the stream is over for Shutdown. So a client that has seen its stream
// end, and an OnClose hook, both find the slot free and Stats up to date;
// http.Server.Shutdown, which does not track hijacked connections, waits
// for none of this.
//
// Serve adds no worker goroutine for a hub stream (listen.PollStream), and
// one for any other Source. Shutdown only cancels the streams' serving
// contexts; each stream ends on its own goroutine.
//
// The stream owns its subscription (it is opened without an owner
// context): however the stream ends (even by a panic in a hook, which then
// goes on up to net/http), a subscription still open is closed (reason
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
//
// # Shutting down
//
// Call Handler.Shutdown, then http.Server.Shutdown, with one deadline:
//
//	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
//	defer cancel()
//	err := listens.Shutdown(ctx) // every open stream gets its completion result
//	err = errors.Join(err, srv.Shutdown(ctx))
//
// Handler.Shutdown refuses new listens (503), sends every open stream its
// completion and returns once every stream has ended, on every path.
// http.Server.Shutdown alone would not do: it waits for no taken-over
// connection, so a process that exits after it cuts those streams before
// their completion. (Registering a function with RegisterOnShutdown does not
// help either: http.Server.Shutdown does not wait for it.)
//
// # Next to an existing server
//
// Front(listens, other) sends every subscriptions/listen POST (by its
// Mcp-Method header or by its body) to listens and every other request to
// other, such as the go-sdk's StreamableHTTPHandler, so that a go-sdk server
// gains this listen engine without any change to it:
//
//	caps := &mcp.ServerCapabilities{ // tools, prompts and resources all set: nothing inferred
//		Tools:     &mcp.ToolCapabilities{ListChanged: true},
//		Prompts:   &mcp.PromptCapabilities{},
//		Resources: &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true},
//	}
//	server := mcp.NewServer(impl, &mcp.ServerOptions{Capabilities: caps})
//	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
//		&mcp.StreamableHTTPOptions{Stateless: true}) // the go-sdk serves 2026-07-28 statelessly
//
//	lc, err := listen.CapabilitiesFrom(caps) // what server/discover advertises
//	if err != nil { ... }
//	listens, err := streamhttp.New(src, streamhttp.Options{
//		Listen: listen.Options{Capabilities: lc, ServerInfo: listen.Implementation{Name: impl.Name, Version: impl.Version}},
//	})
//	http.Handle("/mcp", streamhttp.Front(listens, sdk))
//
// Front protects every request it routes as the Handler protects a listen
// (MCP: servers MUST validate the Origin header of every incoming request):
// a request for other that the Handler's CheckOrigin refuses (a
// cross-origin browser request, a DNS-rebinding Host, a Host outside
// AllowedHosts) is answered 403 and never reaches other; its body is read
// within MaxBodyBytes (DefaultFrontMaxBodyBytes, 512 KiB; 413) and
// ReadTimeout (408), with no deadline left once it has been read. FrontWith
// chooses another check, or none (FrontOptions.Unchecked) when other checks
// origins itself, and other limits.
//
// # DNS rebinding and allowed hosts
//
// On a loopback address, the default check refuses a Host that is not a
// loopback name, which defeats DNS rebinding. On any other address it
// cannot tell a rebinding attacker's name from the server's own: list the
// names the server answers to in Options.AllowedHosts (and, for browser
// clients served from another origin, their origins in
// Options.AllowedOrigins). A server that binds a non-loopback address
// without AllowedHosts answers any Host.
//
// The capabilities the Handler narrows against must be exactly those the
// server advertises in server/discover: a listen is acknowledged only for
// what the server claims to support. CapabilitiesFrom turns any capabilities
// value (the go-sdk's *mcp.ServerCapabilities, a map, the raw JSON of a
// discover result) into listen.Capabilities. With the go-sdk (v1.8.0), set
// Tools, Prompts and Resources of ServerOptions.Capabilities explicitly and
// pass the same value: a group left nil is inferred from the registered
// features and is not in that struct, and a SubscribeHandler forces
// resources.subscribe to true. Or read the capabilities back from a
// server/discover result.
package streamhttp
